/* export_algoperf.c: one benchmark's trials in AlgoPerf's experiment layout, which its scoring
 * loader (scoring/scoring_utils.py, get_experiment_df) reads unchanged:
 *   DIR/<submission>/study_<s>/<workload>_pytorch/trial_<t+1>/eval_measurements.csv
 * with the trial's hyperparameters beside it in hparams.json (AlgoPerf's name for them). The
 * tree is written under DIR.tmp-XXXXXX and renamed into place, so a failure leaves no part of
 * it. docs/TIME_TO_RESULT.md says what AlgoPerf does with it. */
#include "store/store_impl.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PATH_CAP 4096

/* A name as one path component: letters, digits, '.', '_', '-' kept, anything else (a '/' of a
 * library path) '_'; never "", "." or "..". */
static void component(char *out, size_t cap, const char *name)
{
    size_t i = 0;
    for (; name[i] && i + 1 < cap; i++) {
        char c = name[i];
        bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-';
        out[i] = keep && !(i == 0 && c == '.') ? c : '_';
    }
    out[i] = '\0';
    if (i == 0) snprintf(out, cap, "_");
}

/* Removes a tree this file wrote (or the old DIR being replaced); links are removed, never
 * followed. */
static void remove_tree(const char *path)
{
    struct stat sb;
    if (lstat(path, &sb) != 0) return;
    if (S_ISDIR(sb.st_mode)) {
        DIR *d = opendir(path);
        for (struct dirent *e; d && (e = readdir(d));) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
            char child[PATH_CAP];
            if (snprintf(child, sizeof child, "%s/%s", path, e->d_name) < (int)sizeof child)
                remove_tree(child);
        }
        if (d) closedir(d);
    }
    remove(path);
}

static bool dir_is_empty(const char *path)
{
    DIR *d = opendir(path);
    bool empty = d != NULL;
    for (struct dirent *e; d && empty && (e = readdir(d));)
        empty = strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0;
    if (d) closedir(d);
    return empty;
}

/* DIR may be new, an empty directory, or (replace) a directory whose contents go. */
static tb_status check_target(const char *dir, bool replace, tb_error *err)
{
    struct stat sb;
    if (stat(dir, &sb) != 0) return TB_OK;
    if (!S_ISDIR(sb.st_mode))
        return tb_fail(err, TB_ERR_INVALID, "%s exists and is not a directory", dir);
    if (!replace && !dir_is_empty(dir))
        return tb_fail(err, TB_ERR_INVALID, "%s exists and is not empty (--replace to replace "
                       "it whole)", dir);
    return TB_OK;
}

/* The benchmark to export: the one named, or the store's only one. */
static tb_status pick_benchmark(tb_store *s, const char *benchmark, char *out, size_t cap,
                                tb_error *err)
{
    if (benchmark) {
        snprintf(out, cap, "%s", benchmark);
        return TB_OK;
    }
    char **names;
    int n;
    tb_status st = tb_store_benchmarks(s, &names, &n, err);
    if (st != TB_OK) return st;
    if (n == 1) snprintf(out, cap, "%s", names[0]);
    for (int i = 0; i < n; i++) free(names[i]);
    free(names);
    if (n == 1) return TB_OK;
    char list[400];
    tb_store_benchmark_list(s, list, sizeof list);
    return n == 0 ? tb_fail(err, TB_ERR_INVALID, "results store %s has no trials to export",
                            s->path)
                  : tb_fail(err, TB_ERR_INVALID, "results store %s holds several benchmarks "
                            "(%s); AlgoPerf's layout is one benchmark's: pick one with --name",
                            s->path, list);
}

static tb_status make_dir(const char *path, bool fresh, tb_error *err)
{
    if (mkdir(path, 0755) == 0 || (!fresh && errno == EEXIST)) return TB_OK;
    if (errno == EEXIST)
        return tb_fail(err, TB_ERR_INVALID, "two trials go to %s (one submission under two "
                       "rulesets?): AlgoPerf keeps one trial per directory", path);
    return tb_fail(err, TB_ERR_IO, "cannot create %s: %s", path, strerror(errno));
}

static tb_status write_text(const char *path, const char *text, tb_error *err)
{
    FILE *f = fopen(path, "w");
    if (!f) return tb_fail(err, TB_ERR_IO, "cannot write %s: %s", path, strerror(errno));
    fputs(text, f);
    bool bad = ferror(f) != 0;
    if (fclose(f) != 0 || bad) return tb_fail(err, TB_ERR_IO, "cannot write %s", path);
    return TB_OK;
}

/* trial_<t+1>/ with eval_measurements.csv (the header alone for a trial without evals: the
 * loader counts it, and it reaches nothing) and hparams.json (the values in effect, else the
 * point). */
static tb_status write_trial(tb_store *s, const tb_trial_record *t, const char *root,
                             tb_error *err)
{
    char sub[160], path[PATH_CAP];
    component(sub, sizeof sub, t->submission);
    int len = snprintf(path, sizeof path, "%s/%s", root, sub);
    tb_status st = make_dir(path, false, err);
    len += snprintf(path + len, sizeof path - (size_t)len, "/study_%d", t->study);
    if (st == TB_OK) st = make_dir(path, false, err);
    char wl[80];
    component(wl, sizeof wl, t->workload);
    len += snprintf(path + len, sizeof path - (size_t)len, "/%s_pytorch", wl);
    if (st == TB_OK) st = make_dir(path, false, err);
    len += snprintf(path + len, sizeof path - (size_t)len, "/trial_%d", t->trial + 1);
    if (st == TB_OK) st = make_dir(path, true, err);
    if (st != TB_OK) return st;
    char *hp = tb_store_hparams_json(t->resolved_hparams.count ? &t->resolved_hparams
                                                                : &t->hparams);
    snprintf(path + len, sizeof path - (size_t)len, "/hparams.json");
    st = write_text(path, hp ? hp : "{}", err);
    free(hp);
    tb_eval_record *ev = NULL;
    int n = 0;
    if (st == TB_OK) st = tb_store_evals(s, t->id, &ev, &n, err);
    snprintf(path + len, sizeof path - (size_t)len, "/eval_measurements.csv");
    FILE *f = st == TB_OK ? fopen(path, "w") : NULL;
    if (st == TB_OK && !f) st = tb_fail(err, TB_ERR_IO, "cannot write %s: %s", path,
                                        strerror(errno));
    if (f) {
        fputs(TB_EXPORT_EVAL_COLUMNS "\n", f);
        int preemptions = t->attempts > 0 ? t->attempts - 1 : 0;
        for (int i = 0; i < n; i++) tb_export_eval_row(f, &ev[i], preemptions);
        bool bad = ferror(f) != 0;
        if (fclose(f) != 0 || bad) st = tb_fail(err, TB_ERR_IO, "cannot write %s", path);
    }
    free(ev);
    return st;
}

/* Puts the finished tree tmp at dir: over nothing or an empty directory by one rename; over a
 * full one by moving it aside first, then removing it (moved back if the rename fails). */
static tb_status install(const char *tmp, const char *dir, tb_error *err)
{
    if (rename(tmp, dir) == 0) return TB_OK;
    if (errno != ENOTEMPTY && errno != EEXIST)
        return tb_fail(err, TB_ERR_IO, "cannot rename %s to %s: %s", tmp, dir, strerror(errno));
    char old[PATH_CAP];
    snprintf(old, sizeof old, "%s.old-XXXXXX", dir);
    if (!mkdtemp(old) || rename(dir, old) != 0)
        return tb_fail(err, TB_ERR_IO, "cannot move the old %s aside: %s", dir,
                       strerror(errno));
    if (rename(tmp, dir) != 0) {
        int e = errno;
        rename(old, dir);
        return tb_fail(err, TB_ERR_IO, "cannot rename %s to %s: %s", tmp, dir, strerror(e));
    }
    remove_tree(old);
    return TB_OK;
}

tb_status tb_store_export_algoperf(tb_store *s, const char *benchmark, const char *dir,
                                   bool replace, tb_error *err)
{
    if (!s || !dir || !dir[0])
        return tb_store_null(err, "store_export_algoperf", !s ? "the store" : "the directory");
    char target[PATH_CAP], bench[64], tmp[PATH_CAP];
    if (snprintf(target, sizeof target, "%s", dir) >= (int)sizeof target - 16)
        return tb_fail(err, TB_ERR_INVALID, "directory path too long: %s", dir);
    for (size_t n = strlen(target); n > 1 && target[n - 1] == '/'; n--) target[n - 1] = '\0';
    tb_status st = check_target(target, replace, err);
    if (st == TB_OK) st = pick_benchmark(s, benchmark, bench, sizeof bench, err);
    tb_trial_record *trials = NULL;
    int n = 0;
    if (st == TB_OK) st = tb_store_trials(s, bench, &trials, &n, err);
    if (st == TB_OK && n == 0) {
        char list[400];
        tb_store_benchmark_list(s, list, sizeof list);
        st = tb_fail(err, TB_ERR_INVALID, "results store %s has no trials of benchmark '%s' "
                     "(its benchmarks: %s)", s->path, bench, list);
    }
    snprintf(tmp, sizeof tmp, "%s.tmp-XXXXXX", target);
    if (st == TB_OK && !mkdtemp(tmp))
        st = tb_fail(err, TB_ERR_IO, "cannot create a directory beside %s: %s", target,
                     strerror(errno));
    else if (st == TB_OK) {
        chmod(tmp, 0755);
        for (int i = 0; i < n && st == TB_OK; i++) st = write_trial(s, &trials[i], tmp, err);
        if (st == TB_OK) st = install(tmp, target, err);
        if (st != TB_OK) remove_tree(tmp);
    }
    free(trials);
    return st;
}
