/* train_hook.c: a submission as the run core's update hook for one run (tb_submission_hook):
 * the trial's callbacks and API table, without the trial's store, budget or timing. */
#include "trainbench/benchmark.h"

#include "bench/pysub.h"
#include "bench/trial_impl.h"

#include <stdio.h>
#include <stdlib.h>

struct tb_submission_hook {
    const tb_submission *sub;
    const char *spec;
    tb_trial_ctx ctx;
    tb_hparams hp;
    void *state;
    bool state_made; /* init_optimizer_state ran */
    int batch;       /* get_batch_size's answer (0: not asked yet) */
};

/* A callback's failure st, prefixed with the submission and where (one saying so when it
 * returned an error without filling err). */
static tb_status failed(const tb_submission_hook *h, tb_status st, tb_error *err,
                        const char *where)
{
    if (!err->status)
        return tb_fail(err, st, "%s: %s returned %s without a message", h->spec, where,
                       tb_status_name(st));
    return tb_error_prefix(err, "%s: %s", h->spec, where);
}

static int hook_batch_size(void *user, tb_run *run)
{
    tb_submission_hook *h = user;
    h->ctx.run = run;
    h->batch = h->sub->get_batch_size(&tb_trial_api, &h->ctx, &h->hp);
    return h->batch;
}

/* The optimizer's state, made before the first step's data selection, once the weights exist
 * (timed with that step, as AlgoPerf times init_optimizer_state). */
static tb_status ensure_state(tb_submission_hook *h, tb_error *err)
{
    if (h->state_made) return TB_OK;
    tb_status st = h->sub->init_optimizer_state(&tb_trial_api, &h->ctx, &h->hp, &h->state, err);
    if (st != TB_OK) return failed(h, st, err, "init_optimizer_state");
    h->state_made = true;
    return TB_OK;
}

static tb_status hook_select(void *user, tb_run *run, tb_batch *out, tb_error *err)
{
    tb_submission_hook *h = user;
    tb_status st = ensure_state(h, err);
    if (st != TB_OK) return st;
    if (!h->sub->data_selection) return tb_pipeline_next(tb_run_pipeline(run), tb_run_tape(run),
                                                         out, err);
    st = h->sub->data_selection(&tb_trial_api, &h->ctx, h->state, out, err);
    return st == TB_OK ? TB_OK : failed(h, st, err, "data_selection");
}

static tb_status hook_update(void *user, tb_run *run, const tb_batch *batch, int64_t step,
                             tb_step_report *report, tb_error *err)
{
    (void)run;
    tb_submission_hook *h = user;
    tb_status st = ensure_state(h, err);
    if (st != TB_OK) return st;
    st = h->sub->update_params(&tb_trial_api, &h->ctx, h->state, &h->hp, batch, step, report,
                               err);
    if (st == TB_OK) return TB_OK;
    char where[64];
    snprintf(where, sizeof where, "update_params at step %lld", (long long)step);
    return failed(h, st, err, where);
}

static tb_status hook_prepare_eval(void *user, tb_run *run, tb_error *err)
{
    (void)run;
    tb_submission_hook *h = user;
    if (!h->sub->prepare_for_eval || !h->state_made) return TB_OK;
    tb_status st = h->sub->prepare_for_eval(&tb_trial_api, &h->ctx, h->state, err);
    return st == TB_OK ? TB_OK : failed(h, st, err, "prepare_for_eval");
}

tb_status tb_submission_hook_open(const tb_submission_ref *ref, const char *workload,
                                  const tb_hparams *hp, tb_submission_hook **out, tb_error *err)
{
    if (!ref || !workload || !out)
        return tb_fail(err, TB_ERR_INVALID, "submission hook: %s is NULL",
                       !ref ? "the submission" : !workload ? "the workload" : "out");
    *out = NULL;
    tb_submission_hook *h = calloc(1, sizeof *h);
    if (!h) return tb_fail(err, TB_ERR_NOMEM, "out of memory for a submission hook");
    h->sub = tb_submission_get(ref);
    h->spec = tb_submission_ref_spec(ref);
    h->ctx.submission = tb_submission_ref_name(ref);
    tb_bench_workload bw;
    h->ctx.step_hint = tb_bench_workload_find(workload, &bw) && bw.step_hint > 0 ? bw.step_hint
                                                                                 : 1000;
    if (hp) h->hp = *hp;
    const char *file = tb_submission_ref_python(ref);
    tb_status st = file ? tb_py_session_open(file, &h->ctx.py, err) : TB_OK;
    if (st != TB_OK) { /* the error names the file */
        free(h);
        return st;
    }
    *out = h;
    return TB_OK;
}

tb_run_update tb_submission_hook_update(tb_submission_hook *h)
{
    return (tb_run_update){.batch_size = hook_batch_size, .select = hook_select,
                           .update = hook_update, .prepare_eval = hook_prepare_eval, .user = h};
}

tb_status tb_submission_hook_explain(const tb_submission_hook *h, tb_status st, tb_error *err)
{
    if (st == TB_OK || !h || h->batch > 0 || !h->ctx.run) return st;
    const char *why = tb_py_session_error(h->ctx.py);
    if (why[0]) return tb_fail(err, TB_ERR_CRASHED, "%s: %s", h->spec, why);
    return tb_fail(err, TB_ERR_INVALID, "%s: get_batch_size returned %d", h->spec, h->batch);
}

void tb_submission_hook_close(tb_submission_hook *h)
{
    if (!h) return;
    if (h->state && h->sub->free_state) h->sub->free_state(h->state);
    tb_py_session_close(h->ctx.py);
    free(h);
}
