/* throughput.c: a throughput run (see trainbench/throughput.h): warm-up steps, then timed
 * windows, with the validation check of the training loss. */
#include "trainbench/throughput.h"

#include "core/clock.h"
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

/* The step's model: the workload's forward pass and loss. */
static tb_var *step_loss(void *user, tb_tape *tape, const tb_batch *b, tb_rng *dropout,
                         tb_error *err)
{
    (void)err;
    tb_workload *wl = user;
    return tb_workload_loss_fn(wl, tape, tb_workload_forward(wl, tape, b->inputs, dropout),
                               b->targets);
}

static tb_status setup(run *r, tb_error *err)
{
    const tb_throughput_config *c = r->cfg;
    tb_status st = tb_backend_create(&c->backend, &r->be, err);
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
    st = tb_workload_init(r->wl, &init, err);
    if (st == TB_OK) st = tb_tape_create(r->be, &r->tape, err);
    if (st == TB_OK)
        st = tb_optimizer_create(c->algorithm, tb_workload_params(r->wl), &c->hparams, &r->opt,
                                 err);
    tb_pipeline_config pc = {.batch_size = r->res->batch_size, .data_order_seed = c->seed,
                             .augment_seed = c->seed};
    if (st == TB_OK) st = tb_pipeline_create(r->wl, &pc, &r->pipe, err);
    tb_step_config sc = {.loss = step_loss, .user = r->wl, .cuda_graph = c->cuda_graph};
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
    float loss;
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
    while (st == TB_OK && *ok && res->windows < c->windows && !past_limit(r)) {
        int64_t steps = 0, examples = 0, n = 0;
        double now = t_open;
        while (st == TB_OK && !past_limit(r) &&
               (steps < c->window_steps || now - t_open < c->window_s)) {
            st = step(r, &n, err);
            steps++;
            examples += n;
            now = tb_monotonic_s();
        }
        if (st != TB_OK) break;
        tb_backend_sync(r->be); /* the window's queued work is the window's */
        now = tb_monotonic_s();
        if (steps < c->window_steps || now - t_open < c->window_s) break; /* the time limit */
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

tb_status tb_throughput_run(const tb_throughput_config *c, tb_throughput_result *res,
                            tb_error *err)
{
    memset(res, 0, sizeof *res);
    res->examples_per_s = res->std_pct = res->sem_pct = res->ms_per_step = NAN;
    res->cpu_ms_per_step = res->first_loss = res->last_loss = NAN;
    tb_status st = check_config(c, err);
    if (st != TB_OK) return st;
    peak_rss_reset();
    run r = {.cfg = c, .res = res};
    st = setup(&r, err);
    r.t_start = tb_monotonic_s();
    bool finite = true;
    for (int i = 0; st == TB_OK && finite && i < c->warmup_steps; i++) {
        uint64_t f = tb_backend_gemm_flops(r.be);
        int64_t n;
        st = step(&r, &n, err);
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
    teardown(&r);
    if (st == TB_OK) conclude(c, res, finite);
    return st;
}
