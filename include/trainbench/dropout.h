/* dropout.h: dropout as data augmentation (Bouthillier, Konda, Vincent, Memisevic 2015;
 * docs/DROPOUT.md): the dropout noise of a network's first hidden layer projected back into
 * its input space, as samples a deterministic network can train on, and the statistics of
 * the input pipeline's projection stage that trains the projected variants on them. */
#ifndef TRAINBENCH_DROPOUT_H
#define TRAINBENCH_DROPOUT_H

#include <stdbool.h>
#include <stdint.h>

#include "trainbench/nn.h"
#include "trainbench/rng.h"
#include "trainbench/status.h"
#include "trainbench/workload.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tb_projection_config {
    float rate;        /* the dropout rate of the noise projected, in [0, 1) */
    int max_steps;     /* gradient steps on the input at most (0: 500) */
    double step_size;  /* of each step on the per-example squared error (0: 0.3) */
    double tol;        /* converged: the error fell by less than tol (relative) over the last
                          10 steps (0: 1e-2) */
    double target_error; /* converged too when the relative error reaches it (0: 0.01) */
    double momentum;   /* Nesterov momentum of the steps, in [0, 1) (0: plain gradient steps) */
} tb_projection_config;

typedef struct tb_projection_report {
    int steps;            /* gradient steps taken */
    double initial_error; /* relative error ||h(x) - t||^2 / ||t||^2 at the start (x* = x) */
    double final_error;   /* the same at the returned x* */
    bool converged;
} tb_projection_report;

/* What the projection stage of a run's input pipeline did (tb_pipeline_projection_stats):
 * each batch of a projected variant (fmnist_mlp_projected) is projected through the model
 * being trained, with the weights of the step about to train on it. A batch whose projection
 * does not converge is refused: the step trains on its clean inputs instead, counted here in
 * unconverged (never used silently). */
typedef struct tb_projection_stats {
    int64_t batches;         /* batches the stage saw */
    int64_t projected;       /* of them, trained on their projection (converged) */
    int64_t unconverged;     /* of them, refused: trained on their clean inputs */
    double mean_steps;       /* over the projected batches: input-gradient steps */
    double mean_initial_error; /* relative error ||h(x) - t||^2 / ||t||^2 at x* = x: the noise */
    double mean_final_error; /* relative error achieved at the x* trained on */
    int max_steps;           /* the most steps one projection took */
    char last_refusal[256];  /* why the last refused batch was refused ("" if none) */
} tb_projection_stats;

/* Projects dropout noise of the first hidden layer h of workload wl (a model with a
 * projection: the fmnist_mlp family) for n inputs x (host, as tb_workload_read lays them out):
 * draws a dropout mask m from rng (advanced), t = m * h(x), and from x* = x takes gradient
 * steps on x* on ||h(x*) - t||^2 until converged; x_out gets x*, report what it took.
 * A projection that does not converge (max_steps reached, or a non-finite error) fails with
 * TB_ERR_NUMERIC naming its steps and errors (report filled, x_out the last iterate: not for
 * use). Leaves the tape reset and the parameters' gradients as they were (no parameter takes
 * a gradient while it runs). TB_ERR_UNSUPPORTED for a
 * model without a projection, TB_ERR_INVALID for a bad setting (naming it). */
tb_status tb_dropout_project(tb_workload *wl, tb_tape *tape, int64_t n, const float *x,
                             const tb_projection_config *config, tb_rng *rng, float *x_out,
                             tb_projection_report *report, tb_error *err);

/* The rate of the dropout noise workload wl trains on as projected samples (its
 * dropout_rate), or 0 for a workload that does not (every variant but the projected ones). */
float tb_workload_projection_rate(const tb_workload *wl);

#ifdef __cplusplus
}
#endif
#endif
