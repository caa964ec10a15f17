/* trial.c: one benchmark trial, a driver of the run core whose update is the submission's
 * (tb_run_update: get_batch_size, data_selection, update_params). AlgoPerf's timing rules:
 * init_optimizer_state, data selection, update_params and prepare_for_eval are timed; evals
 * are not. Evals happen when the eval period (in submission seconds) has passed since the last
 * one (tb_eval_sched) and at the end; the trial stops at the validation target (unless run to
 * the budget), at the budget, when the submission ends training, or at divergence (a failed
 * trial, recorded): the run core's rule on the training loss and on each eval's validation
 * loss. Every eval is written to the store as soon as it is measured, with the conditions it
 * ran in (CPU time, load, steal, involuntary context switches since the end of set-up); the
 * trial's conditions and whether it was contended when it ends. Each step and eval beats the
 * heartbeat its parent watches for hangs. The evals and what the trial records of its
 * conditions are in trial_record.c. */
#include "trainbench/benchmark.h"
#include "core/clock.h"
#include "trainbench/machine.h"

#include "bench/pysub.h"
#include "bench/trial_impl.h"
#include "bench/trial_run.h"
#include "trainbench/run.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What rank 0 decides after a step, carried to every rank (tb_dist_agree_code). */
enum { DECIDE_STOP = 1, DECIDE_EVAL = 2 };


/* The set-up is done: from here the parent's limit on the time between beats is the hang
 * limit, no longer the set-up's. */
static void set_up_done(trial_run *r)
{
    if (r->hb) atomic_store(&r->hb->ready, 1);
    tb_trial_beat(r);
}


/* A submission callback returned st != TB_OK: its error (or, when it returned an error without
 * filling err, one saying so) prefixed with where, and marked as the submission's, so that
 * the trial records it as its failure whatever its status (a submission's TB_ERR_MISSING is
 * not missing data of the benchmark's). */
static tb_status submission_error(trial_run *r, tb_status st, tb_error *err, const char *where)
{
    r->submission_failed = true;
    if (!err->status)
        return tb_fail(err, st, "%s returned %s without a message", where, tb_status_name(st));
    return tb_error_prefix(err, "%s", where);
}


/* ---- the submission as the run core's update hook ---------------------------------------- */
static int hook_batch_size(void *user, tb_run *run)
{
    trial_run *r = user;
    r->ctx.run = run; /* the workload exists from here on */
    r->batch_chosen = r->sub->get_batch_size(&tb_trial_api, &r->ctx, &r->rec.hparams);
    return r->batch_chosen;
}

static tb_status hook_select(void *user, tb_run *run, tb_batch *out, tb_error *err)
{
    trial_run *r = user;
    const tb_submission *s = r->sub;
    char where[64];
    snprintf(where, sizeof where, "data selection at step %lld", (long long)r->step + 1);
    tb_status st = s->data_selection ? s->data_selection(&tb_trial_api, &r->ctx, r->state, out, err)
                                     : tb_pipeline_next(tb_run_pipeline(run), tb_run_tape(run),
                                                        out, err);
    if (st != TB_OK && s->data_selection) return submission_error(r, st, err, where);
    if (st != TB_OK) return tb_error_prefix(err, "%s", where);
    return TB_OK;
}

static tb_status hook_update(void *user, tb_run *run, const tb_batch *batch, int64_t step,
                             tb_step_report *report, tb_error *err)
{
    (void)run;
    trial_run *r = user;
    tb_status st = r->sub->update_params(&tb_trial_api, &r->ctx, r->state, &r->rec.hparams,
                                         batch, step, report, err);
    if (st == TB_OK) return TB_OK;
    char where[64];
    snprintf(where, sizeof where, "update_params at step %lld", (long long)step);
    return submission_error(r, st, err, where);
}

static tb_status setup(trial_run *r, tb_error *err)
{
    tb_bench_workload bw;
    r->ctx.step_hint = tb_bench_workload_find(r->rec.workload, &bw) && bw.step_hint > 0
                           ? bw.step_hint : 1000;
    tb_run_config rc = {
        .model = {.workload = r->rec.workload,
                  .backend = {.device = r->opts->device, .threads = r->opts->threads}},
        .data.source = {.data_dir = r->opts->data_dir, .cache_dir = r->opts->cache_dir,
                        /* AlgoPerf's dropout_rate and label_smoothing set the model's and
                         * its training loss's; a workload without either ignores it, as
                         * AlgoPerf's workloads do (docs/TUNING.md) */
                        .dropout_rate = tb_workload_has_dropout(r->rec.workload)
                                            ? tb_hparams_get(&r->rec.hparams, TB_HP_DROPOUT_RATE, 0)
                                            : 0,
                        .label_smoothing =
                            tb_workload_has_label_smoothing(r->rec.workload)
                                ? tb_hparams_get(&r->rec.hparams, TB_HP_LABEL_SMOOTHING, 0)
                                : 0},
        .eval.period_s = r->rec.eval_period_s,
        .eval.every_steps = r->opts->eval_every_steps, /* > 0: the period is off */
        .update = {.batch_size = hook_batch_size, .select = hook_select,
                   .update = hook_update, .user = r},
        .dist = r->dist,
    };
    memcpy(rc.seeds, r->rec.seeds, sizeof rc.seeds);
    tb_status st = tb_run_create(&rc, &r->run, err);
    const char *why = tb_py_session_error(r->ctx.py);
    if (st == TB_ERR_INVALID && r->batch_chosen < 1 && r->ctx.run && r->ctx.py && why[0]) {
        r->submission_failed = true;
        return tb_fail(err, TB_ERR_CRASHED, "%s", why);
    }
    if (st == TB_ERR_INVALID && r->batch_chosen < 1 && r->ctx.run)
        return tb_fail(err, TB_ERR_INVALID, "submission %s: get_batch_size returned %d",
                       r->rec.submission, r->batch_chosen);
    if (st != TB_OK) return st;
    r->ctx.run = r->run;
    r->sched = tb_eval_sched_make(&rc.eval, tb_run_total_steps(r->run));
    const char *metric = tb_workload_get_info(tb_run_workload(r->run))->metric;
    if (strcmp(r->rec.metric, metric) != 0)
        return tb_fail(err, TB_ERR_INVALID,
                       "trial %lld: its target is in %s, but workload %s measures %s",
                       (long long)r->rec.id, r->rec.metric, r->rec.workload, metric);
    return TB_OK;
}

/* A Python submission's file, run in this process's interpreter (its exception, or a build
 * without Python, is the submission's failure). */
static tb_status open_python(trial_run *r, const tb_submission_ref *ref, tb_error *err)
{
    const char *file = tb_submission_ref_python(ref);
    if (!file) return TB_OK;
    tb_status st = tb_py_session_open(file, &r->ctx.py, err);
    if (st != TB_OK) r->submission_failed = true;
    return st;
}

static void teardown(trial_run *r)
{
    if (r->state && r->sub->free_state) r->sub->free_state(r->state);
    tb_run_destroy(r->run);
    tb_py_session_close(r->ctx.py);
}

/* The training loop. Returns TB_OK when the trial ran to an end (target, budget, early end);
 * an error status with the reason otherwise (divergence is TB_ERR_NUMERIC). */
static tb_status train(trial_run *r, tb_error *err)
{
    tb_trial_ctx *c = &r->ctx;
    const tb_submission *s = r->sub;
    /* the conditions are measured from here: set-up (reading the data) is not the training's */
    tb_machine_sample_now(&r->since, NULL);
    r->sampled = true;
    r->load_max = r->since.load1;
    set_up_done(r);
    double t0 = tb_monotonic_s();
    tb_status st = s->init_optimizer_state(&tb_trial_api, c, &r->rec.hparams, &r->state, err);
    r->t_sub += tb_monotonic_s() - t0;
    if (st != TB_OK) return submission_error(r, st, err, "init_optimizer_state");
    tb_trial_beat(r);
    /* the hyperparameters in effect: the point's, and the defaults of the optimizers and of a
     * built-in baseline (untimed) */
    tb_trial_note_hparams(c, &r->rec.hparams, NULL);
    if (r->root) st = tb_store_trial_hparams(r->store, r->rec.id, &c->resolved, &c->defaults, err);
    st = tb_dist_agree(r->dist, st, NULL, err);
    if (st != TB_OK) return st;
    for (;;) {
        tb_run_step_info step;
        st = tb_run_step(r->run, false, &step, err); /* timed: selection and update */
        r->t_sub += step.seconds;
        /* rank 0's decisions (its clock's budget and eval period) reach every rank */
        int decide = 0;
        if (st == TB_OK) {
            bool over = r->t_sub >= r->rec.budget_s;
            decide = (over || step.done ? DECIDE_STOP : 0) |
                     (over || step.done || tb_eval_sched_due(&r->sched, step.step, r->t_sub)
                          ? DECIDE_EVAL : 0);
        }
        st = tb_dist_agree_code(r->dist, st, &decide, err);
        if (st == TB_ERR_NUMERIC && step.step == 1 && isnan(step.loss) && !r->submission_failed) {
            char why[sizeof err->message];
            snprintf(why, sizeof why, "%s", err->message);
            return tb_fail(err, st, "%.400s (or update_params did not set report->loss)", why);
        }
        if (st != TB_OK) return st;
        r->step = step.step;
        tb_trial_beat(r);
        if (decide & DECIDE_EVAL) {
            if (s->prepare_for_eval) {
                t0 = tb_monotonic_s();
                st = s->prepare_for_eval(&tb_trial_api, c, r->state, err);
                r->t_sub += tb_monotonic_s() - t0;
                if (st != TB_OK) st = submission_error(r, st, err, "prepare_for_eval");
            }
            if (st == TB_OK && r->root) st = tb_trial_eval(r, err);
            bool stop = r->reached && r->rec.stop_at_target;
            st = tb_dist_agree(r->dist, st, &stop, err);
            if (st != TB_OK) return st;
            if (stop) return TB_OK;
        }
        if (decide & DECIDE_STOP) return TB_OK;
    }
}




/* Whether a trial's error st is the machine's, not the submission's (which the next run
 * retries): its data or device missing, an I/O error (of the store, of the data: a full disk),
 * or, before training, its data corrupt. An error from a submission's callback never is. */
static bool environment_failure(const trial_run *r, tb_status st, bool at_setup)
{
    if (r->submission_failed) return false;
    return st == TB_ERR_MISSING || st == TB_ERR_IO || (at_setup && st == TB_ERR_FORMAT);
}

tb_status tb_trial_execute(const char *store_path, int64_t trial_id,
                           const tb_submission_ref *ref, const tb_trial_options *opts,
                           tb_error *err)
{
    return tb_trial_execute_watched(store_path, trial_id, ref, opts, NULL, err);
}

tb_status tb_trial_execute_watched(const char *store_path, int64_t trial_id,
                                   const tb_submission_ref *ref, const tb_trial_options *opts,
                                   tb_trial_heartbeat *hb, tb_error *err)
{
    return tb_trial_execute_dist(store_path, trial_id, ref, opts, hb, NULL, err);
}

tb_status tb_trial_execute_dist(const char *store_path, int64_t trial_id,
                                const tb_submission_ref *ref, const tb_trial_options *opts,
                                tb_trial_heartbeat *hb, tb_dist *d, tb_error *err)
{
    if (!store_path || !ref || !opts)
        return tb_fail(err, TB_ERR_INVALID, "trial_execute: %s is NULL",
                       !store_path ? "the store's path" : !ref ? "the submission" : "opts");
    trial_run r;
    memset(&r, 0, sizeof r);
    r.opts = opts;
    r.sub = tb_submission_get(ref);
    r.ctx.submission = tb_submission_ref_name(ref);
    r.time_to_target = INFINITY;
    r.t_start = tb_monotonic_s();
    r.hb = hb;
    r.load_max = NAN;
    r.dist = d;
    r.root = tb_dist_rank(d) == 0;
    tb_trial_beat(&r);
    /* the other ranks of a data-parallel trial only read the trial */
    tb_status st = r.root ? tb_store_open(store_path, &r.store, err)
                          : tb_store_open_readonly(store_path, &r.store, err);
    if (st == TB_OK) st = tb_store_trial_get(r.store, trial_id, &r.rec, err);
    st = tb_dist_agree(d, st, NULL, err);
    if (st != TB_OK) {
        tb_store_close(r.store);
        return st;
    }
    tb_error terr = {0};
    tb_status tst = TB_OK;
    if (st == TB_OK) {
        tst = open_python(&r, ref, &terr);
        if (tst == TB_OK) tst = setup(&r, &terr);
        char machine[1024];
        tb_backend *be = r.run ? tb_run_backend(r.run) : NULL;
        r.threads = be ? tb_backend_threads(be) : opts->threads;
        tb_machine_facts(be ? tb_backend_describe(be) : "", r.threads, machine, sizeof machine);
        tb_trial_placement_facts(opts, machine, sizeof machine);
        /* a trial that cannot start for want of its data or device (or with its data
         * corrupt) is not an attempt: the store keeps it as planned and a rerun is its first */
        if (r.root && (tst == TB_OK || !environment_failure(&r, tst, true)))
            st = tb_store_trial_start(r.store, trial_id, tb_code_version(), machine, err);
        st = tb_dist_agree(d, st, NULL, err);
    }
    bool at_setup = tst != TB_OK;
    if (st == TB_OK && tst == TB_OK) tst = train(&r, &terr);
    if (st == TB_OK && !r.root) {
        st = tst != TB_OK && environment_failure(&r, tst, at_setup) ? tst : TB_OK;
        if (st != TB_OK && err) *err = terr;
    } else if (st == TB_OK) {
        /* the machine's failure is not the submission's: report it, and leave the trial to
         * run again once mended */
        if (tst != TB_OK && environment_failure(&r, tst, at_setup)) {
            st = tb_fail(err, tst, "%s", terr.message);
        } else {
            char reason[600];
            if (tst == TB_OK) snprintf(reason, sizeof reason, "%s",
                                       r.reached ? "reached the target" : "missed the target");
            else tb_trial_failure_reason(tst, terr.message, reason, sizeof reason);
            st = tb_trial_record_conditions(&r, err);
            if (st == TB_OK)
                st = tb_store_trial_finish(r.store, trial_id,
                                           tst == TB_OK ? TB_TRIAL_DONE : TB_TRIAL_FAILED,
                                           reason, r.reached, r.time_to_target, r.t_sub, r.step,
                                           err);
        }
    }
    teardown(&r);
    tb_store_close(r.store);
    return st;
}
