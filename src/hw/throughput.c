/* throughput.c: a throughput run (see trainbench/throughput.h): warm-up steps, then timed
 * windows, with the validation check of the training loss. */
#include "trainbench/throughput.h"

#include "core/clock.h"
#include "run/train_dist.h"
#include "stats/stats_impl.h"
#include "trainbench/pipeline.h"
#include "trainbench/step.h"

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
    tb_backend *be;
    tb_workload *wl;
    tb_tape *tape;
    tb_optimizer *opt;
    tb_pipeline *pipe;
    tb_step_runner *runner;
    tb_rng dropout;
    double t_start;
    int64_t steps; /* all, warm-up included */
} run;

/* The step's model: the workload's forward pass and loss, on this rank's shard of the batch
 * (data-parallel) or the whole batch. */
static tb_var *step_loss(void *user, tb_tape *tape, const tb_batch *b, tb_rng *dropout,
                         tb_error *err)
{
    run *r = user;
    tb_batch shard;
    if (tb_train_dist_shard(r->cfg->dist, tape, b, &shard, err) != TB_OK) return NULL;
    return tb_workload_loss_fn(r->wl, tape,
                               tb_workload_forward(r->wl, tape, shard.inputs, dropout),
                               shard.targets);
}

/* Data-parallel: the gradients and the loss averaged across ranks before the update, as in
 * tb_train; the averaged loss is the step's loss, the one the validation check reads. */
static tb_status step_reduce(void *user, float *loss, tb_error *err)
{
    run *r = user;
    return tb_train_dist_reduce(r->cfg->dist, tb_workload_params(r->wl), loss, err);
}

static tb_status setup(run *r, tb_error *err)
{
    const tb_throughput_config *c = r->cfg;
    tb_status st = tb_dist_refusals(c->dist, c->backend.device, c->cuda_graph, NULL, 0, err);
    if (st != TB_OK) return st;
    st = tb_backend_create(&c->backend, &r->be, err);
    if (st != TB_OK) return st;
    snprintf(r->res->backend, sizeof r->res->backend, "%s", tb_backend_describe(r->be));
    tb_workload_config wc = c->data;
    wc.split_seed = c->seed;
    st = tb_workload_create(c->workload, r->be, &wc, &r->wl, err);
    if (st != TB_OK) return st;
    r->res->parameters = tb_params_trainable(tb_workload_params(r->wl));
    r->res->batch_size = c->batch_size > 0 ? c->batch_size
                                           : tb_workload_get_info(r->wl)->default_batch_size;
    tb_rng init = tb_rng_make(c->seed, TB_STREAM_INIT);
    r->dropout = tb_rng_make(c->seed, TB_STREAM_DROPOUT);
    tb_train_dist_dropout(c->dist, &r->dropout);
    st = tb_workload_init(r->wl, &init, err);
    if (st == TB_OK) st = tb_tape_create(r->be, &r->tape, err);
    if (st == TB_OK)
        st = tb_optimizer_create(c->algorithm, tb_workload_params(r->wl), &c->hparams, &r->opt,
                                 err);
    if (st == TB_OK)
        st = tb_dist_refusals(c->dist, c->backend.device, c->cuda_graph, r->opt,
                              r->res->batch_size, err);
    tb_pipeline_config pc = {.batch_size = r->res->batch_size, .data_order_seed = c->seed,
                             .augment_seed = c->seed};
    if (st == TB_OK) st = tb_pipeline_create(r->wl, &pc, &r->pipe, err);
    tb_step_config sc = {.loss = step_loss, .user = r, .cuda_graph = c->cuda_graph,
                         .reduce = tb_dist_size(c->dist) > 1 ? step_reduce : NULL};
    if (st == TB_OK)
        st = tb_step_runner_create(r->tape, tb_workload_params(r->wl), r->opt, &sc, &r->runner,
                                   err);
    return st;
}

static void teardown(run *r)
{
    tb_step_runner_destroy(r->runner);
    tb_pipeline_destroy(r->pipe);
    tb_optimizer_destroy(r->opt);
    tb_tape_destroy(r->tape);
    tb_workload_destroy(r->wl);
    tb_backend_destroy(r->be);
}

/* One step; *n gets its examples. */
static tb_status step(run *r, int64_t *n, tb_error *err)
{
    tb_status st = tb_step_runner_step(r->runner, r->pipe, 1.0, &r->dropout, NULL, n, err);
    if (st == TB_OK) r->steps++;
    return st;
}

/* Reads the last step's loss into the result; *finite false (with the reason) if it is not. */
static tb_status read_loss(run *r, bool *finite, tb_error *err)
{
    float loss = NAN;
    tb_status st = tb_step_runner_last_loss(r->runner, &loss, err);
    if (st != TB_OK) return st;
    tb_throughput_result *res = r->res;
    if (isnan(res->first_loss)) res->first_loss = loss;
    res->last_loss = loss;
    res->last_loss_step = r->steps;
    *finite = isfinite(loss);
    if (!*finite)
        snprintf(res->reason, sizeof res->reason, "the training loss is %s at step %lld (not "
                 "finite)", isnan(loss) ? "NaN" : loss > 0 ? "+inf" : "-inf", (long long)r->steps);
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
    return tb_train_dist_agree_code(c->dist, st, next, err);
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
    tb_throughput_progress p = {.window = window, .windows = c->windows, .steps = r->steps,
                                .elapsed_s = elapsed, .examples_per_s = rate,
                                .eta_s = eta > 0 ? eta : 0};
    c->progress(c->progress_user, &p);
}

/* The timed windows, after the warm-up. *ok is false once the loss is not finite. */
static tb_status windows(run *r, bool *ok, tb_error *err)
{
    const tb_throughput_config *c = r->cfg;
    tb_throughput_result *res = r->res;
    tb_backend_sync(r->be);
    if (c->profile) tb_tape_set_profiling(r->tape, true);
    const double t0 = tb_monotonic_s(), c0 = cpu_s();
    const uint64_t f0 = tb_backend_gemm_flops(r->be);
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
        tb_backend_sync(r->be); /* the window's queued work is the window's */
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
    res->gemm_flops = tb_backend_gemm_flops(r->be) - f0;
    if (c->profile) res->profile_ops = tb_tape_profile(r->tape, res->profile,
                                                       TB_THROUGHPUT_PROFILE_MAX);
    if (res->profile_ops > TB_THROUGHPUT_PROFILE_MAX) res->profile_ops = TB_THROUGHPUT_PROFILE_MAX;
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
    tb_params *p = r->wl ? tb_workload_params(r->wl) : NULL;
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
    /* data-parallel: every rank learns whether every rank could set up, and every step's
     * failure reaches every rank (the windows' decide does the same) */
    st = tb_train_dist_agree_code(c->dist, setup(&r, err), NULL, err);
    r.t_start = tb_monotonic_s();
    bool finite = true;
    for (int i = 0; st == TB_OK && finite && i < c->warmup_steps; i++) {
        uint64_t f = tb_backend_gemm_flops(r.be);
        int64_t n;
        st = tb_train_dist_agree_code(c->dist, step(&r, &n, err), NULL, err);
        if (i == 0 && st == TB_OK) {
            res->step_gemm_flops = tb_backend_gemm_flops(r.be) - f;
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
    if (st == TB_ERR_NUMERIC && c->check_loss) {
        /* a step that found a NaN or an infinity in its own numbers (a gradient) and stopped
         * before the update: the run did not train, as with a loss that is not finite */
        snprintf(res->reason, sizeof res->reason,
                 "the training loss has a gradient that is not finite (after %lld steps): %.120s",
                 (long long)r.steps, err ? err->message : "numeric failure");
        finite = false;
        st = TB_OK;
    }
    if (r.runner) {
        res->graphed = tb_step_runner_graphed(r.runner);
        res->graph_replays = tb_step_runner_replays(r.runner);
        snprintf(res->graph_note, sizeof res->graph_note, "%s", tb_step_runner_note(r.runner));
    }
    res->elapsed_s = r.steps > 0 ? tb_monotonic_s() - r.t_start : 0;
    res->peak_rss_mb = peak_rss_mb();
    if (res->ranks > 1) st = dist_finish(&r, st, err);
    teardown(&r);
    if (st == TB_OK) conclude(c, res, finite);
    return st;
}
