/* cmd_export.c: `trainbench export`: a results store as CSV or JSON lines. */
#include "cli.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char export_usage[] =
    "usage: trainbench export [options]\n"
    "\n"
    "Writes the trials of a results store: csv has one row per eval (the trial's keys, then\n"
    "AlgoPerf's eval_measurements.csv columns: global_step, accumulated_submission_time,\n"
    "accumulated_eval_time, train/validation/test metrics, ...), and one row with empty eval\n"
    "columns for a trial without evals (failed before its first, or not run); jsonl one object\n"
    "per trial (hyperparameters, seeds, outcome, code version, machine facts, evals).\n"
    "\n"
    "usage: trainbench export --format algoperf [options] DIR\n"
    "\n"
    "Writes one benchmark's trials as AlgoPerf's experiment tree, which its scoring code reads\n"
    "unchanged: DIR/<submission>/study_<s>/<workload>_pytorch/trial_<t>/eval_measurements.csv\n"
    "(trials numbered from 1) and hparams.json; see docs/TIME_TO_RESULT.md for what AlgoPerf\n"
    "does and does not do with it.\n"
    "\n"
    "options:\n"
    "      --db FILE          results store (default results.db)\n"
    "      --name NAME        only this benchmark (default: all; one the store lacks is an\n"
    "                         error; algoperf: the store's only benchmark)\n"
    "      --runs KIND        trials (default), hardware (`hw --db` runs: csv a row per\n"
    "                         result and per configuration's score, jsonl an object per\n"
    "                         run) or studies (`study --db` runs: a row or object each)\n"
    "      --format FORMAT    csv (default), jsonl or algoperf (trials only)\n"
    "      --replace          algoperf: replace DIR if it exists and is not empty (otherwise\n"
    "                         refused); the new tree is complete before the old one goes\n"
    "  -o, --output FILE      write to FILE (default: stdout; algoperf: the DIR): a regular\n"
    "                         file is written whole or not at all (a temporary file\n"
    "                         renamed into place); the store itself is refused\n"
    "  -h, --help             this help\n";

/* Is `path` the store `db` (or one of SQLite's files beside it)? Compared by device and inode,
 * so another name for the same file counts. */
static bool is_store_file(const char *db, const char *path)
{
    struct stat out;
    if (stat(path, &out) != 0) return false;
    const char *suffix[] = {"", "-wal", "-shm", "-journal"};
    for (size_t i = 0; i < sizeof suffix / sizeof *suffix; i++) {
        char name[4096];
        struct stat st;
        if (snprintf(name, sizeof name, "%s%s", db, suffix[i]) >= (int)sizeof name) continue;
        if (stat(name, &st) == 0 && st.st_dev == out.st_dev && st.st_ino == out.st_ino)
            return true;
    }
    return false;
}

typedef enum export_runs { RUNS_TRIALS, RUNS_HARDWARE, RUNS_STUDIES } export_runs;

static bool runs_parse(const char *name, export_runs *out)
{
    static const char *const names[] = {"trials", "hardware", "studies"};
    for (int i = 0; i < 3; i++)
        if (strcmp(name, names[i]) == 0) return *out = (export_runs)i, true;
    return false;
}

static tb_status write_export(tb_store *store, const char *name, export_runs runs,
                              tb_export_format format, FILE *f, tb_error *err)
{
    if (runs == RUNS_HARDWARE) return tb_store_export_hw(store, format, f, err);
    if (runs == RUNS_STUDIES) return tb_store_export_studies(store, format, f, err);
    return tb_store_export(store, name, format, f, err);
}

/* Writes the export to `output`. A regular file (or a new one) is written beside it under a
 * temporary name and renamed over it only when complete, so a failure leaves the old file (or
 * none); anything else (a pipe, /dev/stdout) is written in place. */
static tb_status export_to_file(tb_store *store, const char *name, export_runs runs,
                                tb_export_format format, const char *db, const char *output,
                                tb_error *err)
{
    if (is_store_file(db, output))
        return tb_fail(err, TB_ERR_INVALID,
                       "refusing to write the export over the results store %s (-o %s)", db,
                       output);
    struct stat st;
    bool in_place = stat(output, &st) == 0 && !S_ISREG(st.st_mode);
    char tmp[4096];
    if (!in_place &&
        snprintf(tmp, sizeof tmp, "%s.tmp.%ld", output, (long)getpid()) >= (int)sizeof tmp)
        return tb_fail(err, TB_ERR_INVALID, "output path too long: %s", output);
    const char *path = in_place ? output : tmp;
    FILE *f = fopen(path, "w");
    if (!f) return tb_fail(err, TB_ERR_IO, "cannot write %s: %s", output, strerror(errno));
    tb_status s = write_export(store, name, runs, format, f, err);
    if (fclose(f) != 0 && s == TB_OK)
        s = tb_fail(err, TB_ERR_IO, "cannot write %s: %s", output, strerror(errno));
    if (!in_place) {
        if (s == TB_OK && rename(tmp, output) != 0)
            s = tb_fail(err, TB_ERR_IO, "cannot write %s: %s", output, strerror(errno));
        if (s != TB_OK) remove(tmp);
    }
    return s;
}

int tb_cli_export(int argc, char **argv)
{
    const char *db = "results.db", *name = NULL, *output = NULL;
    tb_export_format format = TB_EXPORT_CSV;
    tb_error err = {0};
    bool replace = false;
    export_runs runs = RUNS_TRIALS;
    enum { OPT_DB = 1000, OPT_NAME, OPT_FORMAT, OPT_REPLACE, OPT_RUNS };
    struct option opts[] = {
        {"db", required_argument, 0, OPT_DB},
        {"name", required_argument, 0, OPT_NAME},
        {"format", required_argument, 0, OPT_FORMAT},
        {"replace", no_argument, 0, OPT_REPLACE},
        {"runs", required_argument, 0, OPT_RUNS},
        {"output", required_argument, 0, 'o'},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":o:h", opts, NULL)) != -1) {
        switch (c) {
        case OPT_DB:
            if (!tb_cli_check_db(optarg)) return TB_EXIT_USAGE;
            db = optarg;
            break;
        case OPT_NAME: name = optarg; break;
        case OPT_FORMAT:
            if (tb_export_format_parse(optarg, &format, &err) != TB_OK)
                return tb_cli_error("--format: %s", err.message), TB_EXIT_USAGE;
            break;
        case OPT_REPLACE: replace = true; break;
        case OPT_RUNS:
            if (!runs_parse(optarg, &runs))
                return tb_cli_error("--runs: '%s' is not trials, hardware or studies", optarg),
                       TB_EXIT_USAGE;
            break;
        case 'o': output = optarg; break;
        case 'h': fputs(export_usage, stdout); return TB_EXIT_OK;
        default: return tb_cli_option_error("export", c, argv);
        }
    }
    if (format == TB_EXPORT_ALGOPERF && !output && optind < argc) output = argv[optind++];
    if (tb_cli_no_arguments("export", argc, argv) != TB_EXIT_OK) return TB_EXIT_USAGE;
    if (runs != RUNS_TRIALS && (name || format == TB_EXPORT_ALGOPERF))
        return tb_cli_error("export --runs %s: %s", runs == RUNS_HARDWARE ? "hardware" : "studies",
                            name ? "--name picks a benchmark's trials"
                                 : "AlgoPerf's layout holds trials (csv or jsonl)"),
               TB_EXIT_USAGE;
    if (format == TB_EXPORT_ALGOPERF && !output)
        return tb_cli_error("export --format algoperf: which directory? (DIR or -o DIR)"),
               TB_EXIT_USAGE;
    tb_store *store;
    tb_status st = tb_store_open_readonly(db, &store, &err);
    if (st != TB_OK) {
        tb_cli_error("%s", err.message);
        return tb_cli_exit_code(st);
    }
    if (format == TB_EXPORT_ALGOPERF)
        st = tb_store_export_algoperf(store, name, output, replace, &err);
    else
        st = output ? export_to_file(store, name, runs, format, db, output, &err)
                    : write_export(store, name, runs, format, stdout, &err);
    tb_store_close(store);
    if (st != TB_OK) {
        tb_cli_error("%s", err.message);
        return tb_cli_exit_code(st);
    }
    return TB_EXIT_OK;
}
