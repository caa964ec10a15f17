/* step_runner.c: one training step, eager or captured once as a CUDA graph and replayed (see
 * trainbench/step.h for the contract).
 *
 * Why replaying is correct: the tape's arena hands out the same addresses every step once it
 * has merged its blocks (after the first step), so a step of the same shapes puts the batch,
 * every activation, gradient and the loss where the captured step put them; parameters,
 * gradients and optimizer state are long-lived buffers. What changes from step to step on the
 * host side -- the learning rate and optimizer coefficients (tb_optimizer_step_prepare) and the
 * dropout counter -- lives in the backend's step block, which captured kernels read from the
 * device, and is uploaded before each replay. The CUDA backend keeps memory a graph refers to
 * from being handed out again, and refuses (by name) host reads inside the capture. */
#include "trainbench/step.h"

#include "trainbench/backend.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct tb_step_runner {
    tb_tape *tape;
    tb_backend *be;
    tb_params *params;
    tb_optimizer *opt;
    tb_step_config cfg;
    bool graph;      /* graph mode asked for and possible */
    bool captured;
    int64_t steps, replays;
    /* the dropout stream of captured and replayed steps, in the step block */
    tb_rng *drop;
    bool drop_given;
    uint32_t drop_key[2];
    uint64_t drop_per_step; /* counter blocks one step draws */
    /* where the captured step keeps its batch and its loss */
    const void *cap_x, *cap_y;
    int64_t cap_n;
    const float *cap_loss;
    const float *last_loss; /* the last step's loss on the device (valid until the next step) */
    char note[320];
};

tb_status tb_step_runner_create(tb_tape *tape, tb_params *params, tb_optimizer *opt,
                                const tb_step_config *config, tb_step_runner **out,
                                tb_error *err)
{
    if (!tape || !params || !opt || !config || !config->loss || !out)
        return tb_fail(err, TB_ERR_INVALID,
                       "step_runner_create: %s is NULL (tape, parameters, optimizer and a loss "
                       "function are required)",
                       !tape ? "the tape" : !params ? "params" : !opt ? "the optimizer"
                       : !config ? "config" : !config->loss ? "config->loss" : "out");
    if (config->warmup_steps < 0)
        return tb_fail(err, TB_ERR_INVALID, "step runner: warmup_steps = %d is negative",
                       config->warmup_steps);
    tb_backend *be = tb_tape_backend(tape);
    if (config->cuda_graph && config->reduce)
        return tb_fail(err, TB_ERR_UNSUPPORTED,
                       "a step with a reduction between backward and update (data-parallel "
                       "training) cannot be captured as a CUDA graph");
    if (config->cuda_graph && !tb_backend_has_graphs(be))
        return tb_fail(err, TB_ERR_UNSUPPORTED,
                       "CUDA graphs need the cuda backend; the %s backend has no graphs",
                       tb_backend_name(be));
    tb_step_runner *r = calloc(1, sizeof *r);
    if (!r) return tb_fail(err, TB_ERR_NOMEM, "cannot allocate a step runner");
    r->tape = tape;
    r->be = be;
    r->params = params;
    r->opt = opt;
    r->cfg = *config;
    if (r->cfg.warmup_steps == 0) r->cfg.warmup_steps = 2;
    if (config->cuda_graph) {
        const char *blocker = tb_optimizer_graph_blocker(opt);
        if (blocker) {
            snprintf(r->note, sizeof r->note, "cuda graph off: %s runs every step eagerly (%s)",
                     tb_optimizer_get_info(opt)->name, blocker);
        } else if (!(r->drop = tb_backend_step_alloc(be, sizeof *r->drop))) {
            snprintf(r->note, sizeof r->note,
                     "cuda graph off: no room for the dropout counter in the step block");
        } else {
            r->graph = true;
        }
    }
    *out = r;
    return TB_OK;
}

void tb_step_runner_destroy(tb_step_runner *r)
{
    if (!r) return;
    tb_backend_step_free(r->be, r->drop);
    free(r);
}

bool tb_step_runner_graphed(const tb_step_runner *r) { return r && r->graph; }

tb_status tb_step_runner_last_loss(tb_step_runner *r, float *loss, tb_error *err)
{
    if (!r || !loss)
        return tb_fail(err, TB_ERR_INVALID, "step_runner_last_loss: %s is NULL",
                       r ? "loss" : "the runner");
    *loss = NAN;
    if (!r->last_loss)
        return tb_fail(err, TB_ERR_INVALID, "step runner: no step has run yet, so no loss");
    tb_backend_download(r->be, loss, r->last_loss, sizeof *loss); /* waits for the step */
    return tb_backend_check(r->be, err);
}
int64_t tb_step_runner_replays(const tb_step_runner *r) { return r ? r->replays : 0; }
const char *tb_step_runner_note(const tb_step_runner *r) { return r ? r->note : ""; }

/* The loss of the batch on the tape, or NULL with err filled (naming the step). */
static tb_var *build_loss(tb_step_runner *r, const tb_batch *b, tb_rng *dropout, int64_t step,
                          tb_error *err)
{
    tb_error own = {0};
    tb_var *loss = r->cfg.loss(r->cfg.user, r->tape, b, dropout, &own);
    if (loss && tb_tape_backward(r->tape, loss) == TB_OK) return loss;
    if (own.status != TB_OK) {
        *err = own;
        return NULL;
    }
    tb_fail(err, tb_tape_status(r->tape) != TB_OK ? tb_tape_status(r->tape) : TB_ERR_INTERNAL,
            "step %lld: %s", (long long)step,
            tb_tape_status(r->tape) != TB_OK ? tb_tape_error(r->tape)->message
                                             : "the loss function returned no loss");
    return NULL;
}

/* The rest of an eager step once the batch is on the tape. */
static tb_status eager_step(tb_step_runner *r, const tb_batch *b, double lr_scale,
                            tb_rng *dropout, int64_t step, float *loss_out, tb_error *err)
{
    /* backward writes the gradients instead of adding to zeros (no pass to zero them) */
    tb_params_begin_grads(r->params);
    tb_var *loss = build_loss(r, b, dropout, step, err);
    tb_params_end_grads(r->params);
    if (!loss) return err->status;
    r->last_loss = loss->value.data;
    if (!loss_out && !r->cfg.reduce) /* nothing read back */
        return tb_optimizer_step(r->opt, lr_scale, err);
    float value = NAN;
    tb_status st = tb_tensor_download(&loss->value, &value, err);
    if (st == TB_OK && r->cfg.reduce) { /* the reduced loss is the step's loss from now on */
        st = r->cfg.reduce(r->cfg.user, &value, err);
        if (st == TB_OK) st = tb_tensor_upload(&loss->value, &value, err);
    }
    if (st != TB_OK) return st;
    if (!loss_out) return tb_optimizer_step(r->opt, lr_scale, err);
    *loss_out = value;
    if (!isfinite(value)) return TB_OK; /* the caller reports the divergence; no update */
    return tb_optimizer_step(r->opt, lr_scale, err);
}

/* After a replay (or the capture's first run): the loss from its fixed address. */
static tb_status finish_graph_step(tb_step_runner *r, tb_rng *dropout, float *loss_out,
                                   tb_error *err)
{
    float value = NAN;
    r->last_loss = r->cap_loss;
    tb_backend_download(r->be, &value, r->cap_loss, sizeof value); /* waits for the step */
    tb_status st = tb_backend_check(r->be, err);
    if (st != TB_OK) return tb_error_prefix(err, "step %lld (cuda graph)", (long long)r->steps + 1);
    if (dropout) dropout->counter += r->drop_per_step;
    if (loss_out) *loss_out = value;
    return TB_OK;
}

/* The per-step values of this step into the step block, then one upload. */
static tb_status prepare_values(tb_step_runner *r, double lr_scale, tb_rng *dropout,
                                tb_error *err)
{
    tb_status st = tb_optimizer_step_prepare(r->opt, lr_scale, err);
    if (st != TB_OK) return st;
    if (dropout) *r->drop = *dropout;
    return tb_backend_step_upload(r->be, err);
}

static tb_status capture_step(tb_step_runner *r, const tb_batch *b, double lr_scale,
                              tb_rng *dropout, int64_t step, float *loss_out, tb_error *err)
{
    tb_status st = prepare_values(r, lr_scale, dropout, err);
    if (st != TB_OK) return st;
    st = tb_backend_capture_begin(r->be, err);
    if (st != TB_OK) return tb_error_prefix(err, "step %lld", (long long)step);
    tb_params_zero_grad(r->params);
    tb_var *loss = build_loss(r, b, dropout ? r->drop : NULL, step, err);
    if (loss) st = tb_optimizer_step_queue(r->opt, err);
    tb_error end_err = {0};
    tb_status end = tb_backend_capture_end(r->be, &end_err); /* always leave the capture */
    if (!loss) return err->status;
    if (st != TB_OK) return st;
    if (end != TB_OK) {
        *err = end_err;
        return tb_error_prefix(err, "step %lld", (long long)step);
    }
    r->captured = true;
    r->cap_x = b->inputs->value.data;
    r->cap_y = b->targets->value.data;
    r->cap_n = b->n;
    r->cap_loss = loss->value.data;
    r->drop_given = dropout != NULL;
    if (dropout) {
        memcpy(r->drop_key, dropout->key, sizeof r->drop_key);
        r->drop_per_step = r->drop->counter - dropout->counter;
    }
    st = tb_backend_replay(r->be, err); /* the capture recorded the step; now run it */
    if (st != TB_OK) return tb_error_prefix(err, "step %lld", (long long)step);
    return finish_graph_step(r, dropout, loss_out, err);
}

static tb_status replay_step(tb_step_runner *r, const tb_batch *b, double lr_scale,
                             tb_rng *dropout, int64_t step, float *loss_out, tb_error *err)
{
    if (b->inputs->value.data != r->cap_x || b->targets->value.data != r->cap_y)
        return tb_fail(err, TB_ERR_INTERNAL,
                       "step %lld: the batch landed at another device address than in the "
                       "captured step (the tape's allocations changed), so the graph cannot "
                       "be replayed", (long long)step);
    if ((dropout != NULL) != r->drop_given ||
        (dropout && memcmp(dropout->key, r->drop_key, sizeof r->drop_key) != 0))
        return tb_fail(err, TB_ERR_INVALID,
                       "step %lld: the dropout stream is not the one the graph was captured "
                       "with (its key is frozen in the graph)", (long long)step);
    tb_status st = prepare_values(r, lr_scale, dropout, err);
    if (st == TB_OK) st = tb_backend_replay(r->be, err);
    if (st != TB_OK) return tb_error_prefix(err, "step %lld", (long long)step);
    r->replays++;
    return finish_graph_step(r, dropout, loss_out, err);
}

tb_status tb_step_runner_run(tb_step_runner *r, const tb_batch *b, double lr_scale,
                             tb_rng *dropout, float *loss, tb_error *err)
{
    if (!r || !b)
        return tb_fail(err, TB_ERR_INVALID, "step_runner_run: %s is NULL",
                       r ? "the batch" : "the runner");
    int64_t step = r->steps + 1;
    if (loss) *loss = NAN;
    tb_status st;
    if (!r->graph || step <= r->cfg.warmup_steps || (r->captured && b->n != r->cap_n))
        st = eager_step(r, b, lr_scale, dropout, step, loss, err);
    else if (!r->captured)
        st = capture_step(r, b, lr_scale, dropout, step, loss, err);
    else
        st = replay_step(r, b, lr_scale, dropout, step, loss, err);
    if (st == TB_OK) r->steps = step;
    return st;
}

tb_status tb_step_runner_step(tb_step_runner *r, tb_pipeline *pipe, double lr_scale,
                              tb_rng *dropout, float *loss, int64_t *batch_n, tb_error *err)
{
    if (!r || !pipe)
        return tb_fail(err, TB_ERR_INVALID, "step_runner_step: %s is NULL",
                       r ? "the pipeline" : "the runner");
    if (loss) *loss = NAN;
    tb_tape_reset(r->tape);
    tb_batch b;
    tb_status st = tb_pipeline_next(pipe, r->tape, &b, err);
    if (st != TB_OK) return st;
    if (batch_n) *batch_n = b.n;
    return tb_step_runner_run(r, &b, lr_scale, dropout, loss, err);
}
