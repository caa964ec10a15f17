/* exec.c: runs a study plan's runs, reusing and recording them in a results store. */
#include "trainbench/machine.h"
#include "trainbench/study_plan.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Appends to buf (cap bytes) at *len; a key that does not fit is an error (TB_ERR_INVALID). */
__attribute__((format(printf, 4, 5))) static bool put(char *buf, size_t cap, size_t *len,
                                                      const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = *len < cap ? vsnprintf(buf + *len, cap - *len, fmt, ap) : -1;
    va_end(ap);
    if (n < 0 || *len + (size_t)n >= cap) return false;
    *len += (size_t)n;
    return true;
}

/* The run's whole configuration as text: what the store keys the run by. The hyperparameters
 * resolved (tb_hparams_resolve: every one, defaults filled in, aliases settled, in the
 * registry's order), so that a default given or left out, the order a file gives them in, or
 * nadamw's beta1 against one_minus_beta1 make the same key. */
static tb_status run_key(const tb_run_config *c, char *buf, size_t cap, tb_error *err)
{
    tb_hparams hp;
    tb_status st = tb_hparams_resolve(c->model.algorithm, &c->model.hparams, &hp, NULL, err);
    if (st != TB_OK) return st;
    size_t len = 0;
    bool ok = put(buf, cap, &len, "workload=%s algorithm=%s hparams={", c->model.workload,
                  c->model.algorithm);
    for (int i = 0; i < hp.count && ok; i++)
        ok = put(buf, cap, &len, "%s%s=%.17g", i ? "," : "", hp.names[i], hp.values[i]);
    ok = ok && put(buf, cap, &len,
                   "} batch_size=%d steps=%lld epochs=%.17g schedule=%s warmup=%.17g "
                   "evals=%d eval_examples=%lld split=%d stop_at_target=%d max_time_s=%.17g "
                   "eval_period_s=%.17g device=%s precision=%s echo=%s echo_factor=%.17g "
                   "augment=%d shuffle_buffer=%lld seeds=",
                   c->data.batch_size, (long long)c->length.max_steps, c->length.epochs,
                   tb_schedule_name(c->length.schedule), c->length.warmup_fraction, c->eval.during,
                   (long long)c->eval.examples, (int)c->data.source.split_kind, (int)c->eval.stop_at_target,
                   c->length.max_time_s, c->eval.period_s, tb_device_name(c->model.backend.device),
                   tb_precision_name(c->model.backend.precision), tb_echo_kind_name(c->data.pipeline.echo),
                   c->data.pipeline.echo_factor, (int)c->data.pipeline.augment,
                   (long long)c->data.pipeline.shuffle_buffer);
    for (int s = 0; s < TB_STREAM_COUNT && ok; s++)
        ok = put(buf, cap, &len, "%s%llu", s ? "," : "", (unsigned long long)c->seeds[s]);
    return ok ? TB_OK : tb_fail(err, TB_ERR_INVALID, "a study run's configuration is longer "
                                "than %zu characters", cap - 1);
}

/* The metric of a finished run: +inf if it diverged or its value is not finite (a missed
 * target under time_to_target is +inf already). */
static double run_value(tb_study_metric m, const tb_train_result *r, bool diverged)
{
    if (diverged) return INFINITY;
    double v = tb_study_metric_value(m, r);
    return isfinite(v) || (isinf(v) && m == TB_METRIC_TIME_TO_TARGET) ? v : INFINITY;
}

/* One run: from the store if it holds it, else trained (and recorded). */
static tb_status one_run(const tb_study_plan *plan, const tb_study_exec_options *o, int cell,
                         int run, tb_study_run_record *rec, bool *reused, tb_error *err)
{
    tb_run_config cfg;
    tb_status st = tb_study_plan_run_config(plan, cell, run, &cfg, err);
    if (st != TB_OK) return st;
    cfg.model.backend = o->backend;
    cfg.data.source.data_dir = o->data_dir;
    cfg.data.source.cache_dir = o->cache_dir;
    if ((st = run_key(&cfg, rec->key, sizeof rec->key, err)) != TB_OK) return st;
    *reused = false;
    if (o->store) {
        st = tb_store_get_study_run(o->store, rec->key, rec, reused, err);
        if (st != TB_OK || *reused) return st;
    }
    snprintf(rec->study, sizeof rec->study, "%s", plan->name);
    tb_error e = {0};
    st = tb_train(&cfg, NULL, &rec->result, &e);
    if (st != TB_OK && st != TB_ERR_NUMERIC) {
        *err = e;
        return st;
    }
    rec->diverged = st == TB_ERR_NUMERIC;
    snprintf(rec->reason, sizeof rec->reason, "%s", rec->diverged ? e.message : "");
    return o->store ? tb_store_put_study_run(o->store, rec, tb_code_version(), err) : TB_OK;
}

tb_status tb_study_execute(const tb_study_plan *plan, const tb_study_exec_options *opts,
                           tb_study_values *out, tb_error *err)
{
    if (!plan || !opts || !out)
        return tb_fail(err, TB_ERR_INVALID, "study_execute: %s is NULL",
                       !plan ? "plan" : !opts ? "options" : "out");
    memset(out, 0, sizeof *out);
    out->cells = tb_study_plan_cells(plan);
    out->seeds = plan->seeds;
    out->v = malloc((size_t)out->cells * (size_t)out->seeds * sizeof(double));
    tb_study_run_record *rec = malloc(sizeof *rec);
    if (!out->v || !rec) {
        free(rec);
        tb_study_values_free(out);
        return tb_fail(err, TB_ERR_NOMEM, "out of memory for a study's results");
    }
    const int total = out->cells * out->seeds;
    tb_status st = TB_OK;
    for (int run = 0; run < out->seeds && st == TB_OK; run++)
        for (int cell = 0; cell < out->cells && st == TB_OK; cell++) {
            memset(rec, 0, sizeof *rec);
            bool reused = false;
            st = one_run(plan, opts, cell, run, rec, &reused, err);
            if (st != TB_OK) {
                char label[256];
                tb_study_plan_cell_label(plan, cell, label, sizeof label);
                tb_error_prefix(err, "%s, run %d", label, run + 1);
                break;
            }
            double v = run_value(plan->metric, &rec->result, rec->diverged);
            out->v[cell * out->seeds + run] = v;
            if (reused) out->reused++;
            else out->trained++;
            if (opts->progress) {
                tb_error why = {0};
                if (rec->diverged) snprintf(why.message, sizeof why.message, "%s", rec->reason);
                opts->progress(opts->user, run * out->cells + cell + 1, total, cell, run,
                               reused, rec->diverged ? NAN : v, rec->diverged ? &why : NULL);
            }
        }
    free(rec);
    if (st != TB_OK) tb_study_values_free(out);
    return st;
}

void tb_study_values_free(tb_study_values *values)
{
    if (!values) return;
    free(values->v);
    memset(values, 0, sizeof *values);
}
