/* dropout.h: dropout as data augmentation (Bouthillier, Konda, Vincent, Memisevic 2015;
 * docs/DROPOUT.md): the dropout noise of a network's first hidden layer projected back into
 * its input space, as samples a deterministic network can train on. */
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
} tb_projection_config;

typedef struct tb_projection_report {
    int steps;            /* gradient steps taken */
    double initial_error; /* relative error ||h(x) - t||^2 / ||t||^2 at the start (x* = x) */
    double final_error;   /* the same at the returned x* */
    bool converged;
} tb_projection_report;

/* Projects dropout noise of the first hidden layer h of workload wl (a model with a
 * projection: the fmnist_mlp family) for n inputs x (host, as tb_workload_read lays them out):
 * draws a dropout mask m from rng (advanced), t = m * h(x), and from x* = x takes gradient
 * steps on x* on ||h(x*) - t||^2 until converged; x_out gets x*, report what it took.
 * A projection that does not converge (max_steps reached, or a non-finite error) fails with
 * TB_ERR_NUMERIC naming its steps and errors (report filled, x_out the last iterate: not for
 * use). Leaves the tape reset and the parameters' gradients zero. TB_ERR_UNSUPPORTED for a
 * model without a projection, TB_ERR_INVALID for a bad setting (naming it). */
tb_status tb_dropout_project(tb_workload *wl, tb_tape *tape, int64_t n, const float *x,
                             const tb_projection_config *config, tb_rng *rng, float *x_out,
                             tb_projection_report *report, tb_error *err);

#ifdef __cplusplus
}
#endif
#endif
