/* test_report.c: `trainbench report` on a small real store (a benchmark of sgd, adamw and a
 * submission that crashes, run by the command; a hardware run; study runs), opened in a real
 * browser: headless Chromium loads the page with no console errors and every chart drawn with
 * the series it should have; a screenshot of each section is kept in report_artifacts/ under
 * the build directory. Then the bad inputs: an empty store, only failed trials, a missing
 * charting library, an output directory that does not exist or is not writable: a clear
 * message and no file left. Skipped (77) only when chromium is not installed. */
#include "testutil.h"

#include "report_images.h" /* cli/: the browser helpers */

#include <cjson/cJSON.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char out[65536];
static int run(const char *args) { return tb_test_run_cli(args, out, sizeof out); }
static bool has(const char *needle) { return tb_test_output_has(out, needle); }
static bool exists(const char *path) { return access(path, F_OK) == 0; }

/* Whether dir holds a file whose name starts with prefix (a temporary file left behind). */
static bool left_behind(const char *dir, const char *prefix)
{
    DIR *d = opendir(dir);
    bool found = false;
    for (struct dirent *e; d && (e = readdir(d));)
        found = found || strncmp(e->d_name, prefix, strlen(prefix)) == 0;
    if (d) closedir(d);
    return found;
}

static int chart_count(const cJSON *charts, const char *prefix)
{
    int n = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, charts)
        n += strncmp(cJSON_GetObjectItem(c, "id")->valuestring, prefix, strlen(prefix)) == 0;
    return n;
}

/* Study runs of two cells, two seeds each, as `trainbench study --db` records them. */
static void add_study_runs(const char *db)
{
    tb_store *s;
    tb_error err = {0};
    if (!CHECK_OK(tb_store_open(db, &s, &err), &err)) return;
    for (int i = 0; i < 4; i++) {
        tb_study_run_record r;
        memset(&r, 0, sizeof r);
        snprintf(r.study, sizeof r.study, "echo_demo");
        snprintf(r.key, sizeof r.key, "workload=fmnist_mlp algorithm=adamw echo_factor=%d "
                 "seeds=%d", 1 + i % 2, i / 2);
        r.result.steps = 100;
        r.result.validation.metric = 0.3 - 0.05 * (i % 2) + 0.01 * (i / 2);
        r.result.test.metric = r.result.validation.metric;
        r.diverged = i == 3;
        CHECK_OK(tb_store_put_study_run(s, &r, "test", &err), &err);
    }
    tb_store_close(s);
}

static void browser(const char *html, const char *browser_path)
{
    char cmd[2048];
    char *dom = tb_report_dump_dom(browser_path, html, true);
    if (!CHECK(dom != NULL)) return;
    /* the page's console messages: none at all (an error, a warning or a log) */
    CHECK(!strstr(dom, ":CONSOLE(") && !strstr(dom, "Uncaught"));
    cJSON *c = tb_report_page_checks(dom);
    if (!CHECK(c != NULL)) {
        fprintf(stderr, "%.2000s\n", dom);
        free(dom);
        return;
    }
    CHECK(cJSON_IsTrue(cJSON_GetObjectItem(c, "done")));
    CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(c, "errors")) == 0);
    const cJSON *charts = cJSON_GetObjectItem(c, "charts"), *x;
    /* profiles, time to target, curves (one workload), the search (3 submissions), a study,
     * hardware (throughput, ratio, score, history) */
    CHECK(chart_count(charts, "benchmark-0-profiles") == 1);
    CHECK(chart_count(charts, "benchmark-0-ttt-") == 1);
    CHECK(chart_count(charts, "benchmark-0-curve-") == 1);
    CHECK(chart_count(charts, "benchmark-0-search-") == 3);
    CHECK(chart_count(charts, "study-") == 1);
    CHECK(chart_count(charts, "hw-") == 4);
    cJSON_ArrayForEach(x, charts) {
        const char *id = cJSON_GetObjectItem(x, "id")->valuestring;
        int series = cJSON_GetObjectItem(x, "series")->valueint;
        bool ok = series == cJSON_GetObjectItem(x, "expected")->valueint && series > 0 &&
                  cJSON_GetObjectItem(x, "points")->valueint > 0 &&
                  cJSON_GetObjectItem(x, "ink")->valueint > 1000;
        if (!CHECK(ok)) fprintf(stderr, "chart %s: %s\n", id, cJSON_PrintUnformatted(x));
    }
    /* the profiles: one series per submission; the curves: one per trial and the target */
    cJSON_ArrayForEach(x, charts) {
        const char *id = cJSON_GetObjectItem(x, "id")->valuestring;
        int series = cJSON_GetObjectItem(x, "series")->valueint;
        if (strcmp(id, "benchmark-0-profiles") == 0) CHECK(series == 3);
        if (strcmp(id, "benchmark-0-curve-0") == 0) CHECK(series == 4);
    }
    /* one screenshot per section, the section alone (#only=ID) */
    mkdir("report_artifacts", 0755);
    const cJSON *sec;
    int shots = 0;
    cJSON_ArrayForEach(sec, cJSON_GetObjectItem(c, "sections")) {
        const char *id = cJSON_GetObjectItem(sec, "id")->valuestring;
        int h = cJSON_GetObjectItem(sec, "height")->valueint + 150;
        char png[512], cwd[512];
        snprintf(png, sizeof png, "%s/report_artifacts/%s.png", getcwd(cwd, sizeof cwd), id);
        remove(png);
        snprintf(cmd, sizeof cmd, "%s --headless --no-sandbox --disable-gpu --hide-scrollbars "
                 "--window-size=1280,%d --screenshot=%s 'file://%s#only=%s' >/dev/null 2>&1",
                 browser_path, h, png, html, id);
        if (CHECK(system(cmd) == 0 && exists(png))) shots++;
    }
    CHECK(shots == 3);
    cJSON_Delete(c);
    free(dom);
}

/* A PNG's width and height (its IHDR), 0 if the file is not a PNG. */
static void png_size(const char *path, unsigned *w, unsigned *h)
{
    unsigned char b[24] = {0};
    FILE *f = fopen(path, "rb");
    size_t n = f ? fread(b, 1, sizeof b, f) : 0;
    if (f) fclose(f);
    bool png = n == sizeof b && memcmp(b, "\x89PNG\r\n\x1a\n", 8) == 0 && memcmp(b + 12, "IHDR", 4) == 0;
    *w = png ? (unsigned)b[16] << 24 | (unsigned)b[17] << 16 | (unsigned)b[18] << 8 | b[19] : 0;
    *h = png ? (unsigned)b[20] << 24 | (unsigned)b[21] << 16 | (unsigned)b[22] << 8 | b[23] : 0;
}

/* report --format png: one PNG per figure of the benchmark (profiles, time to target, curves,
 * three searches) beside report.html; svg refused with the reason. */
static void png_figures(const char *dir, const char *db)
{
    char args[2048], path[700];
    snprintf(args, sizeof args, "report --db %s --name t --format png -o %s/figs", db, dir);
    if (!CHECK(run(args) == 0 && has("6 figures (PNG)"))) fprintf(stderr, "%s\n", out);
    const char *ids[] = {"benchmark-0-profiles", "benchmark-0-ttt-0", "benchmark-0-curve-0",
                         "benchmark-0-search-0", "benchmark-0-search-1", "benchmark-0-search-2"};
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
        unsigned w, h;
        snprintf(path, sizeof path, "%s/figs/%s.png", dir, ids[i]);
        png_size(path, &w, &h);
        /* the figure alone at twice its size in the report: wider than 800, not the window */
        if (!CHECK(w >= 800 && w <= 2 * 1280 && h >= 500 && h < 2 * 1000))
            fprintf(stderr, "%s: %ux%u\n", path, w, h);
    }
    snprintf(path, sizeof path, "%s/figs/report.html", dir);
    CHECK(exists(path));
    snprintf(path, sizeof path, "%s/figs", dir);
    CHECK(!left_behind(path, ".b"));
    snprintf(args, sizeof args, "report --db %s --format svg -o %s/svg", db, dir);
    CHECK(run(args) == 2 && has("canvas") && has("bitmap") && has("--format png"));
    snprintf(path, sizeof path, "%s/svg", dir);
    CHECK(!exists(path));
}

static void bad_inputs(const char *dir, const char *db)
{
    char args[2048], path[600];
    /* no such store; an empty one; a benchmark it does not have */
    snprintf(args, sizeof args, "report --db %s/none.db -o %s/a.html", dir, dir);
    CHECK(run(args) == 2 && has("none.db"));
    snprintf(path, sizeof path, "%s/empty.db", dir);
    tb_store *s;
    tb_error err = {0};
    if (CHECK_OK(tb_store_open(path, &s, &err), &err)) tb_store_close(s);
    snprintf(args, sizeof args, "report --db %s -o %s/a.html", path, dir);
    CHECK(run(args) == 2 && has("holds nothing to report") && has("trainbench bench"));
    snprintf(path, sizeof path, "%s/a.html", dir);
    CHECK(!exists(path) && !left_behind(dir, "a.html"));
    snprintf(args, sizeof args, "report --db %s --name nope -o %s/a.html", db, dir);
    CHECK(run(args) == 2 && has("no trials of benchmark 'nope'") && !exists(path));
    /* the output in a directory that does not exist, or under a file */
    snprintf(args, sizeof args, "report --db %s -o %s/missing/a.html", db, dir);
    CHECK(run(args) == 1 && has("directory") && has("missing does not exist"));
    snprintf(args, sizeof args, "report --db %s -o %s/r.db/a.html", db, dir);
    CHECK(run(args) == 1 && has("does not exist"));
    /* a read-only directory (root writes anywhere: checked only as another user) */
    snprintf(path, sizeof path, "%s/ro", dir);
    mkdir(path, 0555);
    if (geteuid() != 0) {
        snprintf(args, sizeof args, "report --db %s -o %s/a.html", db, path);
        CHECK(run(args) == 1 && has("is not writable") && !left_behind(path, "a.html"));
    }
    rmdir(path);
    /* the charting library missing: the package named */
    snprintf(args, sizeof args, "report --db %s -o %s/a.html --chart-js %s/no.js", db, dir, dir);
    CHECK(run(args) == 3 && has("libjs-chart.js") && !left_behind(dir, "a.html"));
    /* a store whose trials all failed: reported, every failure said */
    snprintf(path, sizeof path, "%s/failed.db", dir);
    if (CHECK_OK(tb_store_open(path, &s, &err), &err)) {
        CHECK_OK(tb_store_put_benchmark(s, "f", "{}", &err), &err);
        tb_test_add_trial(s, "f", "sgd", "fmnist_mlp", 0, 0, NULL, TB_TRIAL_FAILED, 0.5, -1);
        tb_store_close(s);
    }
    snprintf(args, sizeof args, "report --db %s -o %s/f.html", path, dir);
    if (!CHECK(run(args) == 0)) fprintf(stderr, "%s\n", out);
    snprintf(path, sizeof path, "%s/f.html", dir);
    FILE *f = fopen(path, "r");
    static char page[1 << 20];
    size_t n = f ? fread(page, 1, sizeof page - 1, f) : 0;
    page[n] = '\0';
    if (f) fclose(f);
    CHECK(strstr(page, "\"state\":\"failed\"") && strstr(page, "Chart.js v3"));
    /* score: a failure said as such, no speedup for a submission that reached nothing */
    snprintf(args, sizeof args, "score --db %s/failed.db", dir);
    CHECK(run(args) == 0 && has("failed (0/1 studies, 1 failed)") && has("none reached") &&
          !has("1.00x") && has("tau=4"));
}

int main(void)
{
    const char *browser_path = tb_report_find_browser();
    if (!browser_path) {
        printf("test_report: skipped: chromium is not installed (scripts/setup.sh installs it)\n");
        return TB_TEST_SKIP;
    }
    char dir[] = "/tmp/tb_report_XXXXXX";
    if (!CHECK(mkdtemp(dir) != NULL)) return tb_test_finish("test_report");
    char db[300], html[400], args[2048];
    snprintf(db, sizeof db, "%s/r.db", dir);
    snprintf(html, sizeof html, "%s/report.html", dir);
    const char *crash = getenv("TB_CRASH_SUBMISSION");
    snprintf(args, sizeof args, "bench --db %s --name t -s sgd -s adamw -s %s -w fmnist_mlp "
             "--studies 1 --trials 1 --budget 0.6 --eval-period 0.2 --eval-examples 200 "
             "--threads 2", db, crash ? crash : "submission_crash.so");
    CHECK(run(args) == 0);
    snprintf(args, sizeof args, "hw --db %s -w fmnist_mlp --threads 1 --warmup 2 --windows 2 "
             "--window 0 --window-steps 2 -q", db);
    CHECK(run(args) == 0);
    add_study_runs(db);
    snprintf(args, sizeof args, "report --db %s -o %s", db, html);
    CHECK(run(args) == 0 && has("report: ") && exists(html));
    CHECK(run("report --help") == 0 && has("--output") && has("libjs-chart.js"));
    CHECK(run("--help") == 0 && has("report  "));
    browser(html, browser_path);
    png_figures(dir, db);
    bad_inputs(dir, db);
    snprintf(args, sizeof args, "rm -rf %s", dir);
    CHECK(system(args) == 0);
    return tb_test_finish("test_report");
}
