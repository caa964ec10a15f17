/* throughput.c: a throughput run (see trainbench/throughput.h), a driver of the run core:
 * warm-up steps, then timed windows of the run's steps, with the validation check of the
 * training loss (the run core's divergence rule, and a loss that must fall). */
#include "trainbench/throughput.h"

#include "core/clock.h"
#include "trainbench/stats.h"
#include "trainbench/run.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

tb_throughput_config tb_throughput_config_default(void)
{
    tb_throughput_config c;
    memset(&c, 0, sizeof c);
    c.workload = "fmnist_mlp";
    c.algorithm = "sgd";
    c.backend.device = TB_DEVICE_CPU;
    c.warmup_steps = 20;
    c.windows = 1;
    c.window_steps = 1;
    return c;
}

static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Resets the process's peak resident memory (Linux 4.0+; elsewhere nothing happens). */
static void peak_rss_reset(void)
{
    FILE *f = fopen("/proc/self/clear_refs", "w");
    if (!f) return;
    fputs("5", f);
    fclose(f);
}

/* The peak resident memory in MB since the last reset (VmHWM), or since the process started. */
static double peak_rss_mb(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmHWM: %ld kB", &kb) == 1) break;
    if (f) fclose(f);
    if (kb >= 0) return (double)kb / 1024.0;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_maxrss / 1024.0;
}

static tb_status check_config(const tb_throughput_config *c, tb_error *err)
{
    if (!c->workload || !c->algorithm)
        return tb_fail(err, TB_ERR_INVALID, "throughput: a workload and an algorithm are needed");
    if (c->windows < 1 || c->windows > TB_THROUGHPUT_MAX_WINDOWS)
        return tb_fail(err, TB_ERR_INVALID, "throughput: windows must be 1 to %d, got %d",
                       TB_THROUGHPUT_MAX_WINDOWS, c->windows);
    if (c->warmup_steps < 1 || c->window_steps < 1 || c->batch_size < 0)
        return tb_fail(err, TB_ERR_INVALID, "throughput: warm-up steps must be >= 1, window "
                       "steps >= 1 and the batch size >= 0 (got %d, %lld, %d)", c->warmup_steps,
                       (long long)c->window_steps, c->batch_size);
    if (!(c->window_s >= 0 && c->window_s < 1e9) || !(c->max_time_s >= 0 && c->max_time_s < 1e9))
        return tb_fail(err, TB_ERR_INVALID, "throughput: the window's and the time limit's "
                       "seconds must be >= 0 and finite (got %g and %g)", c->window_s,
                       c->max_time_s);
    if (c->cuda_graph && c->warmup_steps < 3)
        return tb_fail(err, TB_ERR_INVALID, "throughput: a CUDA graph needs 3 or more warm-up "
                       "steps (2 eager steps and the captured one), got %d", c->warmup_steps);
    return TB_OK;
}

typedef struct run {
    const tb_throughput_config *cfg;
    tb_throughput_result *res;
    tb_run *run;
    double t_start;
} run;

/* The run core's config of a throughput run: open-ended (the windows end it), at a constant
 * learning rate, every source of variation from the one seed, no evaluations. */
static tb_run_config run_config(const tb_throughput_config *c)
{
    tb_run_config rc = {
        .model = {.workload = c->workload, .algorithm = c->algorithm, .hparams = c->hparams,
                  .backend = c->backend, .cuda_graph = c->cuda_graph},
        .data = {.source = c->data, .batch_size = c->batch_size},
        .length = {.schedule = TB_SCHEDULE_CONSTANT},
        .dist = c->dist,
    };
    tb_run_config_seed_all(&rc, c->seed);
    return rc;
}

static tb_status setup(run *r, tb_error *err)
{
    tb_run_config rc = run_config(r->cfg);
    tb_status st = tb_run_create(&rc, &r->run, err);
    if (st != TB_OK) return st;
    tb_throughput_result *res = r->res;
    snprintf(res->backend, sizeof res->backend, "%s", tb_backend_describe(tb_run_backend(r->run)));
    res->parameters = tb_params_trainable(tb_workload_params(tb_run_workload(r->run)));
    res->batch_size = (int)tb_run_batch_size(r->run);
    return TB_OK;
}

/* One step, its loss not read back (the device's work is not waited for); *n gets its
 * examples. */
static tb_status step(run *r, int64_t *n, tb_error *err)
{
    tb_run_step_info s;
    tb_status st = tb_run_step(r->run, false, &s, err);
    *n = s.examples;
    return st;
}

/* Reads the last step's loss into the result; *finite false, with the reason, when the run
 * core's divergence rule finds it diverged. */
static tb_status read_loss(run *r, bool *finite, tb_error *err)
{
    float loss = NAN;
    tb_error why = {0};
    tb_status st = tb_run_last_loss(r->run, &loss, &why);
    if (st != TB_OK && st != TB_ERR_NUMERIC) {
        if (err) *err = why;
        return st;
    }
    tb_throughput_result *res = r->res;
    int64_t steps = tb_run_steps(r->run);
    if (isnan(res->first_loss)) res->first_loss = loss;
    res->last_loss = loss;
    res->last_loss_step = steps;
    *finite = st == TB_OK;
    if (*finite) return TB_OK;
    static const char prefix[] = "the run diverged: ";
    if (!isfinite(loss))
        snprintf(res->reason, sizeof res->reason, "the training loss is %s at step %lld (not "
                 "finite)", isnan(loss) ? "NaN" : loss > 0 ? "+inf" : "-inf", (long long)steps);
    else
        snprintf(res->reason, sizeof res->reason, "%.255s",
                 strncmp(why.message, prefix, sizeof prefix - 1) == 0
                     ? why.message + sizeof prefix - 1 : why.message);
    return TB_OK;
}

static bool past_limit(const run *r)
{
    return r->cfg->max_time_s > 0 && tb_monotonic_s() - r->t_start > r->cfg->max_time_s;
}

enum { GO_ON, CLOSE, LIMIT }; /* after a step: the window goes on, closes, or the run stops */

/* After a step of the window opened at t_open (steps so far) that returned st: what next.
 * Data-parallel, rank 0's clock decides for every rank (one small collective, as tb_train's
 * verdict after every step), and a failure on any rank reaches every rank. */
static tb_status decide(const run *r, tb_status st, int64_t steps, double t_open, int *next,
                        tb_error *err)
{
    const tb_throughput_config *c = r->cfg;
    *next = past_limit(r) ? LIMIT
            : steps >= c->window_steps && tb_monotonic_s() - t_open >= c->window_s ? CLOSE
                                                                                   : GO_ON;
    return tb_dist_agree_code(c->dist, st, next, err);
}

static void report(run *r, int window, double rate, double t_timed)
{
    const tb_throughput_config *c = r->cfg;
    if (!c->progress) return;
    double now = tb_monotonic_s(), elapsed = now - r->t_start;
    /* the windows left at the mean window's length so far, or at least window_s each */
    double per = window > 0 ? (now - t_timed) / window : c->window_s;
    double eta = (c->windows - window) * per;
    if (c->max_time_s > 0 && eta > c->max_time_s - elapsed) eta = c->max_time_s - elapsed;
    tb_throughput_progress p = {.window = window, .windows = c->windows,
                                .steps = tb_run_steps(r->run),
                                .elapsed_s = elapsed, .examples_per_s = rate,
                                .eta_s = eta > 0 ? eta : 0};
    c->progress(c->progress_user, &p);
}

/* The timed windows, after the warm-up. *ok is false once the loss is not finite. */
static tb_status windows(run *r, bool *ok, tb_error *err)
{
    const tb_throughput_config *c = r->cfg;
    tb_throughput_result *res = r->res;
    tb_backend *be = tb_run_backend(r->run);
    tb_backend_sync(be);
    if (c->profile) {
        tb_tape_set_profiling(tb_run_tape(r->run), true);
        tb_status pst = tb_backend_set_product_profiling(be, true, err);
        if (pst != TB_OK) return pst;
        tb_backend_product_profile_clear(be); /* the timed steps' alone */
    }
    const double t0 = tb_monotonic_s(), c0 = cpu_s();
    const uint64_t f0 = tb_backend_gemm_flops(be);
    double t_open = t0;
    tb_status st = TB_OK;
    int next = GO_ON;
    while (st == TB_OK && *ok && res->windows < c->windows && next != LIMIT) {
        int64_t steps = 0, examples = 0, n = 0;
        for (next = GO_ON; st == TB_OK && next == GO_ON;) {
            st = step(r, &n, err);
            steps++;
            examples += n;
            st = decide(r, st, steps, t_open, &next, err);
        }
        if (st != TB_OK || next == LIMIT) break; /* the time limit drops the open window */
        tb_backend_sync(be); /* the window's queued work is the window's */
        double now = tb_monotonic_s();
        if (c->check_loss) st = read_loss(r, ok, err);
        if (st != TB_OK || !*ok) break;
        double rate = (double)examples / (now - t_open);
        res->window_examples_per_s[res->windows++] = rate;
        res->steps += steps;
        res->examples += examples;
        t_open = now;
        report(r, res->windows, rate, t0);
    }
    res->timed_s = t_open - t0;
    res->cpu_ms_per_step = res->steps > 0 ? 1e3 * (cpu_s() - c0) / (double)res->steps : NAN;
    res->gemm_flops = tb_backend_gemm_flops(be) - f0;
    if (c->profile) res->profile_ops = tb_tape_profile(tb_run_tape(r->run), res->profile,
                                                       TB_THROUGHPUT_PROFILE_MAX);
    if (res->profile_ops > TB_THROUGHPUT_PROFILE_MAX) res->profile_ops = TB_THROUGHPUT_PROFILE_MAX;
    if (c->profile) {
        tb_backend_set_product_profiling(be, false, NULL); /* off: never fails */
        res->product_entries =
            tb_backend_product_profile(be, res->products, TB_THROUGHPUT_PRODUCTS_MAX);
        if (res->product_entries > TB_THROUGHPUT_PRODUCTS_MAX)
            res->product_entries = TB_THROUGHPUT_PRODUCTS_MAX;
    }
    return st;
}

/* The summary of the windows and the validation check. */
static void conclude(const tb_throughput_config *c, tb_throughput_result *res, bool finite)
{
    int k = res->windows;
    res->time_limited = k < c->windows && finite;
    if (k > 0) {
        double mean, std;
        tb_stats_mean_std(res->window_examples_per_s, k, &mean, &std);
        res->examples_per_s = mean;
        res->std_pct = k > 1 ? 100.0 * std / mean : NAN;
        res->sem_pct = k > 1 ? res->std_pct / sqrt((double)k) : NAN;
        res->ms_per_step = 1e3 * res->timed_s / (double)res->steps;
    }
    if (!finite) return; /* the reason is set */
    int needed = c->windows < 2 ? c->windows : 2;
    if (k < needed) {
        snprintf(res->reason, sizeof res->reason, "the time limit (%g s) passed with %d of the "
                 "%d windows (%d needed for a spread)", c->max_time_s, k, c->windows, needed);
        return;
    }
    if (c->check_loss && !(res->last_loss < res->first_loss)) {
        snprintf(res->reason, sizeof res->reason, "the training loss did not fall: %.4g at "
                 "step 1, %.4g at step %lld", res->first_loss, res->last_loss,
                 (long long)res->last_loss_step);
        return;
    }
    res->passed = true;
}

/* Data-parallel, at the end: the weights identical on every rank (after a run every rank
 * agreed on), and the peak memory the largest of the ranks'. */
static tb_status dist_finish(run *r, tb_status st, tb_error *err)
{
    tb_params *p = r->run ? tb_workload_params(tb_run_workload(r->run)) : NULL;
    if (st == TB_OK && p)
        st = tb_dist_check_identical(r->cfg->dist, tb_params_values(p), tb_params_numel(p),
                                     "the weights after the throughput run", err);
    int kb = (int)ceil(r->res->peak_rss_mb * 1024.0);
    tb_error own = {0};
    tb_status mst = tb_dist_max(r->cfg->dist, &kb, &own);
    if (mst == TB_OK) r->res->peak_rss_mb = kb / 1024.0;
    if (st == TB_OK && mst != TB_OK) {
        if (err) *err = own;
        st = mst;
    }
    return st;
}

tb_status tb_throughput_run(const tb_throughput_config *c, tb_throughput_result *res,
                            tb_error *err)
{
    memset(res, 0, sizeof *res);
    res->examples_per_s = res->std_pct = res->sem_pct = res->ms_per_step = NAN;
    res->cpu_ms_per_step = res->first_loss = res->last_loss = NAN;
    res->ranks = tb_dist_size(c->dist);
    tb_status st = check_config(c, err);
    if (st != TB_OK) return st;
    peak_rss_reset();
    run r = {.cfg = c, .res = res};
    /* data-parallel: tb_run_create tells every rank whether every rank could set up, and every
     * step's failure reaches every rank (the windows' decide does the same) */
    st = setup(&r, err);
    r.t_start = tb_monotonic_s();
    bool finite = true;
    for (int i = 0; st == TB_OK && finite && i < c->warmup_steps; i++) {
        tb_backend *be = tb_run_backend(r.run);
        uint64_t f = tb_backend_gemm_flops(be);
        int64_t n;
        st = tb_dist_agree_code(c->dist, step(&r, &n, err), NULL, err);
        if (i == 0 && st == TB_OK) {
            res->step_gemm_flops = tb_backend_gemm_flops(be) - f;
            if (c->check_loss) st = read_loss(&r, &finite, err);
        }
    }
    /* the warm-up's last loss: a run that diverged there stops before its windows */
    if (st == TB_OK && finite && c->check_loss && c->warmup_steps > 1)
        st = read_loss(&r, &finite, err);
    if (st == TB_OK && finite) {
        report(&r, 0, 0, 0);
        st = windows(&r, &finite, err);
    }
    int64_t steps = r.run ? tb_run_steps(r.run) : 0;
    if (st == TB_ERR_NUMERIC && c->check_loss) {
        /* a step that found a NaN or an infinity in its own numbers (a gradient) and stopped
         * before the update: the run did not train, as with a loss that is not finite */
        snprintf(res->reason, sizeof res->reason,
                 "the training loss has a gradient that is not finite (after %lld steps): %.120s",
                 (long long)steps, err ? err->message : "numeric failure");
        finite = false;
        st = TB_OK;
    }
    tb_step_runner *runner = r.run ? tb_run_step_runner(r.run) : NULL;
    if (runner) {
        res->graphed = tb_step_runner_graphed(runner);
        res->graph_replays = tb_step_runner_replays(runner);
        snprintf(res->graph_note, sizeof res->graph_note, "%s", tb_step_runner_note(runner));
    }
    res->elapsed_s = steps > 0 ? tb_monotonic_s() - r.t_start : 0;
    res->peak_rss_mb = peak_rss_mb();
    if (res->ranks > 1) st = dist_finish(&r, st, err);
    tb_run_destroy(r.run);
    if (st == TB_OK) conclude(c, res, finite);
    return st;
}
