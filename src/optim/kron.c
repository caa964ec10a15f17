/* kron.c: host double-precision helpers for Kronecker-factored optimizers (see kron.h). */
#include "optim/kron.h"

#include <lapacke.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

tb_status tb_kron_eigh(int n, double *m, double *w, const char *what, tb_error *err)
{
    lapack_int info = LAPACKE_dsyevd(LAPACK_ROW_MAJOR, 'V', 'U', n, m, n, w);
    if (info != 0)
        return tb_fail(err, TB_ERR_NUMERIC,
                       "%s: eigendecomposition of a %dx%d factor failed (LAPACK info %d; "
                       "non-finite statistics?)",
                       what, n, n, (int)info);
    return TB_OK;
}

tb_status tb_kron_qr(int n, double *m, const char *what, tb_error *err)
{
    double *tau = malloc((size_t)n * sizeof *tau);
    if (!tau) return tb_fail(err, TB_ERR_NOMEM, "%s: out of memory for a %dx%d QR", what, n, n);
    lapack_int info = LAPACKE_dgeqrf(LAPACK_ROW_MAJOR, n, n, m, n, tau);
    if (info == 0) info = LAPACKE_dorgqr(LAPACK_ROW_MAJOR, n, n, n, m, n, tau);
    free(tau);
    if (info != 0)
        return tb_fail(err, TB_ERR_NUMERIC,
                       "%s: QR decomposition of a %dx%d matrix failed (LAPACK info %d; "
                       "non-finite statistics?)",
                       what, n, n, (int)info);
    return TB_OK;
}

tb_status tb_kron_damped_inverse(int n, const double *m, double damping, double *out,
                                 const char *what, tb_error *err)
{
    if (out != m) memcpy(out, m, (size_t)n * n * sizeof *out);
    for (int i = 0; i < n; i++) out[(size_t)i * n + i] += damping;
    lapack_int info = LAPACKE_dpotrf(LAPACK_ROW_MAJOR, 'U', n, out, n);
    if (info == 0) info = LAPACKE_dpotri(LAPACK_ROW_MAJOR, 'U', n, out, n);
    if (info != 0)
        return tb_fail(err, TB_ERR_NUMERIC,
                       "%s: the %dx%d factor plus %g I is not positive definite (LAPACK "
                       "info %d); increase damping",
                       what, n, n, damping, (int)info);
    for (int i = 0; i < n; i++) /* dpotri fills the upper triangle */
        for (int j = 0; j < i; j++) out[(size_t)i * n + j] = out[(size_t)j * n + i];
    return TB_OK;
}

tb_status tb_kron_inverse_root(int n, double *m, double p, double eps, double *out,
                               const char *what, tb_error *err)
{
    double *w = malloc((size_t)n * sizeof *w), *d = malloc((size_t)n * sizeof *d);
    if (!w || !d) {
        free(w);
        free(d);
        return tb_fail(err, TB_ERR_NOMEM, "%s: out of memory for a %dx%d root", what, n, n);
    }
    tb_status st = tb_kron_eigh(n, m, w, what, err);
    if (st == TB_OK) {
        double lmax = w[n - 1] > 0.0 ? w[n - 1] : 0.0;
        for (int i = 0; i < n; i++) {
            double l = w[i] > 0.0 ? w[i] : 0.0;
            d[i] = lmax > 0.0 ? pow(l + eps * lmax, -1.0 / p) : 1.0;
        }
        /* out = U diag(d) U^T */
        for (int i = 0; i < n; i++)
            for (int j = i; j < n; j++) {
                double s = 0.0;
                for (int k = 0; k < n; k++) s += m[(size_t)i * n + k] * d[k] * m[(size_t)j * n + k];
                out[(size_t)i * n + j] = out[(size_t)j * n + i] = s;
            }
    }
    free(w);
    free(d);
    return st;
}

double tb_kron_pi(int da, const double *a, int dg, const double *g)
{
    double ta = 0.0, tg = 0.0;
    for (int i = 0; i < da; i++) ta += a[(size_t)i * da + i];
    for (int i = 0; i < dg; i++) tg += g[(size_t)i * dg + i];
    if (!(ta > 0.0) || !(tg > 0.0)) return 1.0;
    return sqrt((ta / da) / (tg / dg));
}

void tb_kron_unfold(const float *x, int n, int c, int h, int w, int k, int stride, int pad,
                    int ho, int wo, int ones, float *out)
{
    const int64_t cols = (int64_t)c * k * k + (ones ? 1 : 0);
    for (int b = 0; b < n; b++)
        for (int oh = 0; oh < ho; oh++)
            for (int ow = 0; ow < wo; ow++) {
                float *row = out + (((int64_t)b * ho + oh) * wo + ow) * cols;
                for (int ch = 0; ch < c; ch++)
                    for (int ki = 0; ki < k; ki++)
                        for (int kj = 0; kj < k; kj++) {
                            int ih = oh * stride - pad + ki, iw = ow * stride - pad + kj;
                            bool in = ih >= 0 && ih < h && iw >= 0 && iw < w;
                            *row++ = in ? x[(((int64_t)b * c + ch) * h + ih) * w + iw] : 0.0f;
                        }
                if (ones) *row = 1.0f;
            }
}
