/* trial.c: one benchmark trial by AlgoPerf's timing rules: init_optimizer_state, data
 * selection, update_params and prepare_for_eval are timed; evals are not. Evals happen when
 * the eval period (in submission seconds) has passed and at the end; the trial stops at the
 * validation target (unless run to the budget), at the budget, when the submission ends
 * training, or at divergence (a failed trial, recorded): a training loss or an eval's
 * validation loss that is not finite. Every eval is written to the store as soon as it is
 * measured. */
#include "trainbench/benchmark.h"
#include "core/clock.h"

#include "bench/trial_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct trial_run {
    tb_trial_record rec;
    const tb_trial_options *opts;
    tb_store *store;
    tb_trial_ctx ctx;
    const tb_submission *sub;
    void *state;
    double t_sub, t_eval, t_start;
    int64_t step;
    int evals;
    bool reached;
    double time_to_target;
    bool submission_failed; /* the error came from a submission's callback */
} trial_run;

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
    tb_trial_ctx *c = &r->ctx;
    tb_eval_metrics tr, va, te;
    int64_t nv = r->opts->eval_validation_examples;
    int64_t nt = r->opts->eval_train_examples > 0
                     ? r->opts->eval_train_examples
                     : (nv > 0 ? nv : tb_workload_size(c->wl, TB_SPLIT_VALIDATION));
    tb_status st = tb_workload_evaluate(c->wl, c->tape, TB_SPLIT_TRAIN, nt, &tr, err);
    if (st == TB_OK) st = tb_workload_evaluate(c->wl, c->tape, TB_SPLIT_VALIDATION, nv, &va, err);
    /* the target is calibrated on the whole validation split: a subset at the target is
     * replaced by the whole split's evaluation, which is recorded and decides */
    if (st == TB_OK && !r->reached && isfinite(va.metric) && va.metric <= r->rec.target &&
        va.examples < tb_workload_size(c->wl, TB_SPLIT_VALIDATION))
        st = tb_workload_evaluate(c->wl, c->tape, TB_SPLIT_VALIDATION, 0, &va, err);
    bool test = r->opts->eval_test_examples >= 0;
    if (st == TB_OK && test)
        st = tb_workload_evaluate(c->wl, c->tape, TB_SPLIT_TEST, r->opts->eval_test_examples,
                                  &te, err);
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
    st = tb_store_add_eval(r->store, r->rec.id, &e, err);
    if (st != TB_OK) return st;
    r->evals++;
    /* weights that are no longer finite while the reported training loss was: the
     * divergence is seen here (as `trainbench train`'s final validation does) */
    if (!isfinite(va.loss))
        return tb_fail(err, TB_ERR_NUMERIC,
                       "diverged: validation loss %g at step %lld (not finite, though the "
                       "training loss reported was)", va.loss, (long long)r->step);
    /* the target is in the workload's own metric (error rate, loss in nats, bits per
     * character), which setup checked is the one the trial was planned with */
    double m = va.metric;
    if (!r->reached && isfinite(m) && m <= r->rec.target && r->t_sub <= r->rec.budget_s) {
        r->reached = true;
        r->time_to_target = r->t_sub;
    }
    return TB_OK;
}

static tb_status setup(trial_run *r, tb_error *err)
{
    tb_trial_ctx *c = &r->ctx;
    tb_backend_config bc = {.device = r->opts->device, .threads = r->opts->threads};
    tb_status st = tb_backend_create(&bc, &c->be, err);
    if (st != TB_OK) return st;
    tb_workload_config wc = {.data_dir = r->opts->data_dir,
                             .split_seed = r->rec.seeds[TB_STREAM_SPLIT],
                             .cache_dir = r->opts->cache_dir};
    st = tb_workload_create(r->rec.workload, c->be, &wc, &c->wl, err);
    if (st != TB_OK) return st;
    const char *metric = tb_workload_get_info(c->wl)->metric;
    if (strcmp(r->rec.metric, metric) != 0)
        return tb_fail(err, TB_ERR_INVALID,
                       "trial %lld: its target is in %s, but workload %s measures %s",
                       (long long)r->rec.id, r->rec.metric, r->rec.workload, metric);
    tb_rng init = tb_rng_make(r->rec.seeds[TB_STREAM_INIT], TB_STREAM_INIT);
    st = tb_workload_init(c->wl, &init, err);
    if (st == TB_OK) st = tb_tape_create(c->be, &c->tape, err);
    if (st != TB_OK) return st;
    c->dropout = tb_rng_make(r->rec.seeds[TB_STREAM_DROPOUT], TB_STREAM_DROPOUT);
    tb_bench_workload bw;
    c->step_hint = tb_bench_workload_find(r->rec.workload, &bw) && bw.step_hint > 0
                       ? bw.step_hint : 1000;
    int batch = r->sub->get_batch_size(&tb_trial_api, c, &r->rec.hparams);
    if (batch < 1)
        return tb_fail(err, TB_ERR_INVALID, "submission %s: get_batch_size returned %d",
                       r->rec.submission, batch);
    tb_pipeline_config pc = {.batch_size = batch,
                             .data_order_seed = r->rec.seeds[TB_STREAM_DATA_ORDER],
                             .augment_seed = r->rec.seeds[TB_STREAM_AUGMENT]};
    return tb_pipeline_create(c->wl, &pc, &c->pipe, err);
}

static void teardown(trial_run *r)
{
    tb_trial_ctx *c = &r->ctx;
    if (r->state && r->sub->free_state) r->sub->free_state(r->state);
    tb_pipeline_destroy(c->pipe);
    tb_tape_destroy(c->tape);
    tb_workload_destroy(c->wl);
    tb_backend_destroy(c->be);
}

/* The training loop. Returns TB_OK when the trial ran to an end (target, budget, early end);
 * an error status with the reason otherwise (divergence is TB_ERR_NUMERIC). */
static tb_status train(trial_run *r, tb_error *err)
{
    tb_trial_ctx *c = &r->ctx;
    const tb_submission *s = r->sub;
    double t0 = tb_monotonic_s();
    tb_status st = s->init_optimizer_state(&tb_trial_api, c, &r->rec.hparams, &r->state, err);
    r->t_sub += tb_monotonic_s() - t0;
    if (st != TB_OK) return submission_error(r, st, err, "init_optimizer_state");
    /* the hyperparameters in effect: the point's, and the defaults of the optimizers and of a
     * built-in baseline (untimed) */
    tb_trial_note_hparams(c, &r->rec.hparams, NULL);
    st = tb_store_trial_hparams(r->store, r->rec.id, &c->resolved, &c->defaults, err);
    if (st != TB_OK) return st;
    double last_eval = 0;
    for (;;) {
        t0 = tb_monotonic_s();
        tb_tape_reset(c->tape);
        tb_tape_set_training(c->tape, true);
        tb_batch batch;
        st = s->data_selection ? s->data_selection(&tb_trial_api, c, r->state, &batch, err)
                               : tb_trial_api.next_batch(c, &batch, err);
        char where[64];
        snprintf(where, sizeof where, "data selection at step %lld", (long long)r->step + 1);
        if (st != TB_OK && s->data_selection) return submission_error(r, st, err, where);
        if (st != TB_OK) return tb_error_prefix(err, "%s", where);
        tb_step_report rep = {.loss = NAN};
        st = s->update_params(&tb_trial_api, c, r->state, &r->rec.hparams, &batch, r->step + 1,
                              &rep, err);
        r->t_sub += tb_monotonic_s() - t0;
        snprintf(where, sizeof where, "update_params at step %lld", (long long)r->step + 1);
        if (st != TB_OK) return submission_error(r, st, err, where);
        r->step++;
        if (!isfinite(rep.loss))
            return tb_fail(err, TB_ERR_NUMERIC, "diverged: training loss %g at step %lld%s",
                           rep.loss, (long long)r->step,
                           r->step == 1 && isnan(rep.loss)
                               ? " (or update_params did not set report->loss)"
                               : "");
        bool over = r->t_sub >= r->rec.budget_s;
        if (over || rep.training_done || r->t_sub - last_eval >= r->rec.eval_period_s) {
            if (s->prepare_for_eval) {
                t0 = tb_monotonic_s();
                st = s->prepare_for_eval(&tb_trial_api, c, r->state, err);
                r->t_sub += tb_monotonic_s() - t0;
                if (st != TB_OK) return submission_error(r, st, err, "prepare_for_eval");
            }
            st = eval_once(r, err);
            if (st != TB_OK) return st;
            last_eval = r->t_sub;
            if (r->reached && r->rec.stop_at_target) return TB_OK;
        }
        if (over || rep.training_done) return TB_OK;
    }
}

tb_status tb_trial_execute(const char *store_path, int64_t trial_id,
                           const tb_submission_ref *ref, const tb_trial_options *opts,
                           tb_error *err)
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
    tb_status st = tb_store_open(store_path, &r.store, err);
    if (st != TB_OK) return st;
    st = tb_store_trial_get(r.store, trial_id, &r.rec, err);
    tb_error terr = {0};
    tb_status tst = TB_OK;
    if (st == TB_OK) {
        tst = setup(&r, &terr);
        char machine[1024];
        tb_machine_facts(r.ctx.be ? tb_backend_describe(r.ctx.be) : "",
                         r.ctx.be ? tb_backend_threads(r.ctx.be) : opts->threads, machine,
                         sizeof machine);
        /* a trial that cannot start for want of its data or device is not an attempt: the
         * store keeps it as planned and a rerun is its first attempt */
        if (tst != TB_ERR_MISSING)
            st = tb_store_trial_start(r.store, trial_id, tb_code_version(), machine, err);
    }
    if (st == TB_OK && tst == TB_OK) tst = train(&r, &terr);
    if (st == TB_OK) {
        /* an I/O error of the store itself, or missing data or device, is not the
         * submission's failure: report it, and leave the trial to run again once mended */
        if (!r.submission_failed &&
            ((tst == TB_ERR_IO && strstr(terr.message, "results store")) ||
             tst == TB_ERR_MISSING)) {
            st = tb_fail(err, tst, "%s", terr.message);
        } else {
            char reason[600];
            if (tst == TB_OK) snprintf(reason, sizeof reason, "%s",
                                       r.reached ? "reached the target" : "missed the target");
            else if (tst == TB_ERR_NUMERIC) /* a loss, a gradient or an update not finite */
                snprintf(reason, sizeof reason, "%s%s",
                         strncmp(terr.message, "diverged", 8) == 0 ? "" : "diverged: ",
                         terr.message);
            else snprintf(reason, sizeof reason, "%s: %s", tb_status_name(tst), terr.message);
            st = tb_store_trial_finish(r.store, trial_id,
                                       tst == TB_OK ? TB_TRIAL_DONE : TB_TRIAL_FAILED, reason,
                                       r.reached, r.time_to_target, r.t_sub, r.step, err);
        }
    }
    teardown(&r);
    tb_store_close(r.store);
    return st;
}
