/* submission_example.c: an external trainbench submission, built as a shared library.
 *
 * A hand-written heavy-ball momentum SGD with decoupled weight decay and a linear warmup: it
 * shows every part of the submission API (docs/SUBMISSIONS.md). It includes only the public
 * header and links against nothing: the workload's functions arrive in the `api` table.
 *
 * Build: the trainbench build makes build/submission_example.so. By hand:
 *     cc -O2 -shared -fPIC -Iinclude examples/submission_example.c -o my_submission.so
 * Run:   trainbench bench --submission ./build/submission_example.so --preset quick */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "trainbench/submission.h"

typedef struct state {
    float *velocity; /* [numel], one per parameter value */
    int64_t numel;
} state;

static int get_batch_size(const tb_submission_api *api, tb_trial_ctx *c, const tb_hparams *hp)
{
    (void)hp;
    return api->workload_info(c)->default_batch_size;
}

static tb_status init_optimizer_state(const tb_submission_api *api, tb_trial_ctx *c,
                                      const tb_hparams *hp, void **out, tb_error *err)
{
    (void)hp;
    if (!api->on_host(c))
        return api->fail(err, TB_ERR_UNSUPPORTED, "example_momentum runs on the CPU backend only");
    state *s = calloc(1, sizeof *s);
    if (!s) return api->fail(err, TB_ERR_NOMEM, "example_momentum: out of memory");
    s->numel = api->numel(c);
    s->velocity = calloc((size_t)s->numel, sizeof(float));
    if (!s->velocity) {
        free(s);
        return api->fail(err, TB_ERR_NOMEM, "example_momentum: out of memory");
    }
    *out = s;
    return TB_OK;
}

static tb_status update_params(const tb_submission_api *api, tb_trial_ctx *c, void *st,
                               const tb_hparams *hp, const tb_batch *batch, int64_t step,
                               tb_step_report *report, tb_error *err)
{
    state *s = st;
    /* the workload's fixed functions: model, loss, gradients */
    tb_var *loss = api->loss_fn(c, api->model_fn(c, batch->inputs), batch->targets);
    tb_status status = api->backward(c, loss, err);
    if (status != TB_OK) return status;
    report->loss = api->scalar(c, loss);
    if (!isfinite(report->loss)) return TB_OK; /* the harness records the divergence */

    double lr = api->hparam(hp, "learning_rate", 0.05);
    double mu = api->hparam(hp, "momentum", 0.9);
    double wd = api->hparam(hp, "weight_decay", 0.0);
    int64_t warmup = (int64_t)(api->hparam(hp, "warmup_steps", 0));
    if (warmup > 0 && step < warmup) lr *= (double)step / (double)warmup;
    float *w = api->values(c);
    const float *g = api->grads(c);
    for (int64_t i = 0; i < s->numel; i++) {
        s->velocity[i] = (float)mu * s->velocity[i] + g[i];
        w[i] -= (float)lr * (s->velocity[i] + (float)wd * w[i]);
    }
    return TB_OK;
}

static void free_state(void *st)
{
    state *s = st;
    if (!s) return;
    free(s->velocity);
    free(s);
}

static const tb_submission submission = {
    .name = "example_momentum",
    .summary = "hand-written heavy-ball SGD (an external submission example)",
    .abi_version = TB_SUBMISSION_ABI_VERSION,
    .get_batch_size = get_batch_size,
    .init_optimizer_state = init_optimizer_state,
    .update_params = update_params,
    .free_state = free_state,
    .prepare_for_eval = NULL, /* nothing to do: no averaged weights */
    .data_selection = NULL,   /* the workload's data order */
    .default_search_space = "{\"learning_rate\": {\"min\": 0.005, \"max\": 0.05, "
                            "\"scaling\": \"log\"},"
                            " \"momentum\": {\"feasible_points\": [0.9]},"
                            " \"warmup_steps\": {\"feasible_points\": [50]}}",
};

/* The one exported entry point. */
__attribute__((visibility("default"))) const tb_submission *tb_submission_entry(int abi_version)
{
    return abi_version == TB_SUBMISSION_ABI_VERSION ? &submission : NULL;
}
