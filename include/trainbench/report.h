/* report.h: the report people look at: one self-contained HTML file built from a results
 * store (docs/REPORT.md). The library builds the report's data (one JSON document: the score
 * tables, performance profiles, times to target, training curves and searches of every
 * benchmark; the hardware runs; the study runs) and writes the page: the data, the page's
 * script and style, and the charting library (Debian's libjs-chart.js, read at run time and
 * inlined), so that the file opens offline. Nothing here prints. */
#ifndef TRAINBENCH_REPORT_H
#define TRAINBENCH_REPORT_H

#include "trainbench/status.h"
#include "trainbench/store.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Where Debian's libjs-chart.js installs Chart.js 3.9 (`dpkg -L libjs-chart.js`). */
#define TB_REPORT_CHART_JS "/usr/share/javascript/chart.js/chart.min.js"
#define TB_REPORT_CHART_PACKAGE "libjs-chart.js"

typedef struct tb_report_options {
    const char *benchmark;  /* only this benchmark (NULL: every one in the store) */
    const char *chart_js;   /* the charting library's file (NULL: TB_REPORT_CHART_JS) */
    const char *store_name; /* how the page names the store (NULL: "results store") */
} tb_report_options;

/* The report's data as JSON text (malloc'ed; the caller frees it). TB_ERR_INVALID when the
 * store holds nothing to report (no trials, hardware runs or study runs; the message says
 * which commands fill it) or has no trials of options->benchmark (naming the store's
 * benchmarks). A store whose trials all failed is reported (every failure marked). */
tb_status tb_report_data(tb_store *store, const tb_report_options *options, char **json,
                         tb_error *err);

/* Writes the page for data (tb_report_data's JSON) to path: written to a temporary file in
 * path's directory, then renamed, so a failure leaves no partial file. TB_ERR_MISSING naming
 * the package when the charting library is not installed; TB_ERR_IO naming the directory
 * when it does not exist or cannot be written. */
tb_status tb_report_write_html(const char *json, const tb_report_options *options,
                               const char *path, tb_error *err);

/* tb_report_data then tb_report_write_html. */
tb_status tb_report_build(tb_store *store, const tb_report_options *options, const char *path,
                          tb_error *err);

#ifdef __cplusplus
}
#endif
#endif
