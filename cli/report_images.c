/* report_images.c: the report's figures as PNG files. The page draws every chart on a canvas
 * with Chart.js and records each figure's id and size in #report-checks; Chromium dumps the
 * page once to read them, then takes one screenshot per figure of the page in its #only mode
 * (the figure alone, at its width in the report, on white). */
#include "report_images.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CMD_CAP 8192

const char *tb_report_find_browser(void)
{
    static const char *const paths[] = {"/usr/bin/chromium", "/usr/bin/chromium-browser"};
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++)
        if (access(paths[i], X_OK) == 0) return paths[i];
    return NULL;
}

/* The output of a shell command (malloc'ed), or NULL. */
static char *capture(const char *cmd)
{
    FILE *p = popen(cmd, "r");
    if (!p) return NULL;
    size_t cap = 1 << 20, n = 0;
    char *buf = malloc(cap);
    for (size_t k; buf && (k = fread(buf + n, 1, cap - 1 - n, p)) > 0;) {
        n += k;
        if (n + 1 == cap) {
            char *grown = realloc(buf, cap *= 2);
            if (!grown) break;
            buf = grown;
        }
    }
    pclose(p);
    if (buf) buf[n] = '\0';
    return buf;
}

cJSON *tb_report_page_checks(const char *dom)
{
    const char *start = strstr(dom, "id=\"report-checks\"");
    start = start ? strchr(start, '>') : NULL;
    const char *end = start ? strstr(start, "</pre>") : NULL;
    if (!end) return NULL;
    char *text = malloc((size_t)(end - start)), *o = text;
    if (!text) return NULL;
    static const char *const from[] = {"&amp;", "&lt;", "&gt;", "&quot;"};
    static const char to[] = "&<>\"";
    for (const char *p = start + 1; p < end; p++) {
        int k = 0;
        while (k < 4 && strncmp(p, from[k], strlen(from[k])) != 0) k++;
        *o++ = k < 4 ? to[k] : *p;
        if (k < 4) p += strlen(from[k]) - 1;
    }
    *o = '\0';
    cJSON *j = cJSON_Parse(text);
    free(text);
    return j;
}

static const char browser_flags[] = "--headless --no-sandbox --disable-gpu --hide-scrollbars";

char *tb_report_dump_dom(const char *browser, const char *html, bool console)
{
    if (strchr(browser, '\'') || strchr(html, '\'')) return NULL;
    char cmd[CMD_CAP];
    snprintf(cmd, sizeof cmd, "'%s' %s --window-size=1280,1000 %s--dump-dom 'file://%s' %s",
             browser, browser_flags, console ? "--enable-logging=stderr --v=0 " : "", html,
             console ? "2>&1" : "2>/dev/null");
    return capture(cmd);
}

/* One figure alone, at twice its size in the report, to dir/id.png. */
static tb_status screenshot(const char *browser, const char *html, const char *dir,
                            const cJSON *chart, tb_error *err)
{
    const char *id = cJSON_GetStringValue(cJSON_GetObjectItem(chart, "id"));
    int w = (int)cJSON_GetNumberValue(cJSON_GetObjectItem(chart, "figure_width"));
    int h = (int)cJSON_GetNumberValue(cJSON_GetObjectItem(chart, "figure_height"));
    if (!id || strspn(id, "abcdefghijklmnopqrstuvwxyz0123456789-") != strlen(id) || w <= 0 ||
        h <= 0)
        return tb_fail(err, TB_ERR_INVALID, "the report lists a figure without an id or size");
    char tmp[4096], png[4096], cmd[CMD_CAP];
    snprintf(tmp, sizeof tmp, "%s/.%s.tmp.png", dir, id); /* chromium wants .png */
    snprintf(png, sizeof png, "%s/%s.png", dir, id);
    snprintf(cmd, sizeof cmd, "'%s' %s --force-device-scale-factor=2 --window-size=%d,%d "
             "--screenshot='%s' 'file://%s#only=%s&w=%d' >/dev/null 2>&1", browser,
             browser_flags, w, h, tmp, html, id, w);
    int rc = system(cmd);
    if (rc != 0 || access(tmp, F_OK) != 0) {
        unlink(tmp);
        return tb_fail(err, TB_ERR_IO, "%s could not draw figure %s (exit status %d)", browser,
                       id, rc);
    }
    if (rename(tmp, png) != 0) {
        unlink(tmp);
        return tb_fail(err, TB_ERR_IO, "cannot write %s: %s", png, strerror(errno));
    }
    return TB_OK;
}

tb_status tb_report_png_figures(const char *browser, const char *html, const char *dir,
                                int *written, tb_error *err)
{
    *written = 0;
    if (strchr(browser, '\'') || strchr(html, '\'') || strchr(dir, '\''))
        return tb_fail(err, TB_ERR_INVALID, "a path with a single quote (') cannot be given "
                       "to the browser: %s", strchr(dir, '\'') ? dir : html);
    char *dom = tb_report_dump_dom(browser, html, false);
    cJSON *checks = dom ? tb_report_page_checks(dom) : NULL;
    free(dom);
    if (!checks)
        return tb_fail(err, TB_ERR_IO, "%s did not open the report %s", browser, html);
    tb_status st = TB_OK;
    const cJSON *errors = cJSON_GetObjectItem(checks, "errors");
    if (cJSON_GetArraySize(errors) > 0)
        st = tb_fail(err, TB_ERR_INVALID, "the report's page failed: %s",
                     cJSON_GetStringValue(cJSON_GetArrayItem(errors, 0)));
    const cJSON *chart;
    cJSON_ArrayForEach(chart, cJSON_GetObjectItem(checks, "charts")) {
        if (st != TB_OK) break;
        st = screenshot(browser, html, dir, chart, err);
        if (st == TB_OK) (*written)++;
    }
    cJSON_Delete(checks);
    return st;
}
