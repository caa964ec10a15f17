/* cmd_hw.c: `trainbench hw`: the hardware suite (docs/HARDWARE.md): the options, and the run
 * made through the library (trainbench/hardware.h: plan, measure, score, record), with its
 * progress on stderr and its errors mapped to exit codes (hw_output.c prints the results). */
#include "cli.h"
#include "hw.h"

#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char hw_usage[] =
    "usage: trainbench hw [options]\n"
    "\n"
    "The hardware suite: how fast this machine trains each workload, with the workload's\n"
    "fixed reference algorithm on its real data, at each thread count (or on the GPU): warm-up\n"
    "steps, then timed windows until --windows observations or the time limit. Reports\n"
    "examples/s (mean over the windows, std% and sem%), ms/step, peak memory, a validation\n"
    "check (the training loss finite throughout and lower at the end than at step 1; a run\n"
    "that fails it or errors is failed, ratio 0), the ratio to the reference machine's\n"
    "examples/s (1.0: as fast as it) and per configuration a score: the weighted geometric\n"
    "mean of the ratios with its 95% interval (0 when a workload failed). Progress (workload,\n"
    "window, ETA) is shown when stderr is a terminal.\n"
    "\n"
    "Across the ranks of an MPI job, on one machine or several:\n"
    "  mpirun -np W trainbench hw --dist --threads T ...\n"
    "each workload trains data-parallel (its batch split into W shards, gradients averaged\n"
    "every step, as train --dist); rank 0 reports the job's examples/s, the largest peak\n"
    "memory of the ranks, a score against the reference machine as a whole (at W x T\n"
    "threads), and the scaling efficiency: examples/s / (W x one process's at T threads on\n"
    "this machine: from a one-process run with the same settings in --db, else from the\n"
    "reference file if it was measured on this machine; otherwise none).\n"
    "\n"
    "options:\n"
    "  -w, --workload ID         a workload (repeatable, or comma-separated; default: the\n"
    "                            five base workloads)\n"
    "  -t, --threads LIST        CPU thread counts, comma-separated (default: 1 and all\n"
    "                            cores); with --dist per rank (default: 1 and each\n"
    "                            rank's share of its machine's cores)\n"
    "      --device NAME         cpu (default) or cuda (one configuration: the GPU)\n"
    "      --warmup N            untimed steps before the windows (default 20; 1 to 1e6)\n"
    "      --windows N           timed windows per run (default 10; 1 to 256)\n"
    "      --window S            a window's least seconds (default 0.5)\n"
    "      --window-steps N      a window's least steps (default 1)\n"
    "      --max-time S          hard limit on one run's wall time from its first step\n"
    "                            (default 60; 0: none); a run it stops with fewer than 2\n"
    "                            windows fails\n"
    "      --lr X                replace the reference learning rate (for checks: the\n"
    "                            examples/s do not depend on it, the validation check does)\n"
    "  -s, --seed N              seed of every source of variation (default 0)\n"
    "      --reference FILE      the reference machine's figures and the weights, or none\n"
    "                            (no ratios, no score); default:\n"
    "                            data/hw_reference.json in " TB_CLI_SHARE_HELP "\n"
    "      --save-reference FILE write this run's figures as a reference file (runs that\n"
    "                            passed only), to make this machine the reference\n"
    "      --db FILE             record the run in a results store (tables hw_runs,\n"
    "                            hw_results, hw_scores)\n"
    "      --data-dir DIR        the data packages' directory (default: Debian's)\n"
    "      --cache-dir DIR       prepared-data cache (default as `trainbench prepare`)\n"
    "      --dist                data-parallel across the ranks of an MPI job (above;\n"
    "                            cpu only; every workload's batch must divide by W);\n"
    "                            without a launcher: one process, as without --dist\n"
    "      --json                print the run as one JSON object on stdout\n"
    "  -q, --quiet               no progress display\n"
    "  -h, --help                this help\n"
    "\n"
    "exit codes: 0 every run passed, 1 a run failed (it is reported and recorded), 2 bad\n"
    "usage or value (a malformed reference file included), 3 data or device missing.\n"
    "\n"
    "example:\n"
    "  trainbench hw -w fmnist_mlp,kjv_transformer --threads 1,2 --db results.db\n"
    "  mpirun -np 2 trainbench hw --dist -w fmnist_mlp --threads 1 --db results.db\n";

/* ---- options ------------------------------------------------------------------------------ */

typedef struct hw_options {
    const char *workloads[TB_HW_MAX_WORKLOADS];
    int threads[TB_HW_MAX_CONFIGS];
    const char *reference, *save_reference, *db;
    bool json, quiet, dist;
} hw_options;

/* Splits a comma-separated list into items[], up to cap; false (with the error) when more. */
static bool split_list(const char *opt, char *text, const char **items, int *n, int cap)
{
    for (char *save = NULL, *tok = strtok_r(text, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        if (*n == cap) {
            tb_cli_error("%s: more than %d values", opt, cap);
            return false;
        }
        items[(*n)++] = tok;
    }
    return true;
}

/* --threads LIST into o->threads (the plan refuses a count listed twice). */
static bool parse_threads(char *text, hw_options *o, tb_hw_request *q)
{
    const char *items[TB_HW_MAX_CONFIGS];
    int n = 0;
    if (!split_list("--threads", text, items, &n, TB_HW_MAX_CONFIGS)) return false;
    for (int i = 0; i < n; i++) {
        long v;
        if (!tb_cli_parse_int("--threads", items[i], 1, TB_CLI_THREADS_MAX, &v)) return false;
        if (q->n_threads == TB_HW_MAX_CONFIGS) { /* --threads given again */
            tb_cli_error("--threads: more than %d values", TB_HW_MAX_CONFIGS);
            return false;
        }
        o->threads[q->n_threads++] = (int)v;
    }
    if (q->n_threads == 0) tb_cli_error("--threads: no thread count given");
    q->threads = o->threads;
    return q->n_threads > 0;
}

enum { NOT_A_VALUE = -2 }; /* parse_value: an option it does not take */

enum { OPT_DEVICE = 1000, OPT_WARMUP, OPT_WINDOWS, OPT_WINDOW, OPT_WINDOW_STEPS, OPT_MAX_TIME,
       OPT_LR, OPT_REFERENCE, OPT_SAVE, OPT_DB, OPT_DATA, OPT_CACHE, OPT_JSON, OPT_DIST };

/* The options with a number or a name, into the request; an exit code (TB_EXIT_OK to go on),
 * or NOT_A_VALUE. */
static int parse_value(int ch, hw_options *o, tb_hw_request *q)
{
    tb_throughput_config *c = &q->settings;
    tb_error err = {0};
    long lv;
    switch (ch) {
    case 'w':
        if (!split_list("--workload", optarg, o->workloads, &q->n_workloads, TB_HW_MAX_WORKLOADS))
            return TB_EXIT_USAGE;
        q->workloads = o->workloads;
        return TB_EXIT_OK;
    case 't': return parse_threads(optarg, o, q) ? TB_EXIT_OK : TB_EXIT_USAGE;
    case OPT_DEVICE:
        if (tb_device_parse(optarg, &q->device, &err) == TB_OK) return TB_EXIT_OK;
        tb_cli_error("--device: %s", err.message);
        return TB_EXIT_USAGE;
    case OPT_WARMUP:
        if (!tb_cli_parse_int("--warmup", optarg, 1, 1000000, &lv)) return TB_EXIT_USAGE;
        c->warmup_steps = (int)lv;
        return TB_EXIT_OK;
    case OPT_WINDOWS:
        if (!tb_cli_parse_int("--windows", optarg, 1, TB_THROUGHPUT_MAX_WINDOWS, &lv))
            return TB_EXIT_USAGE;
        c->windows = (int)lv;
        return TB_EXIT_OK;
    case OPT_WINDOW_STEPS:
        if (!tb_cli_parse_int("--window-steps", optarg, 1, 1000000, &lv)) return TB_EXIT_USAGE;
        c->window_steps = lv;
        return TB_EXIT_OK;
    case OPT_WINDOW:
    case OPT_MAX_TIME: {
        const char *name = ch == OPT_WINDOW ? "--window" : "--max-time";
        double *v = ch == OPT_WINDOW ? &c->window_s : &c->max_time_s;
        if (!tb_cli_parse_double(name, optarg, v)) return TB_EXIT_USAGE;
        if (*v >= 0 && *v <= 1e6) return TB_EXIT_OK;
        tb_cli_error("%s: %s is outside [0, 1e6] seconds", name, optarg);
        return TB_EXIT_USAGE;
    }
    case OPT_LR:
        if (!tb_cli_parse_double("--lr", optarg, &q->lr)) return TB_EXIT_USAGE;
        q->lr_set = true;
        return TB_EXIT_OK;
    case 's': {
        uint64_t seed;
        if (!tb_cli_parse_u64("--seed", optarg, &seed)) return TB_EXIT_USAGE;
        c->seed = seed;
        return TB_EXIT_OK;
    }
    case OPT_DB:
        if (!tb_cli_check_db(optarg)) return TB_EXIT_USAGE;
        o->db = optarg;
        return TB_EXIT_OK;
    default: return NOT_A_VALUE;
    }
}

/* Parses the options into o and the request; an exit code (TB_EXIT_OK to go on, -1 after
 * --help). */
static int parse_options(int argc, char **argv, hw_options *o, tb_hw_request *q)
{
    static const struct option opts[] = {
        {"workload", required_argument, 0, 'w'}, {"threads", required_argument, 0, 't'},
        {"device", required_argument, 0, OPT_DEVICE}, {"warmup", required_argument, 0, OPT_WARMUP},
        {"windows", required_argument, 0, OPT_WINDOWS}, {"window", required_argument, 0, OPT_WINDOW},
        {"window-steps", required_argument, 0, OPT_WINDOW_STEPS},
        {"max-time", required_argument, 0, OPT_MAX_TIME}, {"lr", required_argument, 0, OPT_LR},
        {"seed", required_argument, 0, 's'}, {"reference", required_argument, 0, OPT_REFERENCE},
        {"save-reference", required_argument, 0, OPT_SAVE}, {"db", required_argument, 0, OPT_DB},
        {"data-dir", required_argument, 0, OPT_DATA}, {"cache-dir", required_argument, 0, OPT_CACHE},
        {"json", no_argument, 0, OPT_JSON}, {"quiet", no_argument, 0, 'q'},
        {"dist", no_argument, 0, OPT_DIST},
        {"help", no_argument, 0, 'h'}, {0, 0, 0, 0},
    };
    tb_workload_config *data = &q->settings.data;
    optind = 1;
    opterr = 0;
    int ch;
    while ((ch = getopt_long(argc, argv, ":w:t:s:qh", opts, NULL)) != -1) {
        int rc = parse_value(ch, o, q);
        if (rc != NOT_A_VALUE) {
            if (rc != TB_EXIT_OK) return rc;
            continue;
        }
        switch (ch) {
        case OPT_REFERENCE: o->reference = optarg; break;
        case OPT_SAVE: o->save_reference = optarg; break;
        case OPT_DATA: data->data_dir = optarg; break;
        case OPT_CACHE: data->cache_dir = optarg; break;
        case OPT_JSON: o->json = true; break;
        case OPT_DIST: o->dist = true; break;
        case 'q': o->quiet = true; break;
        case 'h': fputs(hw_usage, stdout); return -1;
        default: return tb_cli_option_error("hw", ch, argv);
        }
    }
    if (tb_cli_no_arguments("hw", argc, argv) != TB_EXIT_OK) return TB_EXIT_USAGE;
    if (q->device != TB_DEVICE_CPU && q->n_threads > 0) {
        tb_cli_error("hw: --threads is for --device cpu (a GPU run is one configuration)");
        return TB_EXIT_USAGE;
    }
    data->cache_dir = tb_cli_cache_dir("hw", data->cache_dir);
    return data->cache_dir ? TB_EXIT_OK : TB_EXIT_USAGE;
}

/* ---- progress ----------------------------------------------------------------------------- */

typedef struct progress {
    int index, total;          /* the run under way, 0-based, of total */
    const char *workload, *config;
    double done_s;             /* wall seconds of the finished runs */
    double per_run_s;          /* the estimate of a run not yet started */
} progress;

/* The progress line; p NULL: the run is starting (data, model, warm-up). */
static void show_progress(void *user, const tb_throughput_progress *p)
{
    progress *s = user;
    int left = s->total - s->index - 1;
    double per = s->index > 0 ? s->done_s / s->index : s->per_run_s;
    double eta = (p ? p->eta_s : per) + left * per + 0.5;
    fprintf(stderr, "\r\033[K[%d/%d] %s, %s: ", s->index + 1, s->total, s->workload, s->config);
    if (!p) fputs("data, model, warm-up", stderr);
    else if (p->window == 0) fprintf(stderr, "warm-up done (%lld steps)", (long long)p->steps);
    else fprintf(stderr, "window %d/%d  %.0f examples/s", p->window, p->windows,
                 p->examples_per_s);
    fprintf(stderr, "  ETA %dm%02ds", (int)(eta / 60), (int)fmod(eta, 60));
    fflush(stderr);
}

/* Measures every row, with the progress line when stderr is a terminal; an exit code (data or
 * a device missing, or a bad value, stop everything). */
static int measure_rows(const hw_options *o, tb_hw_run *run)
{
    bool tty = isatty(STDERR_FILENO) != 0 && !o->quiet;
    progress pg = {.total = run->n_rows};
    const tb_throughput_config *c = &run->settings;
    pg.per_run_s = c->windows * (c->window_s > 0 ? c->window_s : 0.1) + 2;
    if (c->max_time_s > 0 && pg.per_run_s > c->max_time_s) pg.per_run_s = c->max_time_s;
    for (int i = 0; i < run->n_rows; i++) {
        const tb_hw_row *r = &run->rows[i];
        pg.index = i;
        pg.workload = r->workload;
        pg.config = run->configs[r->config].label;
        if (tty) show_progress(&pg, NULL);
        tb_error err = {0};
        tb_status st = tb_hw_measure(run, i, tty ? show_progress : NULL, &pg, &err);
        pg.done_s += r->res.elapsed_s;
        if (tty) fputs("\r\033[K", stderr);
        if (st != TB_OK) {
            if (tb_cli_dist_prints(run->dist, st, &err))
                tb_cli_error("hw: %s, %s: %s", r->workload, pg.config, err.message);
            return tb_cli_exit_code(st);
        }
    }
    return TB_EXIT_OK;
}

/* ---- the run ------------------------------------------------------------------------------ */

/* The plan with its reference, checked against the job; an exit code (rank 0 prints: every
 * rank meets these alike). */
static int plan(const hw_options *o, const tb_hw_request *q, tb_hw_run **run, bool root)
{
    tb_error err = {0};
    if (tb_dist_size(q->dist) > 1 && o->save_reference) {
        if (root)
            tb_cli_error("hw --dist: --save-reference writes one process's figures; measure "
                         "the reference without mpirun");
        return TB_EXIT_USAGE;
    }
    tb_status st = tb_hw_plan(q, run, &err);
    if (st != TB_OK) {
        if (root) tb_cli_error("hw: %s", err.message);
        return tb_cli_exit_code(st);
    }
    if (tb_hw_use_reference(*run, o->reference, &err) != TB_OK) {
        if (root) tb_cli_error("--reference: %s", err.message);
        return TB_EXIT_USAGE; /* a malformed or missing reference file is a bad value */
    }
    return TB_EXIT_OK;
}

/* Rank 0's end: the scaling efficiency, the results printed, the store record and the
 * reference file; an exit code. */
static int report(const hw_options *o, tb_hw_run *run, tb_store *store, const char *command)
{
    tb_error err = {0};
    if (tb_hw_scaling(run, store, &err) != TB_OK) tb_cli_error("--db: %s", err.message);
    if (o->json) tb_cli_hw_print_json(run);
    else tb_cli_hw_print_table(run);
    if (store && tb_hw_record(run, store, NULL, &err) != TB_OK) {
        tb_cli_error("--db: %s", err.message);
        return tb_cli_exit_code(err.status);
    }
    if (o->save_reference && tb_hw_save_reference(run, o->save_reference, command, &err) != TB_OK) {
        tb_cli_error("--save-reference: %s", err.message);
        return TB_EXIT_FAILURE;
    }
    return TB_EXIT_OK;
}

/* Plans, measures, scores and reports (rank 0 alone prints and records); an exit code. */
static int run_suite(const hw_options *o, const tb_hw_request *q, const char *command, bool root)
{
    tb_hw_run *run = NULL;
    tb_store *store = NULL;
    tb_error err = {0};
    int rc = plan(o, q, &run, root);
    if (rc == TB_EXIT_OK && o->db && root && tb_hw_open_store(o->db, &store, &err) != TB_OK) {
        tb_cli_error("--db: %s", err.message); /* before minutes of measuring */
        rc = tb_cli_exit_code(err.status);
    }
    if (tb_dist_size(q->dist) > 1) { /* rank 0's verdict on its store reaches every rank */
        int verdict = rc;
        if (tb_dist_broadcast(q->dist, &verdict, &err) == TB_OK) rc = verdict;
    }
    if (rc == TB_EXIT_OK) rc = measure_rows(o, run);
    if (rc == TB_EXIT_OK) {
        tb_hw_describe_machine(run);
        if (tb_hw_score_run(run, &err) != TB_OK) {
            if (root) tb_cli_error("hw: %s", err.message);
            rc = tb_cli_exit_code(err.status);
        }
    }
    if (rc == TB_EXIT_OK && root) rc = report(o, run, store, command);
    if (rc == TB_EXIT_OK && tb_hw_failures(run) > 0) rc = TB_EXIT_FAILURE;
    tb_store_close(store);
    tb_hw_run_free(run);
    return rc;
}

int tb_cli_hw(int argc, char **argv)
{
    char command[256]; /* as given, for --save-reference (parsing splits the lists) */
    size_t len = (size_t)snprintf(command, sizeof command, "trainbench");
    for (int i = 0; i < argc && len < sizeof command; i++)
        len += (size_t)snprintf(command + len, sizeof command - len, " %s", argv[i]);
    char reference[4096];
    hw_options o = {.reference = tb_cli_share_path("data/hw_reference.json", reference,
                                                   sizeof reference)};
    tb_hw_request q = tb_hw_request_default();
    int rc = parse_options(argc, argv, &o, &q);
    if (rc != TB_EXIT_OK) return rc < 0 ? TB_EXIT_OK : rc;
    /* --dist: this rank of the MPI job (a world of 1 without a launcher); rank 0 prints */
    tb_error err = {0};
    if (!o.dist) tb_cli_dist_warn_undistributed("hardware suite");
    if (o.dist && tb_dist_init(&q.dist, &err) != TB_OK) {
        tb_cli_error("--dist: %s", err.message);
        return tb_cli_exit_code(err.status);
    }
    bool root = tb_dist_rank(q.dist) == 0;
    if (!root) o.quiet = true;
    int most = 0; /* the largest thread count (0: the default's, all cores) */
    for (int i = 0; q.threads && i < q.n_threads; i++)
        if (q.threads[i] > most) most = q.threads[i];
    char busy[400];
    if (root && tb_machine_busy(q.threads ? most : 0, busy, sizeof busy))
        fprintf(stderr, "warning: %s; throughputs measured now will read low and noisy\n",
                busy);
    rc = run_suite(&o, &q, command, root);
    /* every rank ran the same rows to the same verdict: finalise together */
    if (q.dist) {
        int code = tb_cli_dist_finish(q.dist, TB_OK, &err);
        if (rc == TB_EXIT_OK) rc = code;
    }
    return rc;
}
