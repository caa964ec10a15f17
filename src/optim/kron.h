/* kron.h: host-side dense linear algebra in double for Kronecker-factored optimizers (K-FAC,
 * EKFAC, Shampoo, SOAP): symmetric eigendecompositions (LAPACK dsyevd), QR, damped inverses (Cholesky),
 * inverse p-th roots, K-FAC's pi, and the unfolding of convolution patches (internal).
 * Matrices are row-major n x n. Factors are small next to the products of preconditioning,
 * so they are decomposed on the host: download, decompose, upload. */
#ifndef TRAINBENCH_KRON_H
#define TRAINBENCH_KRON_H

#include <stdint.h>

#include "trainbench/status.h"

/* Eigendecomposition of the symmetric m [n, n] (only its upper triangle is read): on return
 * m holds the eigenvectors in its COLUMNS and w [n] the eigenvalues in ascending order.
 * Fails with TB_ERR_NUMERIC (message naming `what`) if LAPACK does not converge. */
tb_status tb_kron_eigh(int n, double *m, double *w, const char *what, tb_error *err);

/* out = (m + damping I)^-1 for a symmetric positive semi-definite m (Cholesky). Fails with
 * TB_ERR_NUMERIC naming `what` if m + damping I is not positive definite. out may be m. */
tb_status tb_kron_damped_inverse(int n, const double *m, double damping, double *out,
                                 const char *what, tb_error *err);

/* out = (m + eps * lambda_max I)^(-1/p) for symmetric PSD m, via its eigendecomposition
 * (negative eigenvalues from rounding count as 0). When m is 0, out = I. m is overwritten. */
tb_status tb_kron_inverse_root(int n, double *m, double p, double eps, double *out,
                               const char *what, tb_error *err);

/* The Q factor of the QR decomposition of m [n, n] (row-major; Householder, LAPACK dgeqrf and
 * dorgqr), into m. Fails with TB_ERR_NUMERIC naming `what` if LAPACK reports an error. */
tb_status tb_kron_qr(int n, double *m, const char *what, tb_error *err);

/* pi = sqrt((tr A / dim A) / (tr G / dim G)) (Martens & Grosse), 1 if either trace is not
 * positive. */
double tb_kron_pi(int da, const double *a, int dg, const double *g);

/* Patches of a convolution input x [n, c, h, w] for a k x k kernel: out [n * ho * wo, cols]
 * with cols = c k k (+1 when ones: a trailing homogeneous 1 for the bias), rows ordered by
 * (image, output row, output column), columns as the weight [Cout, Cin, k, k] flattens. */
void tb_kron_unfold(const float *x, int n, int c, int h, int w, int k, int stride, int pad,
                    int ho, int wo, int ones, float *out);

#endif
