/* cmd_report.c: `trainbench report`: one self-contained HTML report of a results store. */
#include "cli.h"

#include "report_images.h"
#include "trainbench/report.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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
    "  -o, --output FILE      the report (default report.html); its directory must exist;\n"
    "                         with --format png a directory (default report-figures)\n"
    "      --format FORMAT    html (default) or png: one PNG per figure (ID.png, at twice\n"
    "                         its size in the report), drawn by headless chromium, beside\n"
    "                         report.html (the data behind them). svg is refused: Chart.js\n"
    "                         draws on a canvas, so an SVG would only wrap a bitmap\n"
    "      --browser FILE     chromium for png (default /usr/bin/chromium)\n"
    "      --name NAME        only this benchmark (and no hardware or study sections)\n"
    "      --chart-js FILE    Chart.js 3 to inline (default " TB_REPORT_CHART_JS ")\n"
    "  -h, --help             this help\n"
    "\n"
    "example: trainbench report --db results.db -o report.html && xdg-open report.html\n";

static const char svg_refused[] =
    "--format svg: refused: Chart.js draws the charts on an HTML canvas, a bitmap, so an SVG "
    "of them would only wrap that bitmap, not vectors; use --format png (twice the report's "
    "size)";

/* The report and its figures as PNG files in dir (created if needed): dir/report.html, then
 * dir/ID.png per figure. */
static tb_status report_png(tb_store *store, const tb_report_options *o, const char *dir,
                            const char *browser, tb_error *err)
{
    if (!browser) browser = tb_report_find_browser();
    if (!browser)
        return tb_fail(err, TB_ERR_MISSING, "--format png needs headless chromium: install "
                       "Debian's chromium (apt-get install chromium) or give --browser FILE");
    if (mkdir(dir, 0755) != 0 && errno != EEXIST)
        return tb_fail(err, TB_ERR_IO, "cannot create %s: %s", dir, strerror(errno));
    char html[PATH_MAX + 16], abs[PATH_MAX];
    if (!realpath(dir, abs))
        return tb_fail(err, TB_ERR_IO, "cannot use %s: %s", dir, strerror(errno));
    snprintf(html, sizeof html, "%s/report.html", abs);
    tb_status st = tb_report_build(store, o, html, err);
    int n = 0;
    if (st == TB_OK) st = tb_report_png_figures(browser, html, abs, &n, err);
    if (st == TB_OK) printf("report: %d figures (PNG) and report.html in %s\n", n, dir);
    return st;
}

int tb_cli_report(int argc, char **argv)
{
    const char *db = "results.db", *output = NULL, *format = "html", *browser = NULL;
    tb_report_options o = {0};
    enum { OPT_DB = 1000, OPT_NAME, OPT_CHART, OPT_FORMAT, OPT_BROWSER };
    struct option opts[] = {
        {"db", required_argument, 0, OPT_DB},
        {"output", required_argument, 0, 'o'},
        {"name", required_argument, 0, OPT_NAME},
        {"chart-js", required_argument, 0, OPT_CHART},
        {"format", required_argument, 0, OPT_FORMAT},
        {"browser", required_argument, 0, OPT_BROWSER},
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
        case OPT_FORMAT: format = optarg; break;
        case OPT_BROWSER: browser = optarg; break;
        case 'h': fputs(report_usage, stdout); return TB_EXIT_OK;
        default: return tb_cli_option_error("report", c, argv);
        }
    }
    if (tb_cli_no_arguments("report", argc, argv) != TB_EXIT_OK) return TB_EXIT_USAGE;
    bool png = strcmp(format, "png") == 0;
    if (strcmp(format, "svg") == 0) return tb_cli_error("%s", svg_refused), TB_EXIT_USAGE;
    if (!png && strcmp(format, "html") != 0)
        return tb_cli_error("--format: '%s' is not html or png", format), TB_EXIT_USAGE;
    if (!output) output = png ? "report-figures" : "report.html";
    if (!output[0]) {
        tb_cli_error("report: -o needs a file name");
        return TB_EXIT_USAGE;
    }
    tb_error err = {0};
    tb_store *store;
    tb_status st = tb_store_open_readonly(db, &store, &err);
    if (st == TB_OK) {
        o.store_name = db;
        st = png ? report_png(store, &o, output, browser, &err)
                 : tb_report_build(store, &o, output, &err);
        tb_store_close(store);
    }
    if (st != TB_OK) {
        tb_cli_error("%s", err.message);
        return tb_cli_exit_code(st);
    }
    if (!png) printf("report: %s\n", output);
    return TB_EXIT_OK;
}
