/* step_model.h: a small model with dropout for the step-runner tests (test_step.c on CPU,
 * test_cuda_graph.c on a GPU): Fashion-MNIST images through linear 784-32, layer norm, GELU,
 * dropout 0.25, linear 32-10 and softmax cross-entropy with label smoothing 0.1. None of the
 * workloads has dropout; this one makes a frozen dropout counter show. Header-only (static). */
#ifndef TRAINBENCH_TEST_STEP_MODEL_H
#define TRAINBENCH_TEST_STEP_MODEL_H

#include "testutil.h"

#include <string.h>

typedef struct step_model {
    tb_params *params;
    tb_var *w1, *b1, *g, *beta, *w2, *b2;
} step_model;

/* Parameters on be, initialised from seed. False (with a message) on failure. */
static bool step_model_create(step_model *m, tb_backend *be, uint64_t seed)
{
    tb_error err = {0};
    const int64_t s_w1[2] = {32, 784}, s_32[1] = {32}, s_w2[2] = {10, 32}, s_10[1] = {10};
    if (tb_params_create(be, &m->params, &err) != TB_OK) goto fail;
    m->w1 = tb_params_add(m->params, "w1", TB_PARAM_WEIGHT, 2, s_w1, &err);
    m->b1 = tb_params_add(m->params, "b1", TB_PARAM_BIAS, 1, s_32, &err);
    m->g = tb_params_add(m->params, "ln_g", TB_PARAM_NORM, 1, s_32, &err);
    m->beta = tb_params_add(m->params, "ln_b", TB_PARAM_NORM, 1, s_32, &err);
    m->w2 = tb_params_add(m->params, "w2", TB_PARAM_WEIGHT, 2, s_w2, &err);
    m->b2 = tb_params_add(m->params, "b2", TB_PARAM_BIAS, 1, s_10, &err);
    if (!m->b2 || tb_params_finalize(m->params, &err) != TB_OK) goto fail;
    tb_rng rng = tb_rng_make(seed, TB_STREAM_INIT);
    tb_var *all[6] = {m->w1, m->b1, m->g, m->beta, m->w2, m->b2};
    for (int i = 0; i < 6; i++)
        if (tb_init_uniform(all[i], &rng, i == 2 ? 0.5f : -0.1f, i == 2 ? 1.5f : 0.1f, &err) !=
            TB_OK)
            goto fail;
    return true;
fail:
    fprintf(stderr, "step model: %s\n", err.message);
    return false;
}

static void step_model_destroy(step_model *m) { tb_params_destroy(m->params); }

/* tb_step_loss_fn over a step_model. */
static tb_var *step_model_loss(void *user, tb_tape *t, const tb_batch *b, tb_rng *dropout,
                               tb_error *err)
{
    (void)err;
    step_model *m = user;
    const int64_t flat[2] = {b->n, 784};
    tb_var *h = tb_op_linear(t, tb_op_reshape(t, b->inputs, 2, flat), m->w1, m->b1);
    h = tb_op_gelu(t, tb_op_layernorm(t, h, m->g, m->beta, 1e-5f));
    h = tb_op_dropout(t, h, 0.25f, dropout);
    return tb_op_softmax_xent(t, tb_op_linear(t, h, m->w2, m->b2), b->targets, 0.1f);
}

/* Everything a step-runner test trains with: fmnist_mlp batches through a pipeline, a
 * step_model, a tape, an optimizer and, when asked for, a step runner. */
typedef struct step_rig {
    tb_workload *wl;
    tb_pipeline *pipe;
    step_model m;
    tb_tape *tape;
    tb_optimizer *opt;
    tb_step_runner *runner;
    bool ok; /* every piece was built (each failure is a failed CHECK) */
} step_rig;

/* On be: batches of `batch` in data order `order`, the model from seed `init`, `algorithm`
 * with hp (NULL: its defaults) and, when sc is not NULL, a runner over sc with the model as
 * its user. Destroy with step_rig_destroy, built or not. */
static void step_rig_create(step_rig *r, tb_backend *be, int batch, uint64_t order,
                            uint64_t init, const char *algorithm, const tb_hparams *hp,
                            tb_step_config *sc)
{
    tb_error err = {0};
    memset(r, 0, sizeof *r);
    CHECK_OK(tb_workload_create("fmnist_mlp", be, NULL, &r->wl, &err), &err);
    tb_pipeline_config pc = {.batch_size = batch, .data_order_seed = order, .prefetch = -1};
    if (r->wl) CHECK_OK(tb_pipeline_create(r->wl, &pc, &r->pipe, &err), &err);
    const bool model = CHECK(step_model_create(&r->m, be, init));
    CHECK_OK(tb_tape_create(be, &r->tape, &err), &err);
    if (model) CHECK_OK(tb_optimizer_create(algorithm, r->m.params, hp, &r->opt, &err), &err);
    if (sc && r->opt) {
        sc->user = &r->m;
        CHECK_OK(tb_step_runner_create(r->tape, r->m.params, r->opt, sc, &r->runner, &err),
                 &err);
    }
    r->ok = r->pipe && model && r->tape && r->opt && (!sc || r->runner);
}

static void step_rig_destroy(step_rig *r)
{
    tb_step_runner_destroy(r->runner);
    tb_optimizer_destroy(r->opt);
    tb_tape_destroy(r->tape);
    step_model_destroy(&r->m);
    tb_pipeline_destroy(r->pipe);
    tb_workload_destroy(r->wl);
}

#endif
