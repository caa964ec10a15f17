/* sharpness.h: sharpness diagnostics: the largest eigenvalue of the training loss's Hessian H
 * on a fixed batch (the sharpness) and of P^-1 H with P the optimizer's diagonal
 * preconditioner (the preconditioned sharpness), as in Cohen et al. 2022, "Adaptive Gradient
 * Methods at the Edge of Stability" (arXiv 2207.14484): full-batch Adam's preconditioned
 * sharpness rises to about its stability threshold 38/lr and stays there.
 *
 * Three pieces, each usable alone:
 *   tb_lanczos            the extreme eigenvalues of any symmetric operator (Lanczos with full
 *                         reorthogonalisation), the largest AND the smallest, so that a
 *                         spectrum dominated by a negative eigenvalue shows (power iteration
 *                         finds the largest |lambda| and cannot tell its sign);
 *   tb_hvp_*              Hessian-vector products of a loss whose gradient a callback
 *                         computes, by central differences of gradients;
 *   tb_sharpness_measure  both sharpnesses and the optimizer's stability threshold
 *                         (tb_optimizer_stability_threshold) at the current parameters.
 *
 *     tb_sharpness s;
 *     tb_sharpness_config c = {.iterations = 20, .preconditioned = true};
 *     st = tb_sharpness_measure(params, my_gradient, my_batch, opt, lr_factor, &c, &s, &err);
 *     // s.lambda_max, s.pre_max, s.threshold; params and gradients as they were
 *
 * Cost: each Hessian-vector product is two gradient evaluations, so one quantity costs 2K for
 * K Lanczos steps and both 4K (2K when P = 1: the two are then one). Memory: K + 1 vectors of
 * the model's size (float) on the host, and five more. Nothing here prints. */
#ifndef TRAINBENCH_SHARPNESS_H
#define TRAINBENCH_SHARPNESS_H

#include <stdbool.h>
#include <stdint.h>

#include "trainbench/nn.h"
#include "trainbench/optim.h"
#include "trainbench/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Lanczos ---------------------------------------------------------------------------- */
/* A symmetric linear operator on R^n: y = A x (x and y host arrays of n floats, never the same
 * array). Fails with its own error, which ends the caller's computation. */
typedef tb_status (*tb_linop_fn)(void *user, const float *x, float *y, tb_error *err);

#define TB_LANCZOS_MAX_ITERS 256

typedef struct tb_lanczos_result {
    /* Steps taken: the iterations asked for, or fewer when the Krylov space became invariant
     * (its Ritz values are then eigenvalues) or the dimension n was reached. */
    int iterations;
    double ritz[TB_LANCZOS_MAX_ITERS];     /* the Ritz values, largest first */
    /* per Ritz value, |beta_k s_k|: the norm of A y - theta y for its unit Ritz vector y, a
     * bound on the distance from the Ritz value theta to an eigenvalue of A */
    double residual[TB_LANCZOS_MAX_ITERS];
} tb_lanczos_result;

/* K = iterations steps of Lanczos on op from a start vector of normal values drawn from
 * (seed, a stream of its own), each new vector orthogonalised against all earlier ones (twice:
 * full reorthogonalisation, so no ghost copies of converged eigenvalues appear). Vectors are
 * kept in float and their products summed in double; the K x K tridiagonal is diagonalised by
 * LAPACK (dstev). ritz[0] approaches the largest eigenvalue, ritz[iterations - 1] the smallest.
 * Fails with TB_ERR_INVALID for n < 1, iterations outside 1..TB_LANCZOS_MAX_ITERS or a NULL
 * op or out; TB_ERR_NUMERIC when the operator returns values that are not finite. */
tb_status tb_lanczos(int64_t n, tb_linop_fn op, void *user, int iterations, uint64_t seed,
                     tb_lanczos_result *out, tb_error *err);

/* ---- Hessian-vector products by central differences -------------------------------------- */
/* Computes the gradient of the loss at the parameters' current values into their gradient
 * buffers (tb_params_grads), replacing what was there. It must be a deterministic function of
 * the parameters: a fixed batch, batch norm with the batch's statistics but no update of the
 * running averages (tb_tape_set_freeze_running_stats), the same dropout masks every call. */
typedef tb_status (*tb_grad_fn)(void *user, tb_error *err);

/* The default of r / max(||theta||, 1) (see tb_hvp_begin). */
#define TB_HVP_DEFAULT_SCALE 1e-3

typedef struct tb_hvp tb_hvp;

/* Starts Hessian-vector products at the parameters' current values theta: keeps a copy of
 * them and of the gradients, and fixes the step r = fd_scale * max(||theta||, 1) (0:
 * TB_HVP_DEFAULT_SCALE), a step relative to the parameters' own size: float32 gradients carry
 * rounding of about 1e-7 of their terms, divided by 2r in a difference, and a step of a
 * thousandth of the parameters' norm keeps that far below the curvature while the change it
 * makes to every value stays small (a tenth of a percent of the norm, spread over all of them).
 * Vectors are over the trainable values only (tb_params_trainable of them, the parameters in
 * order, the flat buffers' padding left out). TB_ERR_INVALID for NULL arguments, a negative or
 * non-finite fd_scale, or parameters that are not finalized; TB_ERR_NUMERIC when theta is not
 * finite. */
tb_status tb_hvp_begin(tb_params *params, tb_grad_fn grad, void *user, double fd_scale,
                       tb_hvp **out, tb_error *err);
/* hv = H v ~ ||v|| (g(theta + r u) - g(theta - r u)) / (2 r), u = v / ||v|| (v = 0: hv = 0,
 * no gradient evaluated): two gradient evaluations, then the parameters are theta again, bit
 * for bit. TB_ERR_NUMERIC when a gradient is not finite; the callback's errors are returned
 * as they are. */
tb_status tb_hvp_apply(tb_hvp *h, const float *v, float *hv, tb_error *err);
/* Sets the parameters and their gradients back to the values tb_hvp_begin found, bit for bit,
 * and frees h (NULL: nothing). */
void tb_hvp_end(tb_hvp *h);
int64_t tb_hvp_dim(const tb_hvp *h);        /* the vectors' length */
double tb_hvp_step(const tb_hvp *h);        /* r */
int64_t tb_hvp_grad_evals(const tb_hvp *h); /* gradient evaluations so far */

/* ---- the two sharpnesses ------------------------------------------------------------------ */
#define TB_SHARPNESS_DEFAULT_ITERS 20

typedef struct tb_sharpness_config {
    int iterations;      /* Lanczos steps per quantity, 1 to TB_LANCZOS_MAX_ITERS */
    double fd_scale;     /* the central differences' relative step (0: TB_HVP_DEFAULT_SCALE) */
    uint64_t seed;       /* of the Lanczos start vectors */
    bool preconditioned; /* also lambda(P^-1 H): needs an optimizer with a diagonal P */
} tb_sharpness_config;

/* TB_SHARPNESS_DEFAULT_ITERS iterations, the default step, seed 0, preconditioned. */
tb_sharpness_config tb_sharpness_config_default(void);

typedef struct tb_sharpness {
    int64_t step;          /* the optimizer's completed steps (0 without an optimizer) */
    double learning_rate;  /* learning_rate * lr_scale: the lr of the threshold; NaN if none */
    /* H: its largest and smallest Ritz values, and the residual bound of the largest */
    double lambda_max, lambda_min, lambda_residual;
    /* P^-1 H, through its symmetric form D H D with D = P^-1/2 (same eigenvalues); NaN when
     * not asked for */
    double pre_max, pre_min, pre_residual;
    double threshold;      /* tb_optimizer_stability_threshold at lr_scale (infinite at
                              lr_scale 0); NaN without an optimizer or a known threshold */
    int iterations;        /* Lanczos steps taken per quantity */
    int64_t grad_evals;    /* gradient evaluations spent */
    double step_size;      /* r of the central differences */
} tb_sharpness;

/* Measures at the current parameters: H by Lanczos on tb_hvp products, and with
 * config->preconditioned also D H D for D = P^-1/2, P = tb_optimizer_preconditioner(opt) (when
 * P is 1 everywhere, as for sgd, the two are the same and H is measured once). opt (may be
 * NULL without preconditioned) gives P, the step count and, at lr_scale (the schedule's
 * factor of its latest step), the threshold. Both Lanczos runs start from the same vector.
 * Afterwards the parameters and their gradients are as before, bit for bit, also on failure.
 * Fails before evaluating any gradient with TB_ERR_INVALID for NULL params, grad, config or
 * out, iterations outside 1..TB_LANCZOS_MAX_ITERS, preconditioned without an optimizer, an
 * lr_scale that is not finite and >= 0, or an adaptive optimizer before its first step; with
 * TB_ERR_UNSUPPORTED (naming why) for an optimizer without a diagonal P; then as tb_hvp_apply
 * and tb_lanczos. */
tb_status tb_sharpness_measure(tb_params *params, tb_grad_fn grad, void *user,
                               const tb_optimizer *opt, double lr_scale,
                               const tb_sharpness_config *config, tb_sharpness *out,
                               tb_error *err);

#ifdef __cplusplus
}
#endif
#endif
