/* splits.c: drawing a workload's train / validation / test splits from the split stream:
 * the official split (fixed test set, validation held out of the training set) or the
 * bootstrap with out-of-bootstrap validation and test sets (stratified by class, in a seeded
 * random order). */
#include "workloads/workload_impl.h"

#include <stdlib.h>
#include <string.h>

static tb_status alloc_split(tb_workload *wl, int s, int64_t n, tb_error *err)
{
    wl->split_ids[s] = malloc((size_t)(n > 0 ? n : 1) * sizeof(int64_t));
    wl->split_n[s] = n;
    if (!wl->split_ids[s])
        return tb_fail(err, TB_ERR_NOMEM, "out of memory for the %s split",
                       tb_split_name((tb_split)s));
    return TB_OK;
}

static tb_status official(tb_workload *wl, const tb_workload_config *cfg, int64_t n_val,
                          tb_error *err)
{
    int64_t n_all = wl->src.n_official_train, n_test = wl->src.n - n_all;
    if (n_val >= n_all)
        return tb_fail(err, TB_ERR_INVALID, "validation size %lld leaves no training data",
                       (long long)n_val);
    int64_t *perm = malloc((size_t)n_all * sizeof *perm);
    if (!perm) return tb_fail(err, TB_ERR_NOMEM, "out of memory for the split");
    for (int64_t i = 0; i < n_all; i++) perm[i] = i;
    tb_rng rng = tb_rng_make(cfg->split_seed, TB_STREAM_SPLIT);
    tb_rng_shuffle_i64(&rng, perm, n_all);
    tb_status st = alloc_split(wl, TB_SPLIT_VALIDATION, n_val, err);
    if (st == TB_OK) st = alloc_split(wl, TB_SPLIT_TRAIN, n_all - n_val, err);
    if (st == TB_OK) st = alloc_split(wl, TB_SPLIT_TEST, n_test, err);
    if (st == TB_OK) {
        memcpy(wl->split_ids[TB_SPLIT_VALIDATION], perm, (size_t)n_val * sizeof *perm);
        memcpy(wl->split_ids[TB_SPLIT_TRAIN], perm + n_val,
               (size_t)(n_all - n_val) * sizeof *perm);
        for (int64_t i = 0; i < n_test; i++) wl->split_ids[TB_SPLIT_TEST][i] = n_all + i;
    }
    free(perm);
    return st;
}

/* Takes `want` ids from the out-of-bootstrap pool oob[0..n_oob) (in its shuffled order),
 * marking them taken; with classes, want / classes per class (the remainder to the first). */
static tb_status take(tb_workload *wl, const int64_t *oob, int64_t n_oob, unsigned char *taken,
                      int64_t want, int64_t *dst, const char *what, tb_error *err)
{
    int classes = wl->src.classes_of ? wl->src.classes : 1;
    int64_t got = 0;
    for (int c = 0; c < classes; c++) {
        int64_t quota = want / classes + (c < want % classes ? 1 : 0), have = 0;
        for (int64_t i = 0; i < n_oob && have < quota; i++) {
            int64_t id = oob[i];
            if (taken[i] || (wl->src.classes_of && wl->src.classes_of[id] != c)) continue;
            taken[i] = 1;
            dst[got++] = id;
            have++;
        }
        if (have < quota)
            return tb_fail(err, TB_ERR_INVALID,
                           "the out-of-bootstrap pool has only %lld examples%s%s for a %s set "
                           "of %lld: choose smaller validation/test sizes",
                           (long long)have, wl->src.classes_of ? " of a class" : "",
                           wl->src.classes_of ? " (stratified)" : "", what, (long long)want);
    }
    return TB_OK;
}

static tb_status bootstrap(tb_workload *wl, const tb_workload_config *cfg, int64_t n_val,
                           int64_t n_test, tb_error *err)
{
    int64_t n = wl->src.n, n_train = n - n_val - n_test;
    if (n_train < 1)
        return tb_fail(err, TB_ERR_INVALID,
                       "validation (%lld) and test (%lld) sizes leave no training data of %lld",
                       (long long)n_val, (long long)n_test, (long long)n);
    tb_status st = alloc_split(wl, TB_SPLIT_TRAIN, n_train, err);
    if (st == TB_OK) st = alloc_split(wl, TB_SPLIT_VALIDATION, n_val, err);
    if (st == TB_OK) st = alloc_split(wl, TB_SPLIT_TEST, n_test, err);
    unsigned char *drawn = calloc((size_t)n, 1);
    int64_t *oob = malloc((size_t)n * sizeof *oob);
    unsigned char *taken = calloc((size_t)n, 1);
    if (st == TB_OK && (!drawn || !oob || !taken))
        st = tb_fail(err, TB_ERR_NOMEM, "out of memory for the bootstrap split");
    if (st == TB_OK) {
        tb_rng rng = tb_rng_make(cfg->split_seed, TB_STREAM_SPLIT);
        for (int64_t i = 0; i < n_train; i++) {
            int64_t id = (int64_t)tb_rng_below(&rng, (uint64_t)n);
            wl->split_ids[TB_SPLIT_TRAIN][i] = id;
            drawn[id] = 1;
        }
        int64_t n_oob = 0;
        for (int64_t id = 0; id < n; id++)
            if (!drawn[id]) oob[n_oob++] = id;
        tb_rng_shuffle_i64(&rng, oob, n_oob);
        st = take(wl, oob, n_oob, taken, n_val, wl->split_ids[TB_SPLIT_VALIDATION],
                  "validation", err);
        if (st == TB_OK)
            st = take(wl, oob, n_oob, taken, n_test, wl->split_ids[TB_SPLIT_TEST], "test", err);
        /* take() fills a set class by class: shuffled, so that any part of it (an evaluation
         * subset) holds every class; the members stay those drawn above */
        if (st == TB_OK) {
            tb_rng_shuffle_i64(&rng, wl->split_ids[TB_SPLIT_VALIDATION], n_val);
            tb_rng_shuffle_i64(&rng, wl->split_ids[TB_SPLIT_TEST], n_test);
        }
    }
    free(drawn);
    free(oob);
    free(taken);
    return st;
}

/* The data holds too few examples for the splits the workload draws by default: a data error
 * (an empty validation or test set would make every evaluation NaN), naming the sizes. */
static tb_status too_little_data(const tb_workload *wl, int64_t n_train, int64_t n_val,
                                 int64_t n_test, tb_error *err)
{
    int64_t n = wl->src.n, n_off = wl->src.n_official_train;
    return tb_fail(err, TB_ERR_FORMAT,
                   "%s: too little data for its splits: %lld examples (%lld in the official "
                   "training set, %lld in the official test set) give %lld training, %lld "
                   "validation and %lld test examples, and none may be empty",
                   wl->vt->info.id, (long long)n, (long long)n_off, (long long)(n - n_off),
                   (long long)(n_train > 0 ? n_train : 0), (long long)n_val,
                   (long long)n_test);
}

tb_status tb_workload_draw_splits(tb_workload *wl, const tb_workload_config *cfg, tb_error *err)
{
    const tb_workload_vtable *vt = wl->vt;
    if (cfg->validation_size < 0 || cfg->test_size < 0 || cfg->train_limit < 0)
        return tb_fail(err, TB_ERR_INVALID, "split sizes must not be negative");
    int64_t n_val = cfg->validation_size > 0 ? cfg->validation_size
                    : vt->default_validation > 0 ? vt->default_validation
                                                 : wl->src.n_official_train / 12;
    tb_status st;
    if (cfg->split_kind == TB_SPLITS_OFFICIAL) {
        if (cfg->test_size > 0)
            return tb_fail(err, TB_ERR_INVALID,
                           "a test size applies to bootstrap splits only (the official test "
                           "set is fixed)");
        int64_t n_all = wl->src.n_official_train, n_test = wl->src.n - n_all;
        /* a validation size the caller chose that leaves no training data is the caller's */
        if (n_val == 0 || n_test == 0 || (n_val >= n_all && cfg->validation_size == 0))
            return too_little_data(wl, n_all - n_val, n_val, n_test, err);
        st = official(wl, cfg, n_val, err);
    } else if (cfg->split_kind == TB_SPLITS_BOOTSTRAP) {
        int64_t n_test = cfg->test_size > 0 ? cfg->test_size
                         : vt->default_test > 0 ? vt->default_test
                                                : wl->src.n - wl->src.n_official_train;
        int64_t n_train = wl->src.n - n_val - n_test;
        if (n_val == 0 || n_test == 0 ||
            (n_train < 1 && cfg->validation_size == 0 && cfg->test_size == 0))
            return too_little_data(wl, n_train, n_val, n_test, err);
        st = bootstrap(wl, cfg, n_val, n_test, err);
    } else {
        return tb_fail(err, TB_ERR_INVALID, "unknown split kind %d", (int)cfg->split_kind);
    }
    if (st == TB_OK && cfg->train_limit > 0 && cfg->train_limit < wl->split_n[TB_SPLIT_TRAIN])
        wl->split_n[TB_SPLIT_TRAIN] = cfg->train_limit;
    return st;
}
