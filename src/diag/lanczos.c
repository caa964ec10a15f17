/* lanczos.c: extreme eigenvalues of a symmetric operator by Lanczos with full
 * reorthogonalisation (see trainbench/sharpness.h).
 *
 * With exact arithmetic, K steps from q0 build an orthonormal basis Q of the Krylov space
 * span{q0, A q0, ..., A^(K-1) q0} in which A is tridiagonal, T = Q^T A Q (alpha on the
 * diagonal, beta beside it); T's eigenvalues (Ritz values) converge to A's extreme eigenvalues
 * first. In floating point the basis loses orthogonality as Ritz values converge and copies of
 * them appear; orthogonalising every new vector against all earlier ones, twice ("twice is
 * enough", Parlett), prevents that. The basis is float (one model-sized vector per step), its
 * dot products double. */
#include "trainbench/sharpness.h"

#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "trainbench/rng.h"

/* The start vector's stream: a Lanczos run's own (any id apart from the sources'). */
#define LANCZOS_STREAM 0x4c414e43u

static double dot(const float *a, const float *b, int64_t n)
{
    double s = 0;
    for (int64_t i = 0; i < n; i++) s += (double)a[i] * (double)b[i];
    return s;
}

/* w -= c q */
static void axpy_neg(float *w, double c, const float *q, int64_t n)
{
    for (int64_t i = 0; i < n; i++) w[i] = (float)((double)w[i] - c * (double)q[i]);
}

/* The Ritz values of the m x m tridiagonal (alpha, beta[0..m-1)) into out, largest first, and
 * their residual bounds beta_last * |last component of the eigenvector|. */
static tb_status ritz(const double *alpha, const double *beta, int m, double beta_last,
                      tb_lanczos_result *out, tb_error *err)
{
    double d[TB_LANCZOS_MAX_ITERS], e[TB_LANCZOS_MAX_ITERS];
    double *z = malloc((size_t)m * (size_t)m * sizeof *z);
    if (!z) return tb_fail(err, TB_ERR_NOMEM, "lanczos: cannot allocate %d x %d values", m, m);
    memcpy(d, alpha, (size_t)m * sizeof *d);
    if (m > 1) memcpy(e, beta, (size_t)(m - 1) * sizeof *e);
    lapack_int info = LAPACKE_dstev(LAPACK_COL_MAJOR, 'V', m, d, e, z, m);
    if (info != 0) {
        free(z);
        return tb_fail(err, TB_ERR_NUMERIC,
                       "lanczos: the tridiagonal eigensolver (dstev) failed (info %d)", (int)info);
    }
    for (int j = 0; j < m; j++) { /* dstev: ascending; eigenvector j is column j */
        out->ritz[j] = d[m - 1 - j];
        out->residual[j] = fabs(beta_last * z[(size_t)(m - 1 - j) * (size_t)m + (size_t)(m - 1)]);
    }
    free(z);
    return TB_OK;
}

tb_status tb_lanczos(int64_t n, tb_linop_fn op, void *user, int iterations, uint64_t seed,
                     tb_lanczos_result *out, tb_error *err)
{
    if (!op || !out)
        return tb_fail(err, TB_ERR_INVALID, "lanczos: %s is NULL", op ? "out" : "the operator");
    if (n < 1) return tb_fail(err, TB_ERR_INVALID, "lanczos: dimension %lld < 1", (long long)n);
    if (iterations < 1 || iterations > TB_LANCZOS_MAX_ITERS)
        return tb_fail(err, TB_ERR_INVALID, "lanczos: iterations must be 1 to %d, got %d",
                       TB_LANCZOS_MAX_ITERS, iterations);
    memset(out, 0, sizeof *out);
    int k = (int64_t)iterations < n ? iterations : (int)n;
    /* q_0 .. q_(k-1), then w */
    float *q = malloc((size_t)(k + 1) * (size_t)n * sizeof *q);
    if (!q)
        return tb_fail(err, TB_ERR_NOMEM, "lanczos: cannot allocate %d vectors of %lld values",
                       k + 1, (long long)n);
    float *w = q + (size_t)k * (size_t)n;
    tb_rng rng = tb_rng_make(seed, LANCZOS_STREAM);
    tb_rng_fill_normal(&rng, q, n, 0.0f, 1.0f);
    double norm = sqrt(dot(q, q, n));
    for (int64_t i = 0; i < n; i++) q[i] = (float)(q[i] / norm);
    double alpha[TB_LANCZOS_MAX_ITERS], beta[TB_LANCZOS_MAX_ITERS];
    double scale = 0; /* |alpha| + beta so far: the size of A as seen, for the breakdown test */
    tb_status st = TB_OK;
    int m = 0;
    while (m < k) {
        const float *qj = q + (size_t)m * (size_t)n;
        if ((st = op(user, qj, w, err)) != TB_OK) break;
        double ww = dot(w, w, n);
        if (!isfinite(ww)) {
            st = tb_fail(err, TB_ERR_NUMERIC,
                         "lanczos: the operator returned values that are not finite (step %d)",
                         m + 1);
            break;
        }
        if (m > 0) axpy_neg(w, beta[m - 1], qj - n, n);
        /* against every basis vector, twice; the part along q_j is alpha */
        alpha[m] = 0;
        for (int pass = 0; pass < 2; pass++)
            for (int i = 0; i <= m; i++) {
                const float *qi = q + (size_t)i * (size_t)n;
                double c = dot(qi, w, n);
                axpy_neg(w, c, qi, n);
                if (i == m) alpha[m] += c;
            }
        beta[m] = sqrt(dot(w, w, n));
        scale = fmax(scale, fabs(alpha[m]) + beta[m] + (m > 0 ? beta[m - 1] : 0.0));
        m++;
        /* an invariant subspace (beta ~ 0 at the float vectors' precision, whose rounding
         * leaves a few 1e-7 of the scale): T's eigenvalues are A's */
        if (beta[m - 1] <= 1e-5 * scale) {
            beta[m - 1] = 0;
            break;
        }
        if (m < k)
            for (int64_t i = 0; i < n; i++)
                q[(size_t)m * (size_t)n + (size_t)i] = (float)(w[i] / beta[m - 1]);
    }
    if (st == TB_OK) {
        out->iterations = m;
        st = ritz(alpha, beta, m, m == n ? 0.0 : beta[m - 1], out, err);
    }
    free(q);
    return st;
}
