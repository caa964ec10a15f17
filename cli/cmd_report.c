/* cmd_report.c: `trainbench report`: one self-contained HTML report of a results store. */
#include "cli.h"

#include "trainbench/report.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

static const char report_usage[] =
    "usage: trainbench report [options]\n"
    "\n"
    "Writes one HTML file that opens offline in any browser (docs/REPORT.md): for every\n"
    "benchmark in the store the score table, the performance profiles rho(tau) for tau from 1\n"
    "to 4, every study's time to target per workload, the training curves (validation metric\n"
    "against accumulated submission time, the target as a line, misses and failures marked)\n"
    "and the search (each trial's hyperparameters against its result); the study runs per\n"
    "study and cell; the hardware runs (examples/s and ratio per workload and configuration,\n"
    "the score with its interval, every run's score per machine). Sections without data in\n"
    "the store are left out. The charts are drawn by Chart.js, read from Debian's\n"
    "libjs-chart.js and inlined; the data behind them is in the file as JSON. The file is\n"
    "written under a temporary name and renamed: a failure leaves nothing at the path.\n"
    "\n"
    "options:\n"
    "      --db FILE          results store (default results.db), opened read-only\n"
    "  -o, --output FILE      the report (default report.html); its directory must exist\n"
    "      --name NAME        only this benchmark (and no hardware or study sections)\n"
    "      --chart-js FILE    Chart.js 3 to inline (default " TB_REPORT_CHART_JS ")\n"
    "  -h, --help             this help\n"
    "\n"
    "example: trainbench report --db results.db -o report.html && xdg-open report.html\n";

int tb_cli_report(int argc, char **argv)
{
    const char *db = "results.db", *output = "report.html";
    tb_report_options o = {0};
    enum { OPT_DB = 1000, OPT_NAME, OPT_CHART };
    struct option opts[] = {
        {"db", required_argument, 0, OPT_DB},
        {"output", required_argument, 0, 'o'},
        {"name", required_argument, 0, OPT_NAME},
        {"chart-js", required_argument, 0, OPT_CHART},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":ho:", opts, NULL)) != -1) {
        switch (c) {
        case OPT_DB:
            if (!tb_cli_check_db(optarg)) return TB_EXIT_USAGE;
            db = optarg;
            break;
        case 'o': output = optarg; break;
        case OPT_NAME: o.benchmark = optarg; break;
        case OPT_CHART: o.chart_js = optarg; break;
        case 'h': fputs(report_usage, stdout); return TB_EXIT_OK;
        default: return tb_cli_option_error("report", c, argv);
        }
    }
    if (tb_cli_no_arguments("report", argc, argv) != TB_EXIT_OK) return TB_EXIT_USAGE;
    if (!output[0]) {
        tb_cli_error("report: -o needs a file name");
        return TB_EXIT_USAGE;
    }
    tb_error err = {0};
    tb_store *store;
    tb_status st = tb_store_open_readonly(db, &store, &err);
    if (st == TB_OK) {
        o.store_name = db;
        st = tb_report_build(store, &o, output, &err);
        tb_store_close(store);
    }
    if (st != TB_OK) {
        tb_cli_error("%s", err.message);
        return tb_cli_exit_code(st);
    }
    printf("report: %s\n", output);
    return TB_EXIT_OK;
}
