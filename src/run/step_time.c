/* step_time.c: the downstream step time of a run's configuration (the step with its batch at
 * hand: the accelerator's work in Choi et al.'s terms), timed as the benchmark times a step
 * (tb_run_step's host seconds), so that a slow upstream can be stated as a multiple of it
 * (tb_upstream_delay_for). */
#include "trainbench/run.h"
#include "trainbench/stats.h"

#include <math.h>
#include <stdlib.h>

tb_status tb_run_measure_step_s(const tb_run_config *config, const tb_step_time_plan *plan,
                                double *step_s, tb_error *err)
{
    if (!config || !plan || !step_s)
        return tb_fail(err, TB_ERR_INVALID, "measure_step_s: %s is NULL",
                       !config ? "config" : !plan ? "plan" : "step_s");
    if (plan->warmup < 0 || plan->steps < 1 || plan->windows < 1 || plan->windows > 64)
        return tb_fail(err, TB_ERR_INVALID, "step time: warm-up %d (>= 0), steps %d (>= 1) and "
                       "windows %d (1 to 64) out of range", plan->warmup, plan->steps,
                       plan->windows);
    *step_s = NAN;
    /* the upstream out of the way: read inline (a copy of prepared examples, no thread to wait
     * for), no augmentation (upstream work, on the upstream's side of the ratio), no echoing,
     * no stated cost */
    tb_run_config c = *config;
    c.data.pipeline.echo = TB_ECHO_NONE;
    c.data.pipeline.echo_factor = 0;
    c.data.pipeline.upstream_delay_s = 0;
    c.data.pipeline.augment = false;
    c.data.pipeline.prefetch = -1;
    c.length.max_time_s = 0;
    c.length.epochs = 0;
    c.length.max_steps = plan->warmup + (int64_t)plan->steps * plan->windows;
    c.eval = (tb_run_eval){0};
    tb_run *r = NULL;
    tb_status st = tb_run_create(&c, &r, err);
    double windows[64];
    for (int i = 0; st == TB_OK && i < plan->warmup; i++) st = tb_run_step(r, true, NULL, err);
    for (int w = 0; st == TB_OK && w < plan->windows; w++) {
        double t0 = tb_run_timed_s(r);
        for (int i = 0; st == TB_OK && i < plan->steps; i++) st = tb_run_step(r, true, NULL, err);
        windows[w] = (tb_run_timed_s(r) - t0) / plan->steps;
    }
    tb_run_destroy(r);
    if (st != TB_OK) return tb_error_prefix(err, "measuring the step time");
    tb_stats_sort(windows, plan->windows);
    *step_s = tb_quantile_sorted(windows, plan->windows, 0.5);
    return TB_OK;
}

tb_status tb_upstream_delay_for(double slowdown, double step_s, int64_t batch_size,
                                double *delay_s, tb_error *err)
{
    if (!delay_s) return tb_fail(err, TB_ERR_INVALID, "upstream_delay_for: delay_s is NULL");
    if (!(slowdown > 0 && slowdown <= 1000))
        return tb_fail(err, TB_ERR_INVALID, "upstream slowdown %g is not in (0, 1000] (times "
                       "the step time)", slowdown);
    if (!(step_s > 0 && isfinite(step_s)) || batch_size < 1)
        return tb_fail(err, TB_ERR_INVALID, "upstream slowdown: step time %g s and batch size "
                       "%lld must be positive", step_s, (long long)batch_size);
    *delay_s = slowdown * step_s / (double)batch_size;
    if (!(*delay_s < 10))
        return tb_fail(err, TB_ERR_INVALID, "upstream slowdown %g x %g s over %lld examples is "
                       "%g s per example, past the pipeline's 10 s", slowdown, step_s,
                       (long long)batch_size, *delay_s);
    return TB_OK;
}
