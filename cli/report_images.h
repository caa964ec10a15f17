/* report_images.h: the report's figures as PNG files, drawn by headless Chromium from the
 * HTML report (`trainbench report --format png`). */
#ifndef TRAINBENCH_CLI_REPORT_IMAGES_H
#define TRAINBENCH_CLI_REPORT_IMAGES_H

#include "trainbench/status.h"

#include <cjson/cJSON.h>
#include <stdbool.h>

/* The first of Debian's chromium paths that can be run, or NULL. */
const char *tb_report_find_browser(void);

/* The DOM browser renders from html (an absolute path; --dump-dom, malloc'ed), with the
 * browser's log (console messages as ":CONSOLE(") after it when console; NULL if it could not
 * run or a path has a single quote. */
char *tb_report_dump_dom(const char *browser, const char *html, bool console);
/* The page's record of what it drew (#report-checks, HTML-escaped JSON in the DOM) parsed
 * (the caller deletes it), or NULL if absent. */
cJSON *tb_report_page_checks(const char *dom);

/* Opens html (an absolute path to a report) in browser once to list its figures, then
 * screenshots each alone (#only=ID&w=W, at scale 2) to dir/ID.png (written as dir/.ID.tmp.png
 * and renamed). *written gets the number of files. TB_ERR_INVALID for a path with a quote or
 * a page with script errors; TB_ERR_IO when the browser fails or writes nothing. */
tb_status tb_report_png_figures(const char *browser, const char *html, const char *dir,
                                int *written, tb_error *err);

#endif
