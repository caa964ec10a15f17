/* cmd_study_file.c: `trainbench study FILE.json`: runs a declarative study (docs/STUDIES.md)
 * and prints its figure and whether the claim was reproduced; `--list` lists the shipped
 * ones. */
#include "study_output.h"

#include <dirent.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char study_usage[] =
    "usage: trainbench study FILE.json|NAME [options]\n"
    "       trainbench study --list\n"
    "\n"
    "Runs a study: a claim of a paper and a plan to check it at CPU scale, given as data (a\n"
    "JSON file, docs/STUDIES.md): a grid of training runs over named axes (algorithm,\n"
    "workload, batch size, steps, a hyperparameter), every cell run with the same seeds, one\n"
    "metric per run. Prints a table of each cell's median (or mean) with its 95% interval,\n"
    "the paired comparisons the study names (P(A>B) with its exact interval and verdict, as\n"
    "`compare`), and whether the claim was reproduced, not reproduced or inconclusive. The\n"
    "whole file, every cell's configuration included, is checked before any training. NAME\n"
    "is a shipped study (the file NAME.json of the studies directory). Progress lines go to\n"
    "stderr. A run that diverges counts as the worst result of its cell.\n"
    "\n"
    "options:\n"
    "      --db FILE             record every run in this results store, and reuse the runs\n"
    "                            it holds (a run is keyed by its whole configuration): a\n"
    "                            study stopped midway resumes without redoing finished runs\n"
    "      --scale S             multiply the steps (or epochs) of every run, its \"seconds\"\n"
    "                            and every tuning trial's budget by S > 0, e.g. 0.25 for a\n"
    "                            quick look; the runs per cell stay the file's \"seeds\"\n"
    "      --seeds N             N runs per cell (2 to 1000) in place of the file's \"seeds\"\n"
    "      --list                list the shipped studies and exit\n"
    "      --studies DIR         where the shipped studies are (default: studies/ in\n"
    "                            " TB_CLI_SHARE_HELP ")\n"
    "      --json                print the figure as JSON on stdout\n"
    "      --out DIR             write each of the file's \"figures\" (variance, rank, curve,\n"
    "                            estimators, utility, regret, echoing, detection,\n"
    "                            stability and stability_curve) as\n"
    "                            DIR/<study>.<figure>.csv and .json\n"
    TB_CLI_THREADS_HELP
    TB_CLI_DEVICE_HELP
    TB_CLI_DATA_HELP
    "  -q, --quiet               no progress lines\n"
    "  -h, --help                this help\n"
    "\n"
    "exit codes: 0 the study ran (whatever its outcome), 2 a malformed study or bad option,\n"
    "3 data missing, 1 any other failure\n";

enum { O_DB = 1000, O_SCALE, O_SEEDS, O_LIST, O_STUDIES, O_JSON, O_OUT };

static void show_run(void *user, int done, int total, int cell, int run, int trial,
                     bool reused, double value, const tb_error *err)
{
    const tb_study_plan *p = user;
    char label[256], what[64];
    tb_study_plan_cell_label(p, cell, label, sizeof label);
    const tb_study_tune *t = tb_study_plan_cell_tune(p, cell);
    if (trial <= -2) snprintf(what, sizeof what, "%s run %d",
                              tb_stream_name(p->fig_sources[-2 - trial]), run + 1);
    else if (trial < 0) snprintf(what, sizeof what, "run %d", run + 1);
    else if (t && tb_study_plan_cell_per_run(p, cell)) snprintf(what, sizeof what, "run %d tuning trial %d", run + 1,
                                       trial + 1);
    else snprintf(what, sizeof what, "tuning trial %d", trial + 1);
    tb_study_metric m = trial < 0 ? p->metric : tb_study_selection_metric(p->metric);
    if (err)
        fprintf(stderr, "[%d/%d] %s %s: diverged%s: %s\n", done, total, label, what,
                reused ? " (recorded)" : "", err->message);
    else
        fprintf(stderr, "[%d/%d] %s %s: %s %.5g%s\n", done, total, label, what,
                tb_study_metric_name(m), value, reused ? " (recorded)" : "");
}

static int filter_json(const struct dirent *d)
{
    size_t n = strlen(d->d_name);
    return d->d_name[0] != '.' && n > 5 && strcmp(d->d_name + n - 5, ".json") == 0;
}

static int list_studies(const char *dir)
{
    struct dirent **names = NULL;
    int n = scandir(dir, &names, filter_json, alphasort);
    if (n < 0) {
        tb_cli_error("study --list: cannot read the studies directory %s", dir);
        return TB_EXIT_FAILURE;
    }
    int rc = TB_EXIT_OK;
    for (int i = 0; i < n; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]->d_name);
        tb_study_plan *p = NULL;
        tb_error err = {0};
        if (tb_study_plan_load(path, &p, &err) == TB_OK) {
            printf("%-24s %d cells x %d runs, %s\n  %s\n  (%s)\n", p->name,
                   tb_study_plan_cells(p), p->seeds, tb_study_metric_name(p->metric), p->claim,
                   p->source);
            tb_study_plan_free(p);
        } else {
            printf("%-24s invalid: %s\n", names[i]->d_name, err.message);
            rc = TB_EXIT_USAGE;
        }
        free(names[i]);
    }
    free(names);
    if (n == 0) printf("no studies in %s\n", dir);
    return rc;
}

/* FILE as given, or NAME of the studies directory. */
static void resolve(const char *arg, const char *dir, char *path, size_t cap)
{
    if (strchr(arg, '/') || strstr(arg, ".json") || access(arg, F_OK) == 0)
        snprintf(path, cap, "%s", arg);
    else
        snprintf(path, cap, "%s/%s.json", dir, arg);
}

static int run_study(tb_study_plan *plan, tb_study_exec_options *o, const char *db, bool json,
                     const char *out_dir)
{
    tb_error err = {0};
    tb_status st = TB_OK;
    if (db) st = tb_store_open(db, &o->store, &err);
    tb_study_values values = {0};
    if (st == TB_OK) st = tb_study_execute(plan, o, &values, &err);
    tb_store_close(o->store);
    tb_study_figure fig = {0};
    tb_study_figures figs = {0};
    if (st == TB_OK) st = tb_study_figure_compute(plan, &values, &fig, &err);
    if (st == TB_OK) st = tb_study_figures_compute(plan, &values, &figs, &err);
    if (st != TB_OK) {
        tb_cli_error("study %s: %s", plan->name, err.message);
        tb_study_figure_free(&fig);
        tb_study_values_free(&values);
        return tb_cli_exit_code(st);
    }
    if (json) tb_cli_study_print_json(plan, &values, &fig, &figs);
    else tb_cli_study_print(plan, &values, &fig, &figs);
    bool written = !out_dir || tb_cli_study_write_figures(plan, &values, &figs, out_dir);
    tb_study_figures_free(&figs);
    tb_study_figure_free(&fig);
    tb_study_values_free(&values);
    return written ? TB_EXIT_OK : TB_EXIT_FAILURE;
}

int tb_cli_study(int argc, char **argv)
{
    char studies_dir[4096];
    const char *db = NULL, *dir = tb_cli_share_path("studies", studies_dir, sizeof studies_dir),
               *out_dir = NULL;
    bool json = false, quiet = false, list = false;
    double scale = 1.0;
    long seeds = 0;
    tb_cli_data data = {0};
    tb_study_exec_options o = {0};
    struct option opts[] = {
        {"db", required_argument, 0, O_DB},         {"scale", required_argument, 0, O_SCALE},
        {"seeds", required_argument, 0, O_SEEDS},   {"list", no_argument, 0, O_LIST},
        {"studies", required_argument, 0, O_STUDIES},
        {"json", no_argument, 0, O_JSON},           {"threads", required_argument, 0, 't'},
        {"out", required_argument, 0, O_OUT},
        {"device", required_argument, 0, TB_OPT_DEVICE}, TB_CLI_DATA_OPTIONS,
        {"quiet", no_argument, 0, 'q'},             {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":t:qh", opts, NULL)) != -1) {
        if (tb_cli_data_option(c, &data)) continue;
        switch (c) {
        case O_DB:
            if (!tb_cli_check_db(optarg)) return TB_EXIT_USAGE;
            db = optarg;
            break;
        case O_SCALE:
            if (!tb_cli_parse_double("--scale", optarg, &scale)) return TB_EXIT_USAGE;
            if (scale <= 0 || scale > 1000) {
                tb_cli_error("--scale: %g is not in (0, 1000]", scale);
                return TB_EXIT_USAGE;
            }
            break;
        case O_SEEDS:
            if (!tb_cli_parse_int("--seeds", optarg, 2, TB_STUDY_MAX_SEEDS, &seeds))
                return TB_EXIT_USAGE;
            break;
        case O_LIST: list = true; break;
        case O_STUDIES: dir = optarg; break;
        case O_JSON: json = true; break;
        case O_OUT: out_dir = optarg; break;
        case 't':
            if (!tb_cli_parse_threads(optarg, &o.backend.threads)) return TB_EXIT_USAGE;
            break;
        case TB_OPT_DEVICE:
            if (!tb_cli_parse_device(optarg, &o.backend.device)) return TB_EXIT_USAGE;
            break;
        case 'q': quiet = true; break;
        case 'h': fputs(study_usage, stdout); return TB_EXIT_OK;
        default: return tb_cli_option_error("study", c, argv);
        }
    }
    if (list) return optind < argc ? tb_cli_no_arguments("study", argc, argv)
                                   : list_studies(dir);
    if (optind >= argc) {
        tb_cli_error("study: give a study file or name (`trainbench study --list` lists the "
                     "shipped ones)");
        return TB_EXIT_USAGE;
    }
    char path[4096];
    resolve(argv[optind++], dir, path, sizeof path);
    if (tb_cli_no_arguments("study", argc, argv) != TB_EXIT_OK) return TB_EXIT_USAGE;
    tb_study_plan *plan = NULL;
    tb_error err = {0};
    tb_status st = tb_study_plan_load(path, &plan, &err);
    if (st == TB_OK && scale != 1.0) st = tb_study_plan_scale(plan, scale, &err);
    if (st == TB_OK && seeds) st = tb_study_plan_set_seeds(plan, (int)seeds, &err);
    if (st != TB_OK) {
        tb_cli_error("%s", err.message);
        tb_study_plan_free(plan);
        return st == TB_ERR_IO ? TB_EXIT_USAGE : tb_cli_exit_code(st);
    }
    if (!tb_cli_data_finish("study", &data)) {
        tb_study_plan_free(plan);
        return TB_EXIT_USAGE;
    }
    o.data_dir = data.data_dir;
    o.cache_dir = data.cache_dir;
    if (!quiet) {
        o.progress = show_run;
        o.user = plan;
    }
    int rc = run_study(plan, &o, db, json, out_dir);
    tb_study_plan_free(plan);
    return rc;
}
