/* metric.c: what a study's run contributes (its metric, by name), the seeds of its runs, and
 * one run of a study: the helpers variance studies, comparisons and declarative studies share. */
#include "study/study_impl.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define N_METRICS 10
static const char *const metric_names[N_METRICS] = {
    "validation", "test", "validation_error", "validation_loss", "test_error", "test_loss",
    "time_to_target", "time_per_step", "examples_per_second", "fresh_to_target"};

const char *tb_study_metric_name(tb_study_metric m)
{
    return (unsigned)m < N_METRICS ? metric_names[m] : "unknown";
}

tb_status tb_study_metric_parse(const char *name, tb_study_metric *out, tb_error *err)
{
    if (!name || !out)
        return tb_fail(err, TB_ERR_INVALID, "study_metric_parse: %s is NULL",
                       name ? "out" : "name");
    for (int i = 0; i < N_METRICS; i++)
        if (strcmp(name, metric_names[i]) == 0) {
            *out = (tb_study_metric)i;
            return TB_OK;
        }
    return tb_fail(err, TB_ERR_INVALID,
                   "unknown metric '%s' (expected validation, test, validation_error, "
                   "validation_loss, test_error, test_loss, time_to_target, time_per_step, "
                   "examples_per_second or fresh_to_target)",
                   name);
}

double tb_study_metric_value(tb_study_metric m, const tb_train_result *r)
{
    if (!r) return NAN;
    switch (m) {
    case TB_METRIC_VALIDATION: return r->validation.metric;
    case TB_METRIC_TEST: return r->test.metric;
    case TB_METRIC_VALIDATION_ERROR: return r->validation.error_rate;
    case TB_METRIC_VALIDATION_LOSS: return r->validation.loss;
    case TB_METRIC_TEST_ERROR: return r->test.error_rate;
    case TB_METRIC_TEST_LOSS: return r->test.loss;
    case TB_METRIC_TIME_TO_TARGET: return r->reached_target ? r->time_to_target_s : INFINITY;
    case TB_METRIC_TIME_PER_STEP: return r->steps > 0 ? r->train_time_s / (double)r->steps : NAN;
    case TB_METRIC_EXAMPLES_PER_SECOND:
        return r->examples > 0 && r->train_time_s > 0 ? (double)r->examples / r->train_time_s
                                                      : NAN;
    case TB_METRIC_FRESH_TO_TARGET:
        return !r->reached_target        ? INFINITY
               : r->fresh_to_target < 0 ? NAN /* unknown: a stored run from before it */
                                        : (double)r->fresh_to_target;
    }
    return NAN;
}

bool tb_study_metric_higher_is_better(tb_study_metric m)
{
    return m == TB_METRIC_EXAMPLES_PER_SECOND;
}

bool tb_study_metric_to_target(tb_study_metric m)
{
    return m == TB_METRIC_TIME_TO_TARGET || m == TB_METRIC_FRESH_TO_TARGET;
}

bool tb_study_metric_timed(tb_study_metric m)
{
    return m == TB_METRIC_TIME_TO_TARGET || m == TB_METRIC_TIME_PER_STEP ||
           m == TB_METRIC_EXAMPLES_PER_SECOND;
}

tb_study_metric tb_study_selection_metric(tb_study_metric m)
{
    if (m == TB_METRIC_TIME_PER_STEP || m == TB_METRIC_EXAMPLES_PER_SECOND)
        return TB_METRIC_VALIDATION;
    return m == TB_METRIC_TEST_ERROR  ? TB_METRIC_VALIDATION_ERROR
           : m == TB_METRIC_TEST_LOSS ? TB_METRIC_VALIDATION_LOSS
           : m == TB_METRIC_TEST      ? TB_METRIC_VALIDATION
                                      : m;
}

/* An error-rate metric asked of a workload that does not classify. */
tb_status tb_study_no_error_rate(const char *workload, const char *where, tb_error *err)
{
    return tb_fail(err, TB_ERR_INVALID,
                   "%s%sworkload %s has no error rate (it does not classify): use a loss or "
                   "its own metric (-m validation)", where, where[0] ? ": " : "", workload);
}

tb_status tb_study_prepare_config(tb_study_metric m, tb_run_config *c, tb_error *err)
{
    if (!c || !c->model.workload)
        return tb_fail(err, TB_ERR_INVALID, "study_prepare_config: %s is NULL",
                       c ? "config->workload" : "config");
    const tb_workload_info *w = NULL;
    for (int i = 0; i < tb_workload_count(); i++)
        if (strcmp(tb_workload_info_at(i)->id, c->model.workload) == 0) w = tb_workload_info_at(i);
    if (!w) return tb_fail(err, TB_ERR_INVALID, "unknown workload '%s'", c->model.workload);
    if ((m == TB_METRIC_VALIDATION_ERROR || m == TB_METRIC_TEST_ERROR) && w->no_error_rate)
        return tb_study_no_error_rate(c->model.workload, "", err);
    if (!tb_study_metric_to_target(m)) return TB_OK;
    c->eval.stop_at_target = true;
    if (c->length.max_time_s <= 0) c->length.max_time_s = w->max_runtime_s;
    if (c->eval.period_s <= 0) c->eval.period_s = w->eval_period_s;
    /* the budget ends the run: no step or epoch limit, so the schedule spans the workload's
     * step hint (tb_train) */
    if (c->length.max_steps <= 0) c->length.epochs = 0;
    if (c->length.schedule == TB_SCHEDULE_WARMUP_COSINE) c->length.schedule = TB_SCHEDULE_CONSTANT;
    return TB_OK;
}

uint64_t tb_study_seed(uint64_t seed, tb_stream source, int64_t index)
{
    if (index == 0) return seed;
    tb_rng r = tb_rng_make(seed ^ 0x5eedull, 1000u + (uint64_t)source);
    r.counter = (uint64_t)index;
    return tb_rng_u64(&r);
}


/* One run. TB_OK: *value is metric m (finite, or +inf for a missed target) and, if other is
 * not NULL, *other is metric other_m of the same run (NaN if not finite). TB_ERR_NUMERIC: the
 * run diverged (tb_train said so, or its metric is NaN or infinite), *value is NaN; the study
 * goes on. Any other status is a configuration or system error, returned in err with the run
 * named: the study stops. */
tb_status tb_study_run_one(const tb_run_config *cfg, const tb_study_trainer *trainer,
                           tb_study_metric m, tb_study_metric other_m, double *value,
                           double *other, const char *group, int index, int total,
                           tb_study_run_fn on_run, void *user, tb_error *err)
{
    tb_train_result r;
    tb_error e = {0};
    tb_status st = trainer && trainer->train ? trainer->train(trainer->user, cfg, &r, &e)
                                             : tb_train(cfg, NULL, &r, &e);
    if (on_run) on_run(user, group, index, total, st == TB_OK ? &r : NULL, st == TB_OK ? NULL : &e);
    *value = NAN;
    if (other) *other = NAN;
    if (st == TB_ERR_NUMERIC) return st;
    if (st != TB_OK) {
        *err = e;
        return tb_error_prefix(err, "%s, run %d", group, index);
    }
    double v = tb_study_metric_value(m, &r);
    const bool error_metric = m == TB_METRIC_VALIDATION_ERROR || m == TB_METRIC_TEST_ERROR;
    if (isnan(v) && error_metric && isnan(r.validation.accuracy)) { /* finished: no classes */
        char where[96];
        snprintf(where, sizeof where, "%s, run %d", group, index);
        return tb_study_no_error_rate(cfg->model.workload, where, err);
    }
    if (isnan(v) || (isinf(v) && !tb_study_metric_to_target(m))) return TB_ERR_NUMERIC;
    *value = v;
    if (other) {
        *other = tb_study_metric_value(other_m, &r);
        if (isinf(*other) && !tb_study_metric_to_target(other_m)) *other = NAN;
    }
    return TB_OK;
}


/* The checks of a configuration that tb_train would make only after loading data (workload,
 * algorithm, hyperparameters as tb_optimizer_check_hparams: names, ranges, values that break
 * in float32): done before any training, so a typo in B's algorithm fails at once instead of
 * after A's runs. */
tb_status tb_study_check_base(const tb_run_config *c, const tb_study_trainer *trainer,
                              tb_error *err)
{
    if (!c->model.workload || !c->model.algorithm)
        return tb_fail(err, TB_ERR_INVALID, "the %s is NULL (a study needs a workload and an "
                       "algorithm)", c->model.workload ? "algorithm" : "workload");
    bool known = false;
    for (int i = 0; i < tb_workload_count() && !known; i++)
        known = strcmp(tb_workload_info_at(i)->id, c->model.workload) == 0;
    if (!known) return tb_fail(err, TB_ERR_INVALID, "unknown workload '%s'", c->model.workload);
    if (trainer && trainer->train) return TB_OK; /* not the registry's: its owner loaded it */
    return tb_optimizer_check_hparams(c->model.algorithm, &c->model.hparams, err);
}

