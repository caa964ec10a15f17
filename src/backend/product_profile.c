/* product_profile.c: the per-product time profile (trainbench/backend.h). Turning it on swaps
 * the backend's matrix entries for timing wrappers that call the backend's own entries, kept
 * aside; turning it off puts them back. A wrapper reached from inside another wrapped call (a
 * backend whose gemm_ep is a gemm followed by element-wise passes) is charged to the outer
 * call only. */
#include "backend/backend_impl.h"

#include "core/clock.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { PROF_MAX = 64 };

struct tb_product_prof {
    bool on;
    int depth;            /* wrapped calls open: only the outermost is charged */
    tb_backend_ops inner; /* the backend's own entries while on */
    tb_product_profile entries[PROF_MAX];
    int n;
    int64_t dropped;
};

static const char *const act_names[TB_ACT_COUNT] = {"relu", "gelu", "silu", "tanh", "sigmoid"};

/* The epilogue's words: "bias", "residual", the activation or its derivative ("gelu'"),
 * separated by spaces. */
static void describe_ep(const tb_gemm_epilogue *ep, char *out, size_t cap)
{
    out[0] = '\0';
    if (!ep) return;
    const char *act = ep->mode == TB_GEMM_ACT_NONE     ? ""
                      : (unsigned)ep->act < TB_ACT_COUNT ? act_names[ep->act]
                                                         : "act";
    snprintf(out, cap, "%s%s%s%s", ep->bias ? "bias " : "", ep->residual ? "residual " : "", act,
             ep->mode == TB_GEMM_ACT_BWD ? "'" : "");
    const size_t len = strlen(out);
    if (len > 0 && out[len - 1] == ' ') out[len - 1] = '\0';
}

static tb_product_profile *entry(struct tb_product_prof *p, bool ta, bool tb, int m, int n,
                                 int k, int batch, const char *ep)
{
    for (int i = 0; i < p->n; i++) {
        tb_product_profile *e = &p->entries[i];
        if (e->trans_a == ta && e->trans_b == tb && e->m == m && e->n == n && e->k == k &&
            e->batch == batch && strcmp(e->epilogue, ep) == 0)
            return e;
    }
    if (p->n == PROF_MAX) return NULL;
    tb_product_profile *e = &p->entries[p->n++];
    *e = (tb_product_profile){.trans_a = ta, .trans_b = tb, .m = m, .n = n, .k = k,
                              .batch = batch, .best_s = 0.0};
    snprintf(e->epilogue, sizeof e->epilogue, "%s", ep);
    return e;
}

/* Opens a timed call: the start time, or a negative value for a nested call (not charged). */
static double open_call(tb_backend *be)
{
    if (be->prof->depth++ > 0) return -1.0;
    be->prof->inner.sync(be);
    return tb_monotonic_s();
}

static void close_call(tb_backend *be, double t0, bool ta, bool tb, int m, int n, int k,
                       int batch, const char *ep)
{
    struct tb_product_prof *p = be->prof;
    p->depth--;
    if (t0 < 0.0) return;
    p->inner.sync(be);
    const double s = tb_monotonic_s() - t0;
    tb_product_profile *e = entry(p, ta, tb, m, n, k, batch, ep);
    if (!e) {
        p->dropped++;
        return;
    }
    if (e->calls == 0 || s < e->best_s) e->best_s = s;
    e->calls++;
    e->total_s += s;
}

static void timed_gemm(tb_backend *be, bool ta, bool tb, int m, int n, int k, float alpha,
                       const float *a, int lda, const float *b, int ldb, float beta, float *c,
                       int ldc)
{
    double t0 = open_call(be);
    be->prof->inner.gemm(be, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    close_call(be, t0, ta, tb, m, n, k, 1, beta != 0.0f ? "acc" : "");
}

static void timed_gemm_ep(tb_backend *be, bool ta, bool tb, int m, int n, int k,
                          const float *a, int lda, const float *b, int ldb,
                          const tb_gemm_epilogue *ep, float *c, int ldc)
{
    char words[40];
    describe_ep(ep, words, sizeof words);
    double t0 = open_call(be);
    be->prof->inner.gemm_ep(be, ta, tb, m, n, k, a, lda, b, ldb, ep, c, ldc);
    close_call(be, t0, ta, tb, m, n, k, 1, words);
}

/* dw [out, in] = dy^T x: the product (T, N) of out x in x rows */
static void timed_linear_wgrad(tb_backend *be, int rows, int in, int out, const float *dy,
                               const float *x, float *dw, bool dw_acc, float *db, bool db_acc)
{
    double t0 = open_call(be);
    be->prof->inner.linear_wgrad(be, rows, in, out, dy, x, dw, dw_acc, db, db_acc);
    close_call(be, t0, true, false, out, in, rows, 1,
               db ? (dw_acc ? "bias sums acc" : "bias sums") : (dw_acc ? "acc" : ""));
}

static void timed_gemm_batched(tb_backend *be, bool ta, bool tb, int m, int n, int k,
                               float alpha, const float *a, int lda, int64_t sa, const float *b,
                               int ldb, int64_t sb, float beta, float *c, int ldc, int64_t sc,
                               int batch)
{
    double t0 = open_call(be);
    be->prof->inner.gemm_batched(be, ta, tb, m, n, k, alpha, a, lda, sa, b, ldb, sb, beta, c,
                                 ldc, sc, batch);
    close_call(be, t0, ta, tb, m, n, k, batch, beta != 0.0f ? "acc" : "");
}

tb_status tb_backend_set_product_profiling(tb_backend *be, bool enabled, tb_error *err)
{
    if (!be) return tb_fail(err, TB_ERR_INVALID, "set_product_profiling: the backend is NULL");
    if (!be->prof) {
        if (!enabled) return TB_OK;
        if (!(be->prof = calloc(1, sizeof *be->prof)))
            return tb_fail(err, TB_ERR_NOMEM, "cannot allocate the product profile");
    }
    struct tb_product_prof *p = be->prof;
    if (enabled == p->on) return TB_OK;
    p->on = enabled;
    if (enabled) {
        p->inner = be->ops;
        be->ops.gemm = timed_gemm;
        be->ops.gemm_ep = timed_gemm_ep;
        be->ops.linear_wgrad = timed_linear_wgrad;
        be->ops.gemm_batched = timed_gemm_batched;
    } else {
        be->ops.gemm = p->inner.gemm;
        be->ops.gemm_ep = p->inner.gemm_ep;
        be->ops.linear_wgrad = p->inner.linear_wgrad;
        be->ops.gemm_batched = p->inner.gemm_batched;
    }
    return TB_OK;
}

static int by_total_desc(const void *a, const void *b)
{
    const double x = ((const tb_product_profile *)a)->total_s;
    const double y = ((const tb_product_profile *)b)->total_s;
    return (x < y) - (x > y);
}

int tb_backend_product_profile(const tb_backend *be, tb_product_profile *out, int cap)
{
    if (!be || !be->prof) return 0;
    const struct tb_product_prof *p = be->prof;
    tb_product_profile sorted[PROF_MAX];
    memcpy(sorted, p->entries, (size_t)p->n * sizeof *sorted);
    qsort(sorted, (size_t)p->n, sizeof *sorted, by_total_desc);
    for (int i = 0; out && i < p->n && i < cap; i++) out[i] = sorted[i];
    return p->n;
}

int64_t tb_backend_product_profile_dropped(const tb_backend *be)
{
    return be && be->prof ? be->prof->dropped : 0;
}

void tb_backend_product_profile_clear(tb_backend *be)
{
    if (!be || !be->prof) return;
    be->prof->n = 0;
    be->prof->dropped = 0;
}

void tb_product_prof_free(tb_backend *be)
{
    free(be->prof);
    be->prof = NULL;
}
