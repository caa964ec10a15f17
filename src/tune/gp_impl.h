/* gp_impl.h: internals shared by the Gaussian-process files of src/tune (not public): the
 * kernel, and a small dense Cholesky on the calling thread (no BLAS: see tune.h). */
#ifndef TRAINBENCH_GP_IMPL_H
#define TRAINBENCH_GP_IMPL_H

#include "trainbench/tune.h"

#include <stdbool.h>

/* Matern-5/2 with ARD: amplitude (1 + sqrt5 r + 5/3 r^2) exp(-sqrt5 r), r the distance
 * scaled by the lengthscales. */
double tb_gp_kernel(const tb_gp_params *p, const double *a, const double *b);

/* K(x, x) + noise I (n x n, row-major) factored in place into its lower Cholesky factor l
 * (n x n). When K is not numerically positive definite, a jitter of 1e-10, 1e-8, ... 1e-4
 * times the amplitude is added to the diagonal before giving up with TB_ERR_NUMERIC. */
tb_status tb_gp_factor(const tb_gp_params *p, const double *x, int n, double *l,
                       tb_error *err);

/* In-place lower Cholesky factor of the symmetric n x n matrix a (its lower triangle is read;
 * the upper is zeroed). False when a pivot is not positive and finite. */
bool tb_chol(double *a, int n);
/* b <- L^-1 b and b <- L^-T b for a lower factor l (n x n). */
void tb_chol_lower_solve(const double *l, int n, double *b);
void tb_chol_upper_solve(const double *l, int n, double *b);

#endif
