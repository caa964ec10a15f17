/* psgd_kron_factor.c: PSGD Kron's factor algebra in double on the host, the products and
 * triangular solves through BLAS (dtrmm, dtrsm, dgemm), the rest as kron-torch writes it. */
#include "optim/psgd_kron_factor.h"

#include <cblas.h>
#include <float.h>
#include <math.h>
#include <string.h>

/* x [a, b] = op(Q0) x (side 0, left) or x op(Q1) (side 1, right); op the transpose if trans.
 * inverse: op(Q)^-1 instead (triangular solve; a diagonal divides). */
static void apply(const kron_factors *f, int k, bool trans, bool inverse, double *x)
{
    const kron_side *s = &f->side[k];
    const int a = f->a, b = f->b;
    if (!s->q) return;
    if (s->tri) {
        CBLAS_SIDE side = k == 0 ? CblasLeft : CblasRight;
        CBLAS_TRANSPOSE op = trans ? CblasTrans : CblasNoTrans;
        if (inverse)
            cblas_dtrsm(CblasRowMajor, side, CblasUpper, op, CblasNonUnit, a, b, 1.0, s->q,
                        s->n, x, b);
        else
            cblas_dtrmm(CblasRowMajor, side, CblasUpper, op, CblasNonUnit, a, b, 1.0, s->q,
                        s->n, x, b);
        return;
    }
    for (int i = 0; i < a; i++)
        for (int j = 0; j < b; j++) {
            double d = s->q[k == 0 ? i : j];
            x[i * b + j] = inverse ? x[i * b + j] / d : x[i * b + j] * d;
        }
}

static double max_abs(const double *x, int64_t n)
{
    double m = 0.0;
    for (int64_t i = 0; i < n; i++)
        if (fabs(x[i]) > m) m = fabs(x[i]);
    return m;
}

/* out [n, n] = x x^T (side 0) or x^T x (side 1) for x [a, b]; diagonal: only the diagonal [n]. */
static void gram(const kron_factors *f, int k, const double *x, double beta, double *out)
{
    const int a = f->a, b = f->b, n = f->side[k].n;
    if (f->side[k].tri) {
        cblas_dgemm(CblasRowMajor, k == 0 ? CblasNoTrans : CblasTrans,
                    k == 0 ? CblasTrans : CblasNoTrans, n, n, k == 0 ? b : a, 1.0, x, b, x, b,
                    beta, out, n);
        return;
    }
    for (int i = 0; i < n; i++) out[i] *= beta;
    for (int i = 0; i < a; i++)
        for (int j = 0; j < b; j++) out[k == 0 ? i : j] += x[i * b + j] * x[i * b + j];
}

/* kron-torch's _lb: a cheap lower bound of the spectral norm of the symmetric m [n, n] whose
 * largest |entry| is mx > 0 (u [n] scratch; m is divided by mx). */
static double lower_bound(double *m, int n, double mx, double *u)
{
    for (int i = 0; i < n * n; i++) m[i] /= mx;
    int best = 0;
    double top = -1.0;
    for (int j = 0; j < n; j++) {
        double c = 0.0;
        for (int i = 0; i < n; i++) c += m[i * n + j] * m[i * n + j];
        if (c > top) top = c, best = j;
    }
    double nx = 0.0;
    for (int j = 0; j < n; j++) { /* x = m^T column best */
        double e = 0.0;
        for (int i = 0; i < n; i++) e += m[i * n + best] * m[i * n + j];
        u[j] = e;
        nx += e * e;
    }
    nx = sqrt(nx);
    double ny = 0.0;
    for (int k = 0; k < n; k++) {
        double e = 0.0;
        for (int j = 0; j < n; j++) e += m[k * n + j] * u[j] / nx;
        ny += e * e;
    }
    return sqrt(ny) * mx;
}

void kron_update_precond(kron_factors *f, double *g, const double *v, double lr,
                         kron_scratch *s)
{
    const int64_t n = (int64_t)f->a * f->b;
    double mean = 0.0;
    for (int64_t i = 0; i < n; i++) mean += fabs(g[i]);
    mean /= (double)n;
    const double noise = sqrt((double)FLT_EPSILON) * mean;
    for (int64_t i = 0; i < n; i++) g[i] += noise * v[i];
    memcpy(s->x, g, (size_t)n * sizeof *g); /* A = Q0 G Q1^T */
    apply(f, 0, false, false, s->x);
    apply(f, 1, true, false, s->x);
    memcpy(s->y, v, (size_t)n * sizeof *v); /* conjB = Q0^-T V Q1^-1 */
    apply(f, 0, true, true, s->y);
    apply(f, 1, false, true, s->y);
    for (int k = 0; k < 2; k++) {
        kron_side *q = &f->side[k];
        if (!q->q) continue;
        const int m = q->n, mm = q->tri ? m * m : m;
        double *t1 = s->t, *t2 = s->t + mm; /* AA^T - BB^T and AA^T + BB^T */
        gram(f, k, s->x, 0.0, t1);
        gram(f, k, s->y, 0.0, t2);
        for (int i = 0; i < mm; i++) {
            double aa = t1[i], bb = t2[i];
            t1[i] = lr * (aa - bb);
            t2[i] = aa + bb;
        }
        if (q->tri) {
            double mx = max_abs(t2, mm);
            double lb = mx > 0.0 ? lower_bound(t2, m, mx, s->u) : 0.0;
            if (lb < DBL_MIN) lb = DBL_MIN;
            memcpy(t2, q->q, (size_t)mm * sizeof *t2); /* Q -= triu(t1) Q / lb */
            cblas_dtrmm(CblasRowMajor, CblasLeft, CblasUpper, CblasNoTrans, CblasNonUnit, m, m,
                        1.0 / lb, t1, m, t2, m);
            for (int i = 0; i < mm; i++) q->q[i] -= t2[i];
        } else {
            double mx = max_abs(t2, m);
            if (mx < DBL_MIN) mx = DBL_MIN;
            for (int i = 0; i < m; i++) q->q[i] -= t1[i] * q->q[i] / mx;
        }
    }
}

void kron_precondition(const kron_factors *f, const double *g, double *out)
{
    memcpy(out, g, (size_t)f->a * f->b * sizeof *g);
    apply(f, 0, false, false, out);
    apply(f, 0, true, false, out);
    apply(f, 1, true, false, out);
    apply(f, 1, false, false, out);
}

void kron_balance(kron_factors *f)
{
    double norms[2], logsum = 0.0;
    int count = 0;
    for (int k = 0; k < 2; k++) {
        const kron_side *q = &f->side[k];
        if (!q->q) continue;
        norms[k] = max_abs(q->q, q->tri ? (int64_t)q->n * q->n : q->n);
        logsum += log(norms[k]);
        count++;
    }
    const double gm = exp(logsum / count);
    for (int k = 0; k < 2; k++) {
        kron_side *q = &f->side[k];
        if (!q->q) continue;
        const int64_t mm = q->tri ? (int64_t)q->n * q->n : q->n;
        for (int64_t i = 0; i < mm; i++) q->q[i] *= gm / norms[k];
    }
}
