/* cmd_export.c: `trainbench export`: a results store as CSV or JSON lines. */
#include "cli.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

static const char export_usage[] =
    "usage: trainbench export [options]\n"
    "\n"
    "Writes the trials of a results store: csv has one row per eval (the trial's keys, then\n"
    "AlgoPerf's eval_measurements.csv columns: global_step, accumulated_submission_time,\n"
    "accumulated_eval_time, train/validation/test metrics, ...), and one row with empty eval\n"
    "columns for a trial without evals (failed before its first, or not run); jsonl one object\n"
    "per trial (hyperparameters, seeds, outcome, code version, machine facts, evals).\n"
    "\n"
    "options:\n"
    "      --db FILE          results store (default results.db)\n"
    "      --name NAME        only this benchmark (default: all; one the store lacks is an\n"
    "                         error)\n"
    "      --format FORMAT    csv (default) or jsonl\n"
    "  -o, --output FILE      write to FILE (default: stdout)\n"
    "  -h, --help             this help\n";

int tb_cli_export(int argc, char **argv)
{
    const char *db = "results.db", *name = NULL, *output = NULL;
    tb_export_format format = TB_EXPORT_CSV;
    tb_error err = {0};
    enum { OPT_DB = 1000, OPT_NAME, OPT_FORMAT };
    struct option opts[] = {
        {"db", required_argument, 0, OPT_DB},
        {"name", required_argument, 0, OPT_NAME},
        {"format", required_argument, 0, OPT_FORMAT},
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
        case 'o': output = optarg; break;
        case 'h': fputs(export_usage, stdout); return TB_EXIT_OK;
        default: return tb_cli_option_error("export", c, argv);
        }
    }
    if (tb_cli_no_arguments("export", argc, argv) != TB_EXIT_OK) return TB_EXIT_USAGE;
    tb_store *store;
    tb_status st = tb_store_open_readonly(db, &store, &err);
    if (st != TB_OK) {
        tb_cli_error("%s", err.message);
        return tb_cli_exit_code(st);
    }
    FILE *f = output ? fopen(output, "w") : stdout;
    if (!f) {
        tb_cli_error("cannot write %s: %s", output, strerror(errno));
        tb_store_close(store);
        return TB_EXIT_FAILURE;
    }
    st = tb_store_export(store, name, format, f, &err);
    if (output && fclose(f) != 0 && st == TB_OK)
        st = tb_fail(&err, TB_ERR_IO, "cannot write %s: %s", output, strerror(errno));
    tb_store_close(store);
    if (st != TB_OK) {
        tb_cli_error("%s", err.message);
        return tb_cli_exit_code(st);
    }
    return TB_EXIT_OK;
}
