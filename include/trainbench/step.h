/* step.h: one training step (batch, forward pass and loss, backward pass, optimizer update),
 * run eagerly or, on a backend with CUDA graphs, captured once and replayed.
 *
 * Graph mode (tb_step_config.cuda_graph, CUDA backend only): the first warmup_steps steps run
 * eagerly, so the tape's arena and the device allocator reach their steady state; the next step
 * is captured as one graph (zeroing the gradients, forward, loss, backward, update) and run;
 * every later step replays that graph. Per replay the host only:
 *   - puts the next batch on the tape, where it lands in the same device buffers as at the
 *     capture (the tape's first allocations; one upload each for inputs and targets);
 *   - writes the step's per-step values into the backend's step block (the optimizer's
 *     learning rate and coefficients via tb_optimizer_step_prepare, the dropout counter) and
 *     uploads the block in one transfer;
 *   - launches the graph and reads the loss back from its fixed device address.
 * A batch of another size runs eagerly. An optimizer with host-side per-step work (LARS, LAMB,
 * K-FAC, EKFAC, Shampoo: tb_optimizer_graph_blocker) keeps every step eager, and the runner
 * says why in tb_step_runner_note. Nothing here prints. */
#ifndef TRAINBENCH_STEP_H
#define TRAINBENCH_STEP_H

#include <stdbool.h>
#include <stdint.h>

#include "trainbench/nn.h"
#include "trainbench/optim.h"
#include "trainbench/pipeline.h"
#include "trainbench/rng.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The model of a step: puts the loss of batch on tape (forward pass and loss), drawing dropout
 * masks from dropout (which may be NULL when the model has none). Returns the loss, or NULL:
 * either with err filled (a failure of its own) or with the tape's error set (an op failed).
 * To be captured it must queue device work only (no download, upload or host-side check of
 * device data: ops skip theirs while tb_backend_capturing) and allocate only on the tape. */
typedef tb_var *(*tb_step_loss_fn)(void *user, tb_tape *tape, const tb_batch *batch,
                                   tb_rng *dropout, tb_error *err);

/* What a step reports besides its status (a submission's update_params fills it too). */
typedef struct tb_step_report {
    double loss;        /* training loss of this step (NaN/inf = divergence) */
    bool training_done; /* set to end training early (AlgoPerf's "training complete") */
} tb_step_report;

typedef struct tb_step_config {
    tb_step_loss_fn loss;
    void *user;
    bool cuda_graph;  /* capture one step and replay it (CUDA backend only) */
    int warmup_steps; /* eager steps before the capture; 0 means 2 */
    /* Optional, eager steps only (with cuda_graph, tb_step_runner_create refuses it): called
     * after the backward pass and before the update with the step's loss, which it may
     * replace (the replaced value is then the step's loss, tb_step_runner_last_loss's too);
     * data-parallel training averages the gradients and the loss across ranks here. The loss
     * is read back for it even when the step's caller asks for none. */
    tb_status (*reduce)(void *user, float *loss, tb_error *err);
} tb_step_config;

typedef struct tb_step_runner tb_step_runner;

/* A runner of steps on tape (which it resets every step: in graph mode no one else may use it,
 * so evaluate on another tape) updating params with opt. cuda_graph on a backend without
 * graphs (CPU) fails with TB_ERR_UNSUPPORTED naming the backend. The caller keeps ownership of
 * tape, params and opt and destroys the runner first. */
tb_status tb_step_runner_create(tb_tape *tape, tb_params *params, tb_optimizer *opt,
                                const tb_step_config *config, tb_step_runner **out,
                                tb_error *err);
void tb_step_runner_destroy(tb_step_runner *r);

/* One step on the next batch of pipe, at learning-rate factor lr_scale (the schedule's), with
 * dropout masks from dropout (advanced as an eager step would). *loss gets the step's training
 * loss and *batch_n its examples (either pointer may be NULL). When the loss is not finite an
 * eager step skips the update; a replayed step has already applied it (the loss is read after
 * the whole step). With loss NULL an eager step reads nothing back, so device work is not
 * waited for (throughput runs), and it always updates. Errors name the step. */
tb_status tb_step_runner_step(tb_step_runner *r, tb_pipeline *pipe, double lr_scale,
                              tb_rng *dropout, float *loss, int64_t *batch_n, tb_error *err);

/* tb_step_runner_step on a batch already on the runner's tape (put there since its last
 * reset): for callers that choose their batches themselves. */
tb_status tb_step_runner_run(tb_step_runner *r, const tb_batch *batch, double lr_scale,
                             tb_rng *dropout, float *loss, tb_error *err);

/* The training loss of the last step, read back now (waiting for the device): for a caller
 * that passes no loss pointer to the steps, to check the loss now and then without waiting
 * every step. TB_ERR_INVALID before the first step. */
tb_status tb_step_runner_last_loss(tb_step_runner *r, float *loss, tb_error *err);

/* Whether steps after the warm-up are captured and replayed (graph mode asked for and
 * possible). */
bool tb_step_runner_graphed(const tb_step_runner *r);
/* Steps replayed from the graph so far (the captured step itself not included). */
int64_t tb_step_runner_replays(const tb_step_runner *r);
/* One line on graph mode: why it is off (an optimizer's blocker), or "" when it is on or was
 * not asked for. */
const char *tb_step_runner_note(const tb_step_runner *r);

#ifdef __cplusplus
}
#endif
#endif
