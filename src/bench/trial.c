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
 * heartbeat its parent watches for hangs. */
#include "trainbench/benchmark.h"
#include "core/clock.h"
#include "trainbench/machine.h"

#include "bench/pysub.h"
#include "bench/trial_impl.h"
#include "trainbench/run.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct trial_run {
    tb_trial_record rec;
    const tb_trial_options *opts;
    tb_store *store;
    tb_trial_ctx ctx;
    const tb_submission *sub;
    void *state;
    tb_run *run;
    int batch_chosen;       /* get_batch_size's answer */
    tb_eval_sched sched;
    double t_sub, t_eval, t_start;
    int64_t step;
    int evals;
    bool reached;
    double time_to_target;
    bool submission_failed; /* the error came from a submission's callback */
    tb_trial_heartbeat *hb;   /* NULL: no parent watching */
    tb_machine_sample since;  /* at the end of set-up */
    bool sampled;             /* since was taken */
    double load_max;          /* the largest load average sampled since */
    int threads;              /* the backend's */
    tb_dist *dist;            /* a data-parallel trial's ranks (NULL: one process) */
    bool root;                /* rank 0 (or the one process): it evaluates and records */
} trial_run;

/* What rank 0 decides after a step, carried to every rank (tb_dist_agree_code). */
enum { DECIDE_STOP = 1, DECIDE_EVAL = 2 };

/* A sign of progress for the parent's hang detection (its limit is the set-up's until the
 * trial is ready: set_up_done). */
static void beat(trial_run *r)
{
    if (!r->hb) return;
    atomic_store(&r->hb->step, r->step);
    atomic_fetch_add(&r->hb->beats, 1);
}

/* The set-up is done: from here the parent's limit on the time between beats is the hang
 * limit, no longer the set-up's. */
static void set_up_done(trial_run *r)
{
    if (r->hb) atomic_store(&r->hb->ready, 1);
    beat(r);
}

/* The conditions since the end of set-up, with a fresh sample (its load counted). */
static void conditions_now(trial_run *r, tb_machine_sample *now, tb_machine_conditions *c)
{
    tb_machine_sample_now(now, NULL);
    if (isnan(r->load_max) || now->load1 > r->load_max) r->load_max = now->load1;
    tb_machine_conditions_between(&r->since, now, r->threads, r->load_max, c);
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

/* One untimed eval: train subset, validation, test; written to the store. */
static tb_status eval_once(trial_run *r, tb_error *err)
{
    double t0 = tb_monotonic_s();
    tb_workload *wl = tb_run_workload(r->run);
    tb_eval_metrics tr, va, te;
    int64_t nv = r->opts->eval_validation_examples;
    int64_t nt = r->opts->eval_train_examples > 0
                     ? r->opts->eval_train_examples
                     : (nv > 0 ? nv : tb_workload_size(wl, TB_SPLIT_VALIDATION));
    tb_status st = tb_run_evaluate(r->run, TB_SPLIT_TRAIN, nt, &tr, err);
    if (st == TB_OK) st = tb_run_evaluate(r->run, TB_SPLIT_VALIDATION, nv, &va, err);
    /* the target is calibrated on the whole validation split: a subset at the target is
     * replaced by the whole split's evaluation, which is recorded and decides */
    bool reached = false;
    tb_eval_metrics whole = {0};
    if (st == TB_OK && !r->reached)
        st = tb_run_at_target(r->run, r->rec.target, &va, &reached, &whole, err);
    if (st == TB_OK && whole.examples > 0) va = whole;
    bool test = r->opts->eval_test_examples >= 0;
    if (st == TB_OK && test)
        st = tb_run_evaluate(r->run, TB_SPLIT_TEST, r->opts->eval_test_examples, &te, err);
    if (st != TB_OK) return tb_error_prefix(err, "evaluation at step %lld", (long long)r->step);
    r->t_eval += tb_monotonic_s() - t0;
    tb_eval_record e = {
        .index = r->evals,
        .step = r->step,
        .submission_time = r->t_sub,
        .eval_time = r->t_eval,
        .total_duration = tb_monotonic_s() - r->t_start,
        .train_loss = tr.loss,
        .train_accuracy = tr.accuracy,
        .train_error = tr.error_rate,
        .validation_loss = va.loss,
        .validation_accuracy = va.accuracy,
        .validation_error = va.error_rate,
        .validation_examples = va.examples,
        .test_loss = test ? te.loss : NAN,
        .test_accuracy = test ? te.accuracy : NAN,
        .test_error = test ? te.error_rate : NAN,
        .test_examples = test ? te.examples : 0,
    };
    tb_machine_sample now;
    tb_machine_conditions c;
    conditions_now(r, &now, &c);
    e.cpu_time = c.cpu_s;
    e.load_avg = now.load1;
    e.steal = c.steal;
    e.nivcsw = c.nivcsw;
    st = tb_store_add_eval(r->store, r->rec.id, &e, err);
    if (st != TB_OK) return st;
    r->evals++;
    beat(r);
    tb_eval_sched_done(&r->sched, r->t_sub);
    /* weights that diverged while the reported training loss did not: seen here (as `trainbench
     * train`'s final validation does), by the run core's rule */
    st = tb_run_check_loss(r->run, "the validation loss", va.loss, r->step, false, err);
    if (st != TB_OK) return st;
    /* the target is in the workload's own metric (error rate, loss in nats, bits per
     * character), which the batch-size hook checked is the one the trial was planned with */
    if (reached && r->t_sub <= r->rec.budget_s) {
        r->reached = true;
        r->time_to_target = r->t_sub;
    }
    return TB_OK;
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
    beat(r);
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
        beat(r);
        if (decide & DECIDE_EVAL) {
            if (s->prepare_for_eval) {
                t0 = tb_monotonic_s();
                st = s->prepare_for_eval(&tb_trial_api, c, r->state, err);
                r->t_sub += tb_monotonic_s() - t0;
                if (st != TB_OK) st = submission_error(r, st, err, "prepare_for_eval");
            }
            if (st == TB_OK && r->root) st = eval_once(r, err);
            bool stop = r->reached && r->rec.stop_at_target;
            st = tb_dist_agree(r->dist, st, &stop, err);
            if (st != TB_OK) return st;
            if (stop) return TB_OK;
        }
        if (decide & DECIDE_STOP) return TB_OK;
    }
}

/* The reason a trial that failed records: a divergence as "diverged: ..." (the run core's
 * "the run diverged: X" as "diverged: X"), another failure with its status's name. */
static void failure_reason(tb_status st, const char *message, char *out, size_t n)
{
    static const char rule[] = "the run diverged: ";
    if (st != TB_ERR_NUMERIC)
        snprintf(out, n, "%s: %s", tb_status_name(st), message);
    else if (strncmp(message, rule, sizeof rule - 1) == 0)
        snprintf(out, n, "diverged: %s", message + sizeof rule - 1);
    else /* a loss, a gradient or an update not finite */
        snprintf(out, n, "%s%s", strncmp(message, "diverged", 8) == 0 ? "" : "diverged: ",
                 message);
}

/* Records the trial's conditions since the end of its set-up, and whether it was contended. */
static tb_status record_conditions(trial_run *r, tb_error *err)
{
    if (!r->sampled) return TB_OK; /* it never trained */
    tb_machine_sample now;
    tb_machine_conditions c;
    conditions_now(r, &now, &c);
    tb_trial_record *t = &r->rec;
    t->wall_time = c.wall_s;
    t->cpu_time = c.cpu_s;
    t->load_avg = c.load1;
    t->steal = c.steal;
    t->nivcsw = c.nivcsw;
    /* a GPU trial's host thread waits for the device: its CPU share says nothing of others */
    if (r->opts->device != TB_DEVICE_CPU) c.cpu_share = NAN;
    t->contended = tb_machine_contended(&c, r->threads, (int)sysconf(_SC_NPROCESSORS_ONLN),
                                        t->contention, sizeof t->contention);
    return tb_store_trial_conditions(r->store, t->id, t, err);
}

/* Adds to the machine facts (JSON in machine) how the trial is run: the trials run at once
 * on the machine ("jobs") and the CPUs its process is pinned to ("cpus", or null), so that
 * times measured side by side, or on shared cores, can be told from dedicated ones. */
static void placement_facts(const tb_trial_options *o, char *machine, size_t cap)
{
    cJSON *m = cJSON_Parse(machine);
    if (!m) return;
    cJSON_AddNumberToObject(m, "jobs", o->jobs > 1 ? o->jobs : 1);
    if (o->cpus && o->cpus[0]) cJSON_AddStringToObject(m, "cpus", o->cpus);
    else cJSON_AddNullToObject(m, "cpus");
    if (o->ranks > 1) { /* a worker of an MPI job */
        cJSON_AddNumberToObject(m, "rank", o->rank);
        cJSON_AddNumberToObject(m, "ranks", o->ranks);
    }
    if (o->ranks_per_trial > 1) /* a data-parallel trial */
        cJSON_AddNumberToObject(m, "ranks_per_trial", o->ranks_per_trial);
    char *text = cJSON_PrintUnformatted(m);
    if (text && strlen(text) < cap) snprintf(machine, cap, "%s", text);
    free(text);
    cJSON_Delete(m);
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
    beat(&r);
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
        placement_facts(opts, machine, sizeof machine);
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
            else failure_reason(tst, terr.message, reason, sizeof reason);
            st = record_conditions(&r, err);
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
