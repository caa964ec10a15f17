/* sparse_out.h: an output layer o = W h (W of D x d) trained against K-sparse targets y, with the
 * loss, the gradient for h and the SGD update of W computed either the naive way (O(D d) per
 * example: o is formed) or exactly in O(d^2 + K d) per example without forming o (Vincent, de
 * Brebisson, Bouthillier 2015, "Efficient Exact Gradient Update for training Deep Networks with
 * Very Large Sparse Targets"). The math, what the exact form keeps (W = V U, U^-1, Q = W^T W)
 * and its renormalisation are in docs/SPARSE_TARGETS.md.
 *
 * Both forms compute the same numbers up to float32 rounding: the mean over the batch of the
 * per-example loss, its gradient for each h, and W <- W - lr dL/dW. The layer lives in host
 * memory (it runs on the CPU, with OpenBLAS). */
#ifndef TRAINBENCH_SPARSE_OUT_H
#define TRAINBENCH_SPARSE_OUT_H

#include "trainbench/status.h"

#include <stdbool.h>
#include <stdint.h>

typedef enum tb_sparse_loss {
    TB_SPARSE_SQUARED = 0,   /* ||o - y||^2 */
    TB_SPARSE_SPHERICAL = 1, /* -sum_k y_k log((o_k^2 + eps) / sum_j (o_j^2 + eps)) */
} tb_sparse_loss;

typedef enum tb_sparse_algo {
    TB_SPARSE_NAIVE = 0, /* dense W, o formed: O(D d) per example */
    TB_SPARSE_EXACT = 1, /* W = V U, Q = W^T W: O(d^2 + K d) per example */
} tb_sparse_algo;

typedef struct tb_sparse_out_config {
    int64_t vocab, dim;         /* D, d */
    int64_t max_batch, max_k;   /* examples per call and nonzeros per target, at most */
    tb_sparse_loss loss;
    tb_sparse_algo algo;
    float eps;                  /* the spherical softmax's epsilon (> 0) */
    int renorm_period;          /* exact: updates between renormalisations (> 0) */
    double max_condition;       /* exact: the bound on ||U||_F ||U^-1||_F (> dim) */
    int64_t memory_limit;       /* bytes the layer may take; 0: the machine's physical memory */
} tb_sparse_out_config;

/* The defaults: eps 1e-6, renormalisation every 100 updates,
 * condition bound 1e6, the machine's memory. */
tb_sparse_out_config tb_sparse_out_defaults(int64_t vocab, int64_t dim, int64_t max_batch,
                                            int64_t max_k, tb_sparse_loss loss,
                                            tb_sparse_algo algo);

/* The bytes a layer of cfg allocates (weights and its step workspace); fails on an invalid
 * config or a size that overflows. */
tb_status tb_sparse_out_bytes(const tb_sparse_out_config *cfg, int64_t *bytes, tb_error *err);

typedef struct tb_sparse_out tb_sparse_out;

/* Creates a layer with W = 0. A layer larger than cfg->memory_limit is refused (TB_ERR_NOMEM,
 * naming the bytes it needs) before anything is allocated. */
tb_status tb_sparse_out_create(const tb_sparse_out_config *cfg, tb_sparse_out **out,
                               tb_error *err);
void tb_sparse_out_destroy(tb_sparse_out *l);

/* Sets W (D x d, row-major; exact: V = W, U = U^-1 = I, Q = W^T W). */
void tb_sparse_out_set_weights(tb_sparse_out *l, const float *w);
/* Writes W (D x d; exact: V U, O(D d^2)). */
void tb_sparse_out_weights(const tb_sparse_out *l, float *w);

/* m targets of k nonzeros each: idx[i k + j] in [0, D), distinct within a target, with values
 * val (NULL: all 1; the spherical loss needs them > 0). A target of fewer nonzeros fills its
 * other slots with -1 (empty: its value is not read); each target needs one index at least. */
typedef struct tb_sparse_target {
    int64_t m, k;
    const int32_t *idx;
    const float *val;
} tb_sparse_target;

/* The mean loss of h (m x d, row-major) against y; keeps h, y and what the backward pass needs
 * (a copy: the caller's buffers may change afterwards). */
tb_status tb_sparse_out_forward(tb_sparse_out *l, const float *h, const tb_sparse_target *y,
                                double *loss, tb_error *err);
/* After a forward pass: writes (acc: adds) dloss * d(mean loss)/dh to dh (m x d; NULL: not
 * wanted), then updates W <- W - lr dloss dL/dW. Exact: every renorm_period updates U is folded
 * into V; an update that takes U's condition past the bound, or leaves a non-finite value,
 * fails with TB_ERR_NUMERIC (the layer is then unusable). */
tb_status tb_sparse_out_backward_update(tb_sparse_out *l, float dloss, float lr, float *dh,
                                        bool acc, tb_error *err);

/* Exact: folds U into V now (V <- V U, U = U^-1 = I, Q <- V^T V); naive: nothing. */
void tb_sparse_out_renormalise(tb_sparse_out *l);
/* Exact: ||U||_F ||U^-1||_F (d for U = I); naive: 1. */
double tb_sparse_out_condition(const tb_sparse_out *l);
/* Updates so far, and renormalisations so far. */
int64_t tb_sparse_out_updates(const tb_sparse_out *l);
int64_t tb_sparse_out_renormalisations(const tb_sparse_out *l);

#endif
