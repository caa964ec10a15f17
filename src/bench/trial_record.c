/* trial_record.c: what a benchmark trial measures and writes to the store besides its
 * training: its evals (untimed; each written as soon as it is measured, with the conditions
 * it ran in: CPU time, load, steal, involuntary context switches since the end of set-up),
 * its conditions and contention when it ends, the reason of a failure, and how it was placed
 * on the machine. */
#include "bench/trial_run.h"
#include "core/clock.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The conditions since the end of set-up, with a fresh sample (its load counted). */
static void conditions_now(trial_run *r, tb_machine_sample *now, tb_machine_conditions *c)
{
    tb_machine_sample_now(now, NULL);
    if (isnan(r->load_max) || now->load1 > r->load_max) r->load_max = now->load1;
    tb_machine_conditions_between(&r->since, now, r->threads, r->load_max, c);
}

/* One untimed eval: train subset, validation, test; written to the store. */
tb_status tb_trial_eval(trial_run *r, tb_error *err)
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
    tb_trial_beat(r);
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

/* The reason a trial that failed records: a divergence as "diverged: ..." (the run core's
 * "the run diverged: X" as "diverged: X"), another failure with its status's name. */
void tb_trial_failure_reason(tb_status st, const char *message, char *out, size_t n)
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
tb_status tb_trial_record_conditions(trial_run *r, tb_error *err)
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
void tb_trial_placement_facts(const tb_trial_options *o, char *machine, size_t cap)
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
