/* report_images.h: the report's figures as PNG files, drawn by headless Chromium from the
 * HTML report (`trainbench report --format png`). */
#ifndef TRAINBENCH_CLI_REPORT_IMAGES_H
#define TRAINBENCH_CLI_REPORT_IMAGES_H

#include "trainbench/status.h"

#include <stddef.h>

/* The first of Debian's chromium paths that can be run, or NULL. */
const char *tb_report_find_browser(void);

/* Opens html (an absolute path to a report) in browser once to list its figures, then
 * screenshots each alone (#only=ID&w=W, at scale 2) to dir/ID.png (written as dir/.ID.tmp.png
 * and renamed). *written gets the number of files. TB_ERR_INVALID for a path with a quote or
 * a page with script errors; TB_ERR_IO when the browser fails or writes nothing. */
tb_status tb_report_png_figures(const char *browser, const char *html, const char *dir,
                                int *written, tb_error *err);

#endif
