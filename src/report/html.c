/* html.c: the report's page: style, data (JSON), the charting library and the page's script,
 * in one file written to a temporary name in the target's directory and renamed into place,
 * so that no partial file is ever left at the path. */
#include "report/report_impl.h"

#include "tb_report_css.h"
#include "tb_report_bench_js.h"
#include "tb_report_js.h"
#include "tb_report_main_js.h"
#include "tb_report_side_js.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The whole file at path (malloc'ed, NUL-terminated), or NULL. */
static char *read_all(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = NULL;
    if (fseek(f, 0, SEEK_END) == 0) {
        long size = ftell(f);
        if (size > 0 && fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)size + 1))) {
            if (fread(buf, 1, (size_t)size, f) != (size_t)size) {
                free(buf);
                buf = NULL;
            } else buf[size] = '\0';
        }
    }
    fclose(f);
    return buf;
}

/* The directory part of path ("." for a bare name). */
static void dir_of(const char *path, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s", path);
    char *slash = strrchr(buf, '/');
    if (!slash) snprintf(buf, cap, ".");
    else if (slash == buf) buf[1] = '\0';
    else *slash = '\0';
}

/* JSON text inside a <script> element: every '<' as \u003c (only strings hold one), so that
 * no "</script>" in a name can end the element. */
static void write_json(FILE *f, const char *json)
{
    for (const char *p = json; *p; p++) {
        if (*p == '<') fputs("\\u003c", f);
        else fputc(*p, f);
    }
}

static void write_page(FILE *f, const char *json, const char *chart_js, const char *chart_path)
{
    fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
          "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
          "<title>trainbench report</title>\n<style>\n", f);
    fputs(tb_report_css, f);
    fputs("</style>\n</head>\n<body>\n<main id=\"report\"></main>\n"
          "<script type=\"application/json\" id=\"report-data\">", f);
    write_json(f, json);
    fprintf(f, "</script>\n<!-- Chart.js, from %s (Debian's %s) -->\n<script>\n", chart_path,
            TB_REPORT_CHART_PACKAGE);
    fputs(chart_js, f);
    fputs("\n</script>\n<script>\n", f);
    /* one script in four parts (page.js opens its function, page_main.js closes it) */
    const char *const parts[] = {tb_report_js, tb_report_bench_js, tb_report_side_js,
                                 tb_report_main_js};
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) fputs(parts[i], f);
    fputs("\n</script>\n</body>\n</html>\n", f);
}

static tb_status dir_fail(tb_error *err, const char *path, int e)
{
    char dir[1024];
    dir_of(path, dir, sizeof dir);
    struct stat sb;
    if (e == ENOENT || e == ENOTDIR || (stat(dir, &sb) == 0 && !S_ISDIR(sb.st_mode)))
        return tb_fail(err, TB_ERR_IO, "cannot write %s: directory %s does not exist", path, dir);
    if (e == EACCES || e == EROFS || e == EPERM)
        return tb_fail(err, TB_ERR_IO, "cannot write %s: directory %s is not writable (%s)",
                       path, dir, strerror(e));
    return tb_fail(err, TB_ERR_IO, "cannot write %s: %s", path, strerror(e));
}

tb_status tb_report_write_html(const char *json, const tb_report_options *options,
                               const char *path, tb_error *err)
{
    if (!json || !path || !path[0])
        return tb_fail(err, TB_ERR_INVALID, "report_write_html: %s", !json ? "json is NULL"
                                                                  : "no output path");
    const char *chart_path = options && options->chart_js ? options->chart_js : TB_REPORT_CHART_JS;
    char *chart = read_all(chart_path);
    if (!chart)
        return tb_fail(err, TB_ERR_MISSING, "the charting library %s is not installed or "
                       "cannot be read (%s): install Debian's %s (apt-get install %s)",
                       chart_path, strerror(errno ? errno : ENOENT), TB_REPORT_CHART_PACKAGE,
                       TB_REPORT_CHART_PACKAGE);
    size_t len = strlen(path);
    char *tmp = malloc(len + 16);
    if (!tmp) {
        free(chart);
        return tb_fail(err, TB_ERR_NOMEM, "report: out of memory");
    }
    snprintf(tmp, len + 16, "%s.tmp-XXXXXX", path);
    int fd = mkstemp(tmp);
    tb_status st = TB_OK;
    if (fd < 0) st = dir_fail(err, path, errno);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (fd >= 0 && !f) {
        close(fd);
        st = tb_fail(err, TB_ERR_IO, "cannot write %s: %s", tmp, strerror(errno));
    }
    if (f) {
        fchmod(fd, 0644);
        write_page(f, json, chart, chart_path);
        bool bad = ferror(f) != 0;
        if (fclose(f) != 0 || bad)
            st = tb_fail(err, TB_ERR_IO, "cannot write %s: %s", tmp, strerror(errno));
        else if (rename(tmp, path) != 0)
            st = tb_fail(err, TB_ERR_IO, "cannot write %s: %s", path, strerror(errno));
    }
    if (st != TB_OK && fd >= 0) unlink(tmp);
    free(tmp);
    free(chart);
    return st;
}
