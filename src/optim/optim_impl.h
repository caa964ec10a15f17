/* optim_impl.h: how an optimizer plugs into the registry (internal). */
#ifndef TRAINBENCH_OPTIM_IMPL_H
#define TRAINBENCH_OPTIM_IMPL_H

#include "backend/backend_impl.h"
#include "trainbench/curvature.h"
#include "trainbench/optim.h"
#include "trainbench/sharpness.h"

typedef struct tb_optimizer_vtable {
    tb_optimizer_info info;
    /* Optional: the algorithm's own checks of a complete set (every spec'd name present, names
     * and ranges already checked; `given` holds only what the caller gave), for values in
     * range that would produce 0/0 or an infinity; may resolve aliases in hp (nadamw's
     * one_minus_beta1). Runs before init, and when a study or a benchmark is planned. */
    tb_status (*check)(const char *algorithm, tb_hparams *hp, const tb_hparams *given,
                       tb_error *err);
    /* Allocates state; hp is already validated and complete (every spec'd name present). */
    tb_status (*init)(tb_optimizer *opt, tb_error *err);
    /* One update at learning rate lr (opt->step already counts it). Algorithms that split
     * their step into prepare and queue leave it NULL. */
    tb_status (*step)(tb_optimizer *opt, double lr, tb_error *err);
    /* The split step, for CUDA graphs (tb_optimizer_step_prepare/_queue): prepare writes the
     * per-step values of step opt->step at lr into the optimizer's step scalars
     * (tb_opt_alloc_step) and queues nothing; queue queues the update kernels, which take
     * those values by pointer. Set both, or neither and graph_blocker. */
    tb_status (*prepare)(tb_optimizer *opt, double lr, tb_error *err);
    void (*queue)(tb_optimizer *opt);
    /* Why a step cannot be replayed from a graph (host-side per-step work), for the note. */
    const char *graph_blocker;
    void (*destroy)(tb_optimizer *opt);
    /* Optional, for curvature methods (see trainbench/curvature.h); NULL elsewhere. */
    tb_status (*set_layers)(tb_optimizer *opt, const tb_layer_ref *layers, int n, tb_error *err);
    bool (*wants_fisher)(const tb_optimizer *opt);
    tb_status (*update_fisher)(tb_optimizer *opt, tb_error *err);
    /* Optional, for methods with a Hessian-diagonal estimate (sophia): whether the next step
     * needs one, and the estimate from the gradient function (probes drawn from rng). */
    bool (*wants_hessian)(const tb_optimizer *opt);
    tb_status (*update_hessian)(tb_optimizer *opt, tb_grad_fn grad, void *user, tb_rng *rng,
                                tb_error *err);
    /* Optional, for sharpness diagnostics (tb_optimizer_preconditioner): writes to p (host,
     * tb_params_numel floats) the diagonal P the latest step divided its direction by, in the
     * kernel's own float expression. NULL where the step has no diagonal P; no_preconditioner
     * then says why. */
    tb_status (*preconditioner)(const tb_optimizer *opt, float *p, tb_error *err);
    const char *no_preconditioner;
    /* The largest eigenvalue of P^-1 H for which the step at learning rate lr is stable on a
     * quadratic with P frozen (tb_optimizer_stability_threshold); NaN when not known. */
    double (*stability)(const tb_optimizer *opt, double lr);
    /* Optional, for algorithms whose training point is not the point to evaluate
     * (Schedule-Free: train at y, evaluate at x): prepare_for_eval puts the evaluation point
     * into the parameters, prepare_for_train puts back exactly what was there. NULL elsewhere
     * (tb_optimizer_prepare_for_eval/_train then do nothing). */
    tb_status (*prepare_for_eval)(tb_optimizer *opt, tb_error *err);
    tb_status (*prepare_for_train)(tb_optimizer *opt, tb_error *err);
} tb_optimizer_vtable;

struct tb_optimizer {
    const tb_optimizer_vtable *vt;
    tb_params *params;
    tb_backend *be;
    tb_hparams hp; /* every hyperparameter of the algorithm, defaults filled in (resolved) */
    int64_t step;  /* number of completed steps */
    bool prepared; /* a step's per-step values have been prepared (split steps) */
    bool at_eval;  /* the parameters hold the evaluation point (prepare_for_eval) */
    void *state;
};

/* The value of a hyperparameter the algorithm declares. */
static inline double tb_opt_hp(const tb_optimizer *opt, const char *name)
{
    return tb_hparams_get(&opt->hp, name, 0.0);
}

/* float32's smallest normal number: the least epsilon or damping an algorithm accepts. */
#define TB_OPT_GUARD_MIN 0x1p-126

/* TB_ERR_INVALID when hp's `name`, a guard that keeps a denominator (or a matrix to invert)
 * away from 0, is below TB_OPT_GUARD_MIN: in float32 it would be 0 or subnormal (which a
 * backend may flush to 0), and the update 0/0 = NaN or infinite where the statistic it guards
 * is 0 (a parameter whose gradient has always been 0). The message names algorithm, name and
 * value, then `why` (a clause: what would be 0 or overflow). */
tb_status tb_opt_check_guard(const tb_hparams *hp, const char *algorithm, const char *name,
                             const char *why, tb_error *err);

/* Whether weight decay applies to a parameter of this kind (not biases or norm parameters). */
static inline bool tb_param_decays(tb_param_kind kind)
{
    return kind == TB_PARAM_WEIGHT || kind == TB_PARAM_EMBEDDING;
}

/* Allocates `count` floats of optimizer state on the backend, every one set to `value`;
 * NULL (with a message naming the algorithm) when out of memory. Free with tb_backend_free. */
static inline float *tb_opt_alloc_state(tb_optimizer *opt, int64_t count, float value,
                                        tb_error *err)
{
    float *p = tb_backend_alloc(opt->be, (size_t)(count > 0 ? count : 1) * sizeof(float));
    if (!p) {
        tb_fail(err, TB_ERR_NOMEM, "%s: cannot allocate state for %lld values",
                opt->vt->info.name, (long long)count);
        return NULL;
    }
    if (count > 0) opt->be->ops.fill(opt->be, p, count, value);
    return p;
}

/* `bytes` of zeroed per-step values in the backend's step block (see backend_impl.h); NULL with
 * a message naming the algorithm when the block is full. Free with tb_backend_step_free. */
static inline void *tb_opt_alloc_step(tb_optimizer *opt, size_t bytes, tb_error *err)
{
    void *p = tb_backend_step_alloc(opt->be, bytes);
    if (!p)
        tb_fail(err, TB_ERR_NOMEM,
                "%s: no room for its per-step values in the backend's step block (%d KiB, "
                "shared by every optimizer alive on the backend)",
                opt->vt->info.name, TB_STEP_BLOCK_BYTES / 1024);
    return p;
}

/* The check of Adam's family (adam.c): epsilon, added to sqrt(v_hat), at least
 * TB_OPT_GUARD_MIN. LAMB's direction is Adam's and uses it too. */
tb_status tb_adam_check(const char *algorithm, tb_hparams *hp, const tb_hparams *given,
                        tb_error *err);

/* For the preconditioners of adaptive methods: copies per-value state (a device buffer of
 * tb_params_numel values, e.g. the second moments) to host p; TB_ERR_INVALID naming the
 * algorithm before its first step, when there is no latest step's P. (precond.c) */
tb_status tb_opt_latest_state(const tb_optimizer *opt, const float *state, float *p,
                              tb_error *err);

extern const tb_optimizer_vtable tb_optim_sgd;
extern const tb_optimizer_vtable tb_optim_momentum;
extern const tb_optimizer_vtable tb_optim_nesterov;
extern const tb_optimizer_vtable tb_optim_rmsprop;
extern const tb_optimizer_vtable tb_optim_adagrad;
extern const tb_optimizer_vtable tb_optim_adam;
extern const tb_optimizer_vtable tb_optim_adamw;
extern const tb_optimizer_vtable tb_optim_nadam;
extern const tb_optimizer_vtable tb_optim_nadamw;
extern const tb_optimizer_vtable tb_optim_lars;
extern const tb_optimizer_vtable tb_optim_lamb;
extern const tb_optimizer_vtable tb_optim_kfac;
extern const tb_optimizer_vtable tb_optim_ekfac;
extern const tb_optimizer_vtable tb_optim_shampoo;
extern const tb_optimizer_vtable tb_optim_sfadamw;
extern const tb_optimizer_vtable tb_optim_sfsgd;
extern const tb_optimizer_vtable tb_optim_lion;
extern const tb_optimizer_vtable tb_optim_adopt;
extern const tb_optimizer_vtable tb_optim_ademamix;
extern const tb_optimizer_vtable tb_optim_prodigy;
extern const tb_optimizer_vtable tb_optim_mars;
extern const tb_optimizer_vtable tb_optim_muon;
extern const tb_optimizer_vtable tb_optim_sophia;
extern const tb_optimizer_vtable tb_optim_soap;
extern const tb_optimizer_vtable tb_optim_psgd_kron;

#endif
