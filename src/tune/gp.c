/* gp.c: a Gaussian process with fixed parameters: the Matern-5/2 ARD kernel, the Cholesky
 * factor of its covariance, the posterior mean and variance, joint posterior draws, and
 * expected improvement (docs/MATH.md sections 3 and 4). */
#include "tune/gp_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define SQRT5 2.23606797749978969641

struct tb_gp {
    tb_gp_params p;
    int n;
    double *x;     /* (n, dims) */
    double *l;     /* (n, n) lower Cholesky factor of K + noise I */
    double *alpha; /* (n) (K + noise I)^-1 (y - mean) */
};

double tb_gp_warp_error(double err) { return log(err + 1e-10); }

tb_status tb_gp_params_check(const tb_gp_params *p, tb_error *err)
{
    if (p->dims < 1 || p->dims > TB_GP_MAX_DIMS)
        return tb_fail(err, TB_ERR_INVALID, "a Gaussian process needs 1 to %d dimensions, got %d",
                       TB_GP_MAX_DIMS, p->dims);
    if (!isfinite(p->mean) || !(p->amplitude > 0) || !isfinite(p->amplitude) ||
        !(p->noise >= 0) || !isfinite(p->noise))
        return tb_fail(err, TB_ERR_INVALID,
                       "Gaussian process: mean %g, amplitude %g, noise %g (need a finite mean, "
                       "a positive amplitude and a non-negative noise)", p->mean, p->amplitude,
                       p->noise);
    for (int k = 0; k < p->dims; k++)
        if (!(p->lengthscales[k] > 0) || !isfinite(p->lengthscales[k]))
            return tb_fail(err, TB_ERR_INVALID, "Gaussian process: lengthscale %d is %g", k + 1,
                           p->lengthscales[k]);
    return TB_OK;
}

double tb_gp_kernel(const tb_gp_params *p, const double *a, const double *b)
{
    double r2 = 0;
    for (int k = 0; k < p->dims; k++) {
        double d = (a[k] - b[k]) / p->lengthscales[k];
        r2 += d * d;
    }
    double r = sqrt(r2);
    return p->amplitude * (1 + SQRT5 * r + 5.0 / 3.0 * r2) * exp(-SQRT5 * r);
}

/* ---- Cholesky ------------------------------------------------------------------------------ */
bool tb_chol(double *a, int n)
{
    for (int j = 0; j < n; j++) {
        double *rj = a + (size_t)j * n;
        double d = rj[j];
        for (int k = 0; k < j; k++) d -= rj[k] * rj[k];
        if (!(d > 0) || !isfinite(d)) return false;
        d = sqrt(d);
        rj[j] = d;
        for (int i = j + 1; i < n; i++) {
            double *ri = a + (size_t)i * n;
            double s = ri[j];
            for (int k = 0; k < j; k++) s -= ri[k] * rj[k];
            ri[j] = s / d;
        }
        for (int k = j + 1; k < n; k++) rj[k] = 0;
    }
    return true;
}

void tb_chol_lower_solve(const double *l, int n, double *b)
{
    for (int i = 0; i < n; i++) {
        const double *ri = l + (size_t)i * n;
        double s = b[i];
        for (int k = 0; k < i; k++) s -= ri[k] * b[k];
        b[i] = s / ri[i];
    }
}

void tb_chol_upper_solve(const double *l, int n, double *b)
{
    for (int i = n - 1; i >= 0; i--) {
        double s = b[i];
        for (int k = i + 1; k < n; k++) s -= l[(size_t)k * n + i] * b[k];
        b[i] = s / l[(size_t)i * n + i];
    }
}

tb_status tb_gp_factor(const tb_gp_params *p, const double *x, int n, double *l, tb_error *err)
{
    const int d = p->dims;
    for (int jitter = -1; jitter <= 3; jitter++) {
        /* jitter -1: none; then 1e-10, 1e-8, 1e-6, 1e-4 times the amplitude */
        double extra = jitter < 0 ? 0 : p->amplitude * pow(10.0, -10 + 2 * jitter);
        for (int i = 0; i < n; i++) {
            for (int j = 0; j <= i; j++)
                l[(size_t)i * n + j] = tb_gp_kernel(p, x + (size_t)i * d, x + (size_t)j * d);
            l[(size_t)i * n + i] += p->noise + extra;
        }
        if (tb_chol(l, n)) return TB_OK;
    }
    return tb_fail(err, TB_ERR_NUMERIC,
                   "Gaussian process: the %dx%d covariance is not positive definite even with "
                   "jitter (repeated points with no noise, or non-finite inputs?)", n, n);
}

/* ---- the posterior ------------------------------------------------------------------------ */
void tb_gp_destroy(tb_gp *gp)
{
    if (!gp) return;
    free(gp->x);
    free(gp->l);
    free(gp->alpha);
    free(gp);
}

tb_status tb_gp_create(const tb_gp_params *p, const tb_gp_task *data, tb_gp **out,
                       tb_error *err)
{
    *out = NULL;
    tb_status st = tb_gp_params_check(p, err);
    if (st != TB_OK) return st;
    const int n = data ? data->n : 0, d = p->dims;
    if (n < 0) return tb_fail(err, TB_ERR_INVALID, "Gaussian process: %d observations", n);
    for (int i = 0; i < n; i++) {
        bool finite = isfinite(data->y[i]);
        for (int k = 0; k < d; k++) finite &= isfinite(data->x[(size_t)i * d + k]);
        if (!finite)
            return tb_fail(err, TB_ERR_INVALID, "Gaussian process: observation %d is not finite",
                           i + 1);
    }
    tb_gp *gp = calloc(1, sizeof *gp);
    if (!gp) return tb_fail(err, TB_ERR_NOMEM, "Gaussian process: out of memory");
    gp->p = *p;
    gp->n = n;
    if (n > 0) {
        gp->x = malloc((size_t)n * d * sizeof *gp->x);
        gp->l = malloc((size_t)n * n * sizeof *gp->l);
        gp->alpha = malloc((size_t)n * sizeof *gp->alpha);
        if (!gp->x || !gp->l || !gp->alpha) {
            tb_gp_destroy(gp);
            return tb_fail(err, TB_ERR_NOMEM, "Gaussian process: out of memory");
        }
        memcpy(gp->x, data->x, (size_t)n * d * sizeof *gp->x);
        st = tb_gp_factor(p, gp->x, n, gp->l, err);
        for (int i = 0; i < n; i++) gp->alpha[i] = data->y[i] - p->mean;
        if (st == TB_OK) {
            tb_chol_lower_solve(gp->l, n, gp->alpha);
            tb_chol_upper_solve(gp->l, n, gp->alpha);
        }
    }
    if (st != TB_OK) {
        tb_gp_destroy(gp);
        return st;
    }
    *out = gp;
    return TB_OK;
}

const tb_gp_params *tb_gp_get_params(const tb_gp *gp) { return &gp->p; }

/* k* = k(X, x) into ks (n); returns the mean m + k*^T alpha. */
static double cross(const tb_gp *gp, const double *x, double *ks)
{
    double m = gp->p.mean;
    for (int i = 0; i < gp->n; i++) {
        ks[i] = tb_gp_kernel(&gp->p, gp->x + (size_t)i * gp->p.dims, x);
        m += ks[i] * gp->alpha[i];
    }
    return m;
}

void tb_gp_predict(const tb_gp *gp, const double *x, double *mean, double *var)
{
    enum { STACK = 256 };
    double stack[STACK];
    double *ks = gp->n <= STACK ? stack : malloc((size_t)gp->n * sizeof *ks);
    if (!ks) { /* out of memory: the prior's answer */
        *mean = gp->p.mean;
        *var = gp->p.amplitude;
        return;
    }
    *mean = cross(gp, x, ks);
    tb_chol_lower_solve(gp->l, gp->n, ks);
    double v = gp->p.amplitude;
    for (int i = 0; i < gp->n; i++) v -= ks[i] * ks[i];
    *var = v > 0 ? v : 0;
    if (ks != stack) free(ks);
}

tb_status tb_gp_sample(const tb_gp *gp, const double *x, int m, tb_rng *rng, double *out,
                       tb_error *err)
{
    const int n = gp->n, d = gp->p.dims;
    if (m < 1) return tb_fail(err, TB_ERR_INVALID, "Gaussian process: a draw at %d points", m);
    double *v = malloc(((size_t)m * (n > 0 ? n : 1) + (size_t)m * m + m) * sizeof *v);
    if (!v) return tb_fail(err, TB_ERR_NOMEM, "Gaussian process: out of memory for a draw");
    double *c = v + (size_t)m * (n > 0 ? n : 1), *mu = c + (size_t)m * m;
    /* v_j = L^-1 k(X, x_j); mu_j the posterior mean */
    for (int j = 0; j < m; j++) {
        double *vj = v + (size_t)j * n;
        mu[j] = cross(gp, x + (size_t)j * d, vj);
        tb_chol_lower_solve(gp->l, n, vj);
    }
    /* posterior covariance k(x_i, x_j) - v_i . v_j, factored with escalating jitter */
    bool ok = false;
    for (int jitter = -1; jitter <= 3 && !ok; jitter++) {
        double extra = jitter < 0 ? 0 : gp->p.amplitude * pow(10.0, -10 + 2 * jitter);
        for (int i = 0; i < m; i++)
            for (int j = 0; j <= i; j++) {
                double s = tb_gp_kernel(&gp->p, x + (size_t)i * d, x + (size_t)j * d);
                for (int k = 0; k < n; k++) s -= v[(size_t)i * n + k] * v[(size_t)j * n + k];
                c[(size_t)i * m + j] = s + (i == j ? extra : 0);
            }
        ok = tb_chol(c, m);
    }
    if (ok) {
        double *z = v; /* reuse: the v_j are no longer needed */
        for (int j = 0; j < m; j++) z[j] = tb_rng_normal(rng);
        for (int i = 0; i < m; i++) {
            double s = mu[i];
            for (int k = 0; k <= i; k++) s += c[(size_t)i * m + k] * z[k];
            out[i] = s;
        }
    }
    free(v);
    return ok ? TB_OK
              : tb_fail(err, TB_ERR_NUMERIC,
                        "Gaussian process: the posterior covariance of %d points cannot be "
                        "factored", m);
}

double tb_gp_expected_improvement(double mean, double var, double best)
{
    double gain = best - mean;
    if (!(var > 0)) return gain > 0 ? gain : 0;
    double sd = sqrt(var), z = gain / sd;
    double pdf = exp(-0.5 * z * z) * 0.39894228040143267794, cdf = 0.5 * erfc(-z / sqrt(2.0));
    double ei = gain * cdf + sd * pdf;
    return ei > 0 ? ei : 0;
}
