/* throughput.h: how fast this machine trains one workload: warm-up steps, then timed windows.
 *
 * A throughput run builds the workload (its real data), its model and an optimizer, runs
 * warmup_steps untimed steps, then timed windows of whole training steps (input pipeline,
 * forward, backward, update) until it has `windows` of them or the hard time limit passes.
 * A window closes after the first step at which it has at least window_steps steps and its
 * host clock shows at least window_s seconds; the backend is then synchronised and the time
 * read, so a device's queued work is counted in the window that queued it. Windows follow one
 * another without a gap: their times add up to the timed time.
 *
 * With check_loss the run reads the training loss back after step 1 (the untrained model's),
 * at the end of the warm-up and after the last step of every window, and the run passes its validation check when every
 * loss read is finite and the last one is below the first. A loss that is not finite stops the
 * run. Nothing here prints.
 *
 * Data-parallel (dist with more than one rank; every rank calls tb_throughput_run with the same
 * config): the batch is the global one, each rank steps on its shard and the gradients and the
 * loss are averaged across ranks before every update (as tb_train with dist does), so every
 * rank holds the same weights (checked at the end) and sees the same averaged loss. Rank 0's
 * clock decides when a window closes and when the time limit passes, and every rank follows
 * it after the same step (one small collective per step, beside the gradient average); as
 * every step waits for every rank in the average, rank 0's windows time the job, and its
 * result's examples/s are the global batch's. peak_rss_mb is the largest of the ranks'.
 * Refused (TB_ERR_UNSUPPORTED, TB_ERR_INVALID): another device than the CPU, CUDA graphs, a
 * batch that does not divide among the ranks. A failure on one rank fails the run on every
 * rank. */
#ifndef TRAINBENCH_THROUGHPUT_H
#define TRAINBENCH_THROUGHPUT_H

#include <stdbool.h>
#include <stdint.h>

#include "trainbench/backend.h"
#include "trainbench/dist.h"
#include "trainbench/nn.h"
#include "trainbench/optim.h"
#include "trainbench/workload.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TB_THROUGHPUT_MAX_WINDOWS 256
#define TB_THROUGHPUT_PROFILE_MAX 32
#define TB_THROUGHPUT_PRODUCTS_MAX 64

typedef struct tb_throughput_progress {
    int window;            /* windows completed; 0 at the end of the warm-up */
    int windows;           /* windows wanted */
    int64_t steps;         /* steps so far, the warm-up's included */
    double elapsed_s;      /* wall seconds since the first step */
    double examples_per_s; /* of the window just completed (0 at the end of the warm-up) */
    double eta_s;          /* estimated seconds left in this run */
} tb_throughput_progress;

typedef void (*tb_throughput_progress_fn)(void *user, const tb_throughput_progress *progress);

typedef struct tb_throughput_config {
    const char *workload;
    const char *algorithm;
    tb_hparams hparams;           /* the algorithm's defaults for those not set */
    tb_backend_config backend;
    tb_workload_config data;      /* data and cache directories, model scale (split_seed is
                                     set from seed) */
    int batch_size;               /* 0: the workload's default */
    uint64_t seed;                /* of every source of variation (init, data order, dropout,
                                     split) */
    int warmup_steps;             /* untimed steps first: >= 1 (the first step's loss and
                                     products are read in it), >= 3 with cuda_graph */
    int windows;                  /* timed windows wanted, 1 to TB_THROUGHPUT_MAX_WINDOWS */
    int64_t window_steps;         /* a window's least steps (>= 1) */
    double window_s;              /* a window's least seconds (>= 0) */
    double max_time_s;            /* hard limit on the run's wall time from its first step,
                                     warm-up included (0: none); an unfinished window is
                                     dropped */
    bool check_loss;              /* the validation check (above) */
    bool cuda_graph;              /* capture one step as a CUDA graph and replay it (step.h) */
    bool profile;                 /* per-op times of the timed steps into result->profile,
                                     and per-product times into result->products */
    tb_throughput_progress_fn progress; /* optional: after the warm-up and every window */
    void *progress_user;
    tb_dist *dist;                /* data-parallel across the ranks of an MPI job (NULL or a
                                     world of 1: one process); see below */
} tb_throughput_config;

/* Defaults: fmnist_mlp, sgd, CPU with all cores, 20 warm-up steps, 1 window of >= 1 step. */
tb_throughput_config tb_throughput_config_default(void);

typedef struct tb_throughput_result {
    int windows;                  /* completed */
    double window_examples_per_s[TB_THROUGHPUT_MAX_WINDOWS];
    double examples_per_s;        /* mean over the windows */
    double std_pct, sem_pct;      /* their standard deviation and standard error of the mean,
                                     in % of the mean (NaN with one window) */
    double ms_per_step;           /* timed milliseconds per timed step */
    double cpu_ms_per_step;       /* process CPU milliseconds per timed step */
    int64_t steps;                /* timed steps */
    int64_t examples;             /* timed examples */
    double timed_s;               /* the windows' seconds */
    double elapsed_s;             /* wall seconds from the first step to the end */
    bool time_limited;            /* stopped by max_time_s before all windows */
    double peak_rss_mb;           /* the process's peak resident memory during the run (Linux:
                                     the peak is reset at its start; elsewhere since the
                                     process started) */
    uint64_t gemm_flops;          /* of the timed steps' matrix products (host-counted) */
    uint64_t step_gemm_flops;     /* of the first (eager) step */
    int64_t parameters;
    int batch_size;
    char backend[256];            /* tb_backend_describe */
    bool graphed;                 /* tb_step_runner_graphed */
    int64_t graph_replays;
    char graph_note[320];
    double first_loss, last_loss; /* the losses read (check_loss; NaN otherwise) */
    int64_t last_loss_step;
    /* the validation check: passed, or why not ("the training loss is nan at step 57") */
    bool passed;
    char reason[256];
    tb_op_profile profile[TB_THROUGHPUT_PROFILE_MAX]; /* largest total time first */
    int profile_ops;
    /* the timed steps' matrix products by shape and epilogue, largest total time first
     * (tb_backend_product_profile) */
    tb_product_profile products[TB_THROUGHPUT_PRODUCTS_MAX];
    int product_entries;
    int ranks;                    /* the ranks that ran it data-parallel (1: one process) */
} tb_throughput_result;

/* Runs it. Returns an error (TB_ERR_INVALID for a bad config, TB_ERR_MISSING for data not
 * installed, TB_ERR_NO_DEVICE, a step's failure) with result holding what was measured until
 * then; a run that fails its validation check, or that the time limit stops with fewer than
 * two windows (one, when one was asked for), returns TB_OK with result->passed false and the
 * reason. */
tb_status tb_throughput_run(const tb_throughput_config *config, tb_throughput_result *result,
                            tb_error *err);

#ifdef __cplusplus
}
#endif
#endif
