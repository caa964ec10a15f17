/* cmd_hw.c: `trainbench hw`: the hardware suite (docs/HARDWARE.md): options and the runs
 * (hw_results.c: ratios, scores, the reference file and the store; hw_output.c: printing). */
#include "cli.h"
#include "hw.h"

#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef TB_HW_REFERENCE
#define TB_HW_REFERENCE "data/hw_reference.json"
#endif

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
    "                            " TB_HW_REFERENCE "\n"
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
    const char *workloads[HW_MAX_WORKLOADS];
    int n_workloads;
    int threads[HW_MAX_CONFIGS];
    int n_threads;
    tb_device device;
    bool lr_set;
    double lr;
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

static bool parse_threads(char *text, hw_options *o)
{
    const char *items[HW_MAX_CONFIGS];
    int n = 0;
    if (!split_list("--threads", text, items, &n, HW_MAX_CONFIGS)) return false;
    for (int i = 0; i < n; i++) {
        long v;
        if (!tb_cli_parse_int("--threads", items[i], 1, 4096, &v)) return false;
        for (int j = 0; j < o->n_threads; j++)
            if (o->threads[j] == v) {
                tb_cli_error("--threads: %ld is listed twice", v);
                return false;
            }
        o->threads[o->n_threads++] = (int)v;
    }
    if (o->n_threads == 0) tb_cli_error("--threads: no thread count given");
    return o->n_threads > 0;
}

enum { OPT_DEVICE = 1000, OPT_WARMUP, OPT_WINDOWS, OPT_WINDOW, OPT_WINDOW_STEPS, OPT_MAX_TIME,
       OPT_LR, OPT_REFERENCE, OPT_SAVE, OPT_DB, OPT_DATA, OPT_CACHE, OPT_JSON, OPT_DIST };

/* Parses the options into o and the run's settings; an exit code (TB_EXIT_OK to go on). */
static int parse_options(int argc, char **argv, hw_options *o, tb_throughput_config *c)
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
    tb_error err = {0};
    long lv;
    optind = 1;
    opterr = 0;
    int ch;
    while ((ch = getopt_long(argc, argv, ":w:t:s:qh", opts, NULL)) != -1) {
        switch (ch) {
        case 'w':
            if (!split_list("--workload", optarg, o->workloads, &o->n_workloads, HW_MAX_WORKLOADS))
                return TB_EXIT_USAGE;
            break;
        case 't':
            if (!parse_threads(optarg, o)) return TB_EXIT_USAGE;
            break;
        case OPT_DEVICE:
            if (tb_device_parse(optarg, &o->device, &err) != TB_OK) {
                tb_cli_error("--device: %s", err.message);
                return TB_EXIT_USAGE;
            }
            break;
        case OPT_WARMUP:
            if (!tb_cli_parse_int("--warmup", optarg, 1, 1000000, &lv)) return TB_EXIT_USAGE;
            c->warmup_steps = (int)lv;
            break;
        case OPT_WINDOWS:
            if (!tb_cli_parse_int("--windows", optarg, 1, TB_THROUGHPUT_MAX_WINDOWS, &lv))
                return TB_EXIT_USAGE;
            c->windows = (int)lv;
            break;
        case OPT_WINDOW_STEPS:
            if (!tb_cli_parse_int("--window-steps", optarg, 1, 1000000, &lv)) return TB_EXIT_USAGE;
            c->window_steps = lv;
            break;
        case OPT_WINDOW:
        case OPT_MAX_TIME: {
            const char *name = ch == OPT_WINDOW ? "--window" : "--max-time";
            double *v = ch == OPT_WINDOW ? &c->window_s : &c->max_time_s;
            if (!tb_cli_parse_double(name, optarg, v)) return TB_EXIT_USAGE;
            if (*v < 0 || *v > 1e6) {
                tb_cli_error("%s: %s is outside [0, 1e6] seconds", name, optarg);
                return TB_EXIT_USAGE;
            }
            break;
        }
        case OPT_LR:
            if (!tb_cli_parse_double("--lr", optarg, &o->lr)) return TB_EXIT_USAGE;
            o->lr_set = true;
            break;
        case 's': {
            uint64_t seed;
            if (!tb_cli_parse_u64("--seed", optarg, &seed)) return TB_EXIT_USAGE;
            c->seed = seed;
            break;
        }
        case OPT_REFERENCE: o->reference = optarg; break;
        case OPT_SAVE: o->save_reference = optarg; break;
        case OPT_DB:
            if (!tb_cli_check_db(optarg)) return TB_EXIT_USAGE;
            o->db = optarg;
            break;
        case OPT_DATA: c->data.data_dir = optarg; break;
        case OPT_CACHE: c->data.cache_dir = optarg; break;
        case OPT_JSON: o->json = true; break;
        case OPT_DIST: o->dist = true; break;
        case 'q': o->quiet = true; break;
        case 'h': fputs(hw_usage, stdout); return -1;
        default: return tb_cli_option_error("hw", ch, argv);
        }
    }
    if (tb_cli_no_arguments("hw", argc, argv) != TB_EXIT_OK) return TB_EXIT_USAGE;
    if (o->device != TB_DEVICE_CPU && o->n_threads > 0) {
        tb_cli_error("hw: --threads is for --device cpu (a GPU run is one configuration)");
        return TB_EXIT_USAGE;
    }
    c->data.cache_dir = tb_cli_cache_dir("hw", c->data.cache_dir);
    return c->data.cache_dir ? TB_EXIT_OK : TB_EXIT_USAGE;
}

/* ---- the runs ----------------------------------------------------------------------------- */

/* The configurations: the GPU, or each thread count (per rank with --dist; default 1 and all
 * cores, or each rank's share of its machine's cores). */
static void plan_configs(const hw_options *o, hw_run *run)
{
    int share = run->cores / tb_dist_node_size(run->dist);
    int def[2] = {1, share}, n = share > 1 ? 2 : 1;
    const int *threads = o->n_threads ? o->threads : def;
    if (o->n_threads) n = o->n_threads;
    if (o->device != TB_DEVICE_CPU) n = 1;
    for (int i = 0; i < n; i++) {
        hw_config *cf = &run->configs[run->n_configs++];
        cf->device = o->device;
        cf->threads = o->device == TB_DEVICE_CPU ? threads[i] : 1;
        if (o->device == TB_DEVICE_CPU && run->ranks > 1)
            snprintf(cf->label, sizeof cf->label, "cpu, %d ranks x %d thread%s", run->ranks,
                     cf->threads, cf->threads == 1 ? "" : "s");
        else if (o->device == TB_DEVICE_CPU)
            snprintf(cf->label, sizeof cf->label, "cpu, %d thread%s", cf->threads,
                     cf->threads == 1 ? "" : "s");
        else
            snprintf(cf->label, sizeof cf->label, "%s", tb_device_name(o->device));
    }
}

/* The rows, workload by workload; an exit code. */
static int plan_rows(const hw_options *o, hw_run *run)
{
    bool root = tb_dist_rank(run->dist) == 0; /* --dist: every rank alike, rank 0 prints */
    const char *def[HW_MAX_WORKLOADS];
    int nw = o->n_workloads;
    const char *const *ids = o->workloads;
    if (nw == 0) {
        nw = tb_hw_default_workloads(def, HW_MAX_WORKLOADS);
        ids = def;
    }
    run->rows = calloc((size_t)nw * (size_t)run->n_configs, sizeof *run->rows);
    if (!run->rows) {
        if (root) tb_cli_error("hw: out of memory");
        return TB_EXIT_FAILURE;
    }
    tb_error err = {0};
    for (int w = 0; w < nw; w++) {
        const char *algorithm;
        tb_hparams hp;
        if (tb_hw_settings(ids[w], &algorithm, &hp, &err) != TB_OK) {
            if (root) tb_cli_error("--workload: %s", err.message);
            return TB_EXIT_USAGE;
        }
        for (int k = 0; k < w; k++)
            if (strcmp(ids[k], ids[w]) == 0) {
                if (root) tb_cli_error("--workload: %s is listed twice", ids[w]);
                return TB_EXIT_USAGE;
            }
        int batch = 0;
        for (int i = 0; i < tb_workload_count(); i++)
            if (strcmp(tb_workload_info_at(i)->id, ids[w]) == 0)
                batch = tb_workload_info_at(i)->default_batch_size;
        if (batch % run->ranks != 0) {
            if (root) tb_cli_error("hw --dist: the batch of %s (%d examples, its calibration baseline's) "
                         "does not divide among %d ranks: run a number of ranks that divides "
                         "every workload's batch, or leave %s out (-w)", ids[w], batch,
                         run->ranks, ids[w]);
            return TB_EXIT_USAGE;
        }
        for (int c = 0; c < run->n_configs; c++) {
            hw_row *r = &run->rows[run->n_rows];
            r->batch_size = batch;
            r->workload = ids[w];
            r->algorithm = algorithm;
            r->config = c;
            r->ratio = r->reference_examples_per_s = NAN;
            r->single_examples_per_s = r->efficiency = NAN;
            run->n_rows++;
        }
    }
    return TB_EXIT_OK;
}

typedef struct progress {
    bool tty;
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

/* Runs every row; an exit code (data or device missing, or a bad value, stop everything). */
static int run_rows(const hw_options *o, hw_run *run)
{
    progress pg = {.tty = isatty(STDERR_FILENO) != 0 && !o->quiet, .total = run->n_rows};
    const tb_throughput_config *c = &run->settings;
    pg.per_run_s = c->windows * (c->window_s > 0 ? c->window_s : 0.1) + 2;
    if (c->max_time_s > 0 && pg.per_run_s > c->max_time_s) pg.per_run_s = c->max_time_s;
    for (int i = 0; i < run->n_rows; i++) {
        hw_row *r = &run->rows[i];
        const hw_config *cf = &run->configs[r->config];
        tb_throughput_config tc = *c;
        tc.workload = r->workload;
        tc.algorithm = r->algorithm;
        tb_hw_settings(r->workload, &tc.algorithm, &tc.hparams, NULL);
        if (o->lr_set) tb_hparams_set(&tc.hparams, "learning_rate", o->lr, NULL);
        tc.backend = (tb_backend_config){.device = cf->device, .threads = cf->threads};
        tc.check_loss = true;
        tc.dist = run->dist;
        pg.index = i;
        pg.workload = r->workload;
        pg.config = cf->label;
        if (pg.tty) {
            tc.progress = show_progress;
            tc.progress_user = &pg;
            show_progress(&pg, NULL);
        }
        tb_error err = {0};
        tb_status st = tb_throughput_run(&tc, &r->res, &err);
        pg.done_s += r->res.elapsed_s;
        if (pg.tty) fputs("\r\033[K", stderr);
        if (st == TB_ERR_MISSING || st == TB_ERR_NO_DEVICE || st == TB_ERR_UNSUPPORTED ||
            st == TB_ERR_INVALID) {
            if (tb_cli_dist_prints(run->dist, st, &err)) tb_cli_error("hw: %s, %s: %s", r->workload, cf->label, err.message);
            return tb_cli_exit_code(st);
        }
        r->failed = st != TB_OK || !r->res.passed;
        snprintf(r->reason, sizeof r->reason, "%s", st != TB_OK ? err.message : r->res.reason);
    }
    return TB_EXIT_OK;
}

/* --dist: the cores of the job's machines (each rank's share of its machine's, summed). */
static int job_cores(const hw_run *run)
{
    float share = (float)run->cores / (float)tb_dist_node_size(run->dist);
    tb_error err = {0};
    if (tb_dist_average(run->dist, &share, 1, &err) != TB_OK) return run->cores * run->ranks;
    return (int)lroundf(share * (float)run->ranks);
}

/* The options checked against the job (every rank alike, rank 0 prints); an exit code. */
static int check_job(const hw_options *o, const hw_run *run, bool root)
{
    if (run->ranks > 1 && o->save_reference) {
        if (root)
            tb_cli_error("hw --dist: --save-reference writes one process's figures; measure "
                         "the reference without mpirun");
        return TB_EXIT_USAGE;
    }
    return TB_EXIT_OK;
}

/* Plans, measures, scores and reports (rank 0 alone prints and records); an exit code. */
static int run_suite(const hw_options *o, hw_run *run, const char *command, bool root)
{
    plan_configs(o, run);
    int rc = check_job(o, run, root);
    if (rc == TB_EXIT_OK) rc = plan_rows(o, run);
    tb_hw_reference *ref = calloc(1, sizeof *ref);
    tb_error err = {0};
    if (ref && strcmp(o->reference, "none") == 0)
        snprintf(ref->path, sizeof ref->path, "none"); /* no figures: no ratio, no score */
    else if (rc == TB_EXIT_OK && (!ref || tb_hw_reference_load(o->reference, ref, &err) != TB_OK)) {
        if (root) tb_cli_error("--reference: %s", ref ? err.message : "out of memory");
        rc = TB_EXIT_USAGE;
    }
    run->ref = ref;
    if (rc == TB_EXIT_OK && o->db && root) { /* a bad store fails before minutes of measuring */
        tb_store *store;
        rc = tb_cli_hw_open_store(o->db, &store);
        tb_store_close(store);
    }
    if (run->ranks > 1) { /* rank 0's verdict on its store reaches every rank */
        int verdict = rc;
        if (tb_dist_broadcast(run->dist, &verdict, &err) == TB_OK) rc = verdict;
    }
    double load_start = tb_cli_hw_load_average();
    if (rc == TB_EXIT_OK) rc = run_rows(o, run);
    if (rc == TB_EXIT_OK) {
        run->job_cores = run->ranks > 1 ? job_cores(run) : run->cores;
        /* the last configuration's backend: all cores by default */
        tb_machine_facts(run->rows[run->n_rows - 1].res.backend, run->cores, run->machine,
                         sizeof run->machine);
        tb_cli_hw_score(run);
    }
    if (rc == TB_EXIT_OK && root) {
        if (run->ranks > 1) tb_cli_hw_scaling(run, o->db);
        if (o->json) tb_cli_hw_print_json(run);
        else tb_cli_hw_print_table(run);
        if (o->db) rc = tb_cli_hw_record(run, o->db);
        if (rc == TB_EXIT_OK && o->save_reference)
            rc = tb_cli_hw_save_reference(run, o->save_reference, command, load_start,
                                           tb_cli_hw_load_average());
    }
    bool failed = false;
    for (int i = 0; rc == TB_EXIT_OK && i < run->n_rows; i++) failed |= run->rows[i].failed;
    free(run->rows);
    free(ref);
    return rc == TB_EXIT_OK && failed ? TB_EXIT_FAILURE : rc;
}

int tb_cli_hw(int argc, char **argv)
{
    char command[256]; /* as given, for --save-reference (parsing splits the lists) */
    size_t len = (size_t)snprintf(command, sizeof command, "trainbench");
    for (int i = 0; i < argc && len < sizeof command; i++)
        len += (size_t)snprintf(command + len, sizeof command - len, " %s", argv[i]);
    hw_options o = {.device = TB_DEVICE_CPU, .reference = TB_HW_REFERENCE};
    hw_run run = {.settings = tb_throughput_config_default(), .level = 0.95, .ranks = 1};
    run.settings.windows = 10;
    run.settings.window_s = 0.5;
    run.settings.max_time_s = 60;
    int rc = parse_options(argc, argv, &o, &run.settings);
    if (rc != TB_EXIT_OK) return rc < 0 ? TB_EXIT_OK : rc;
    run.cores = (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (run.cores < 1) run.cores = 1;
    /* --dist: this rank of the MPI job (a world of 1 without a launcher); rank 0 prints */
    tb_error err = {0};
    if (!o.dist) tb_cli_dist_warn_undistributed("hardware suite");
    if (o.dist && tb_dist_init(&run.dist, &err) != TB_OK) {
        tb_cli_error("--dist: %s", err.message);
        return tb_cli_exit_code(err.status);
    }
    run.ranks = tb_dist_size(run.dist);
    bool root = tb_dist_rank(run.dist) == 0;
    if (!root) o.quiet = true;
    rc = run_suite(&o, &run, command, root);
    /* every rank ran the same rows to the same verdict: finalise together */
    if (run.dist) {
        int code = tb_cli_dist_finish(run.dist, TB_OK, &err);
        if (rc == TB_EXIT_OK) rc = code;
    }
    return rc;
}
