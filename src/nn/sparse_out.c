/* sparse_out.c: the sparse-target output layer (trainbench/sparse_out.h): config and memory,
 * weights, the checks on a batch, the losses' coefficients, renormalisation. The math is in
 * docs/SPARSE_TARGETS.md. */
#include "nn/sparse_out_impl.h"

#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

tb_sparse_out_config tb_sparse_out_defaults(int64_t vocab, int64_t dim, int64_t max_batch,
                                            int64_t max_k, tb_sparse_loss loss,
                                            tb_sparse_algo algo)
{
    return (tb_sparse_out_config){.vocab = vocab, .dim = dim, .max_batch = max_batch,
                                  .max_k = max_k, .loss = loss, .algo = algo, .eps = 1e-6f,
                                  .renorm_period = 100, .max_condition = 1e6};
}

/* a * b, or -1 when it overflows (a, b >= 0) */
static int64_t mul(int64_t a, int64_t b)
{
    if (a < 0 || b < 0) return -1;
    return b && a > INT64_MAX / b ? -1 : a * b;
}

static int64_t add(int64_t a, int64_t b) { return a < 0 || b < 0 || a > INT64_MAX - b ? -1 : a + b; }

static tb_status check_config(const tb_sparse_out_config *c, tb_error *err)
{
    if (!c) return tb_fail(err, TB_ERR_INVALID, "sparse_out: NULL config");
    if (c->vocab < 1 || c->vocab > INT32_MAX || c->dim < 1 || c->max_batch < 1 || c->max_k < 1)
        return tb_fail(err, TB_ERR_INVALID,
                       "sparse_out: vocabulary %lld (1..2^31-1), dimension %lld, batch %lld and "
                       "nonzeros per target %lld must be positive",
                       (long long)c->vocab, (long long)c->dim, (long long)c->max_batch,
                       (long long)c->max_k);
    if (c->max_k > c->vocab)
        return tb_fail(err, TB_ERR_INVALID, "sparse_out: %lld nonzeros per target in a "
                       "vocabulary of %lld", (long long)c->max_k, (long long)c->vocab);
    if (c->loss != TB_SPARSE_SQUARED && c->loss != TB_SPARSE_SPHERICAL)
        return tb_fail(err, TB_ERR_INVALID, "sparse_out: unknown loss %d", (int)c->loss);
    if (c->algo != TB_SPARSE_NAIVE && c->algo != TB_SPARSE_EXACT)
        return tb_fail(err, TB_ERR_INVALID, "sparse_out: unknown algorithm %d", (int)c->algo);
    if (!(c->eps > 0.0f) && c->loss == TB_SPARSE_SPHERICAL)
        return tb_fail(err, TB_ERR_INVALID, "sparse_out: spherical epsilon %g must be > 0",
                       (double)c->eps);
    if (c->algo == TB_SPARSE_EXACT && (c->renorm_period < 1 || !(c->max_condition > c->dim)))
        return tb_fail(err, TB_ERR_INVALID, "sparse_out: renormalisation period %d must be >= 1 "
                       "and the condition bound %g above the dimension %lld (U = I has %lld)",
                       c->renorm_period, c->max_condition, (long long)c->dim,
                       (long long)c->dim);
    return TB_OK;
}

tb_status tb_sparse_out_bytes(const tb_sparse_out_config *c, int64_t *bytes, tb_error *err)
{
    tb_status st = check_config(c, err);
    if (st != TB_OK) return st;
    int64_t D = c->vocab, d = c->dim, m = c->max_batch, k = c->max_k, mk = mul(m, k);
    /* v, h; idx, val, ok, zeta; sq, alpha */
    int64_t floats = add(add(mul(D, d), mul(m, d)), add(mul(4, mk), mul(2, m)));
    if (c->algo == TB_SPARSE_EXACT)
        floats = add(add(floats, mul(4, mul(d, d))), add(mul(5, mul(m, d)),
                     add(mul(m, mk), mul(4, mul(m, m)))));
    else
        floats = add(floats, add(mul(m, D), mul(m, d)));
    int64_t b = mul(floats, 4);
    if (b < 0)
        return tb_fail(err, TB_ERR_NOMEM, "sparse_out: a layer of D = %lld, d = %lld, batch %lld "
                       "needs more than 2^63 bytes", (long long)D, (long long)d, (long long)m);
    *bytes = b;
    return TB_OK;
}

static int64_t physical_memory(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
    return pages > 0 && size > 0 ? mul(pages, size) : INT64_MAX;
}

/* carves n floats off *at */
static float *take(float **at, int64_t n)
{
    float *p = *at;
    *at += n;
    return p;
}

static void carve(tb_sparse_out *l, float *at)
{
    const tb_sparse_out_config *c = &l->cfg;
    int64_t D = c->vocab, d = c->dim, m = c->max_batch, k = c->max_k;
    l->v = take(&at, D * d);
    l->h = take(&at, m * d);
    l->idx = (int32_t *)take(&at, m * k);
    l->val = take(&at, m * k);
    l->ok = take(&at, m * k);
    l->sq = take(&at, m);
    l->alpha = take(&at, m), l->zeta = take(&at, m * k);
    if (c->algo == TB_SPARSE_NAIVE) {
        l->o = take(&at, m * D);
        l->r = take(&at, m * d);
        return;
    }
    l->u = take(&at, d * d), l->uinv = take(&at, d * d), l->q = take(&at, d * d);
    l->dq = take(&at, d * d);
    l->t = take(&at, m * d), l->r = take(&at, m * d), l->vz = take(&at, m * d);
    l->y2 = take(&at, m * d), l->ph = take(&at, m * d);
    l->x = take(&at, m * m * k);
    l->gram = take(&at, m * m), l->p = take(&at, m * m);
    l->lu = (double *)(void *)take(&at, 2 * m * m);
}

tb_status tb_sparse_out_create(const tb_sparse_out_config *cfg, tb_sparse_out **out,
                               tb_error *err)
{
    if (!out) return tb_fail(err, TB_ERR_INVALID, "sparse_out: NULL output");
    *out = NULL;
    int64_t bytes = 0;
    tb_status st = tb_sparse_out_bytes(cfg, &bytes, err);
    if (st != TB_OK) return st;
    int64_t limit = cfg->memory_limit > 0 ? cfg->memory_limit : physical_memory();
    if (bytes > limit || (uint64_t)bytes > SIZE_MAX)
        return tb_fail(err, TB_ERR_NOMEM, "sparse_out: a %s layer of D = %lld, d = %lld, batch "
                       "%lld needs %lld bytes (%.1f GiB), more than the %lld bytes allowed",
                       cfg->algo == TB_SPARSE_EXACT ? "exact" : "naive", (long long)cfg->vocab,
                       (long long)cfg->dim, (long long)cfg->max_batch, (long long)bytes,
                       (double)bytes / 1073741824.0, (long long)limit);
    tb_sparse_out *l = calloc(1, sizeof *l);
    float *mem = l ? calloc((size_t)bytes / sizeof(float) + 2, sizeof(float)) : NULL;
    if (!mem) {
        free(l);
        return tb_fail(err, TB_ERR_NOMEM, "sparse_out: cannot allocate %lld bytes",
                       (long long)bytes);
    }
    l->cfg = *cfg;
    carve(l, mem);
    tb_sparse_out_set_weights(l, l->v); /* zeros: U = U^-1 = I, Q = 0 */
    *out = l;
    return TB_OK;
}

void tb_sparse_out_destroy(tb_sparse_out *l)
{
    if (!l) return;
    free(l->v); /* the one block */
    free(l);
}

static void identity(float *a, int64_t d)
{
    memset(a, 0, (size_t)(d * d) * sizeof *a);
    for (int64_t i = 0; i < d; i++) a[i * d + i] = 1.0f;
}

/* Q = V^T V (d x d) */
static void gram_of_v(tb_sparse_out *l)
{
    int d = (int)l->cfg.dim, D = (int)l->cfg.vocab;
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, d, d, D, 1.0f, l->v, d, l->v, d, 0.0f,
                l->q, d);
}

void tb_sparse_out_set_weights(tb_sparse_out *l, const float *w)
{
    int64_t D = l->cfg.vocab, d = l->cfg.dim;
    if (w != l->v) memcpy(l->v, w, (size_t)(D * d) * sizeof *w);
    l->have_forward = false;
    if (l->cfg.algo == TB_SPARSE_NAIVE) return;
    identity(l->u, d);
    identity(l->uinv, d);
    gram_of_v(l);
    l->since_renorm = 0;
}

void tb_sparse_out_weights(const tb_sparse_out *l, float *w)
{
    int64_t D = l->cfg.vocab, d = l->cfg.dim;
    if (l->cfg.algo == TB_SPARSE_NAIVE) {
        memcpy(w, l->v, (size_t)(D * d) * sizeof *w);
        return;
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)D, (int)d, (int)d, 1.0f, l->v,
                (int)d, l->u, (int)d, 0.0f, w, (int)d);
}

void tb_sparse_out_renormalise(tb_sparse_out *l)
{
    if (l->cfg.algo == TB_SPARSE_NAIVE) return;
    int64_t D = l->cfg.vocab, d = l->cfg.dim, rows = l->cfg.max_batch;
    float *tmp = l->t; /* rows x d of workspace */
    for (int64_t r0 = 0; r0 < D; r0 += rows) {
        int64_t n = D - r0 < rows ? D - r0 : rows;
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)d, (int)d, 1.0f,
                    l->v + r0 * d, (int)d, l->u, (int)d, 0.0f, tmp, (int)d);
        memcpy(l->v + r0 * d, tmp, (size_t)(n * d) * sizeof *tmp);
    }
    identity(l->u, d);
    identity(l->uinv, d);
    gram_of_v(l);
    l->since_renorm = 0;
    l->renorms++;
    l->have_forward = false; /* the workspace held the last batch's H U^T */
}

static double frobenius(const float *a, int64_t n)
{
    double s = 0.0;
    for (int64_t i = 0; i < n; i++) s += (double)a[i] * a[i];
    return sqrt(s);
}

double tb_sparse_out_condition(const tb_sparse_out *l)
{
    if (l->cfg.algo == TB_SPARSE_NAIVE) return 1.0;
    int64_t n = l->cfg.dim * l->cfg.dim;
    return frobenius(l->u, n) * frobenius(l->uinv, n);
}

int64_t tb_sparse_out_updates(const tb_sparse_out *l) { return l->updates; }
int64_t tb_sparse_out_renormalisations(const tb_sparse_out *l) { return l->renorms; }
