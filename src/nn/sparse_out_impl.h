/* sparse_out_impl.h: the sparse-target output layer's state (internal; docs/SPARSE_TARGETS.md).
 * sparse_out.c: config, memory, weights, renormalisation; sparse_out_exact.c and
 * sparse_out_naive.c: the two forms' forward and backward-update. */
#ifndef TRAINBENCH_SPARSE_OUT_IMPL_H
#define TRAINBENCH_SPARSE_OUT_IMPL_H

#include "trainbench/sparse_out.h"

struct tb_sparse_out {
    tb_sparse_out_config cfg;
    float *v;           /* exact: V (D x d); naive: W (D x d) */
    float *u, *uinv, *q; /* exact: U, U^-1, Q = W^T W (d x d) */
    int64_t updates, renorms, since_renorm;
    /* the last forward pass: its batch (copied) and what backward reads */
    int64_t m, k;
    bool have_forward;
    float *h;           /* m x d */
    int32_t *idx;       /* m x k */
    float *val;         /* m x k */
    float *ok;          /* m x k: o at the target's indices */
    float *sq;          /* m: ||o_i||^2 */
    float *t, *r;       /* exact: H U^T and H Q (m x d); naive: r is the gradient for h */
    float *o;           /* naive: O = H W^T (m x D), then the gradient for O */
    /* exact backward scratch */
    float *alpha, *zeta;    /* m; m x k: dL/do_i = alpha_i o_i + zeta_i (sparse) */
    float *x;               /* m x (m k): o_i at every target index of the batch */
    float *vz, *y2, *dq;    /* m x d; m x d; d x d */
    float *gram, *p, *ph;   /* m x m; m x m; m x d */
    double *lu;             /* m x m */
};

/* the two forms (the batch is already copied into l and checked) */
void tb_sparse_exact_forward(tb_sparse_out *l, double *loss);
tb_status tb_sparse_exact_backward(tb_sparse_out *l, float dloss, float lr, float *dh, bool acc,
                                   tb_error *err);
void tb_sparse_naive_forward(tb_sparse_out *l, double *loss);
void tb_sparse_naive_backward(tb_sparse_out *l, float dloss, float lr, float *dh, bool acc);

/* the per-example loss from ||o||^2 and o at the target (both losses) */
double tb_sparse_example_loss(const tb_sparse_out *l, int64_t i);
/* dL_mean/do_i = alpha_i o_i + zeta_i (zeta at the target's indices), times dloss */
void tb_sparse_coefficients(tb_sparse_out *l, float dloss);

#endif
