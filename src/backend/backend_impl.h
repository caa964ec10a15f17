/* backend_impl.h: the interface every backend implements (internal to the library).
 *
 * All pointers are device pointers of this backend, all arrays contiguous row-major unless a
 * stride says otherwise, sizes explicit (llm.c style). Kernels named *_bwd ACCUMULATE into their
 * gradient outputs (dx += ...), so a tensor used twice gets both contributions; callers zero
 * gradient buffers once. The kernels that write the largest gradients (activations, batch and
 * layer norm, max pooling, convolution's dx, softmax cross-entropy's logits) take `dx_acc`:
 * true accumulates, false overwrites dx entirely (its old contents are ignored, so a fresh
 * buffer needs no zeroing pass). A scalar loss lives in device memory as one float; its
 * incoming gradient `dloss` is a device pointer to one float as well. */
#ifndef TRAINBENCH_BACKEND_IMPL_H
#define TRAINBENCH_BACKEND_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "trainbench/backend.h"

typedef enum tb_act {
    TB_ACT_RELU = 0,
    TB_ACT_GELU,    /* exact (erf) form, as torch.nn.GELU() */
    TB_ACT_SILU,
    TB_ACT_TANH,
    TB_ACT_SIGMOID,
    TB_ACT_COUNT
} tb_act;

/* Geometry of a 2-D convolution over NCHW input with OIHW weights. */
typedef struct tb_conv_shape {
    int n, c_in, h, w;       /* input */
    int c_out, kh, kw;       /* weight */
    int stride, pad;         /* same for both spatial dims */
    int h_out, w_out;        /* (h + 2 pad - kh) / stride + 1, ... */
} tb_conv_shape;

/* Geometry of 2-D pooling over NCHW input. avg pooling divides by kh*kw (padding counts as
 * zeros, as torch's count_include_pad=True). */
typedef struct tb_pool_shape {
    int n, c, h, w;
    int kh, kw, stride, pad;
    int h_out, w_out;
} tb_pool_shape;

/* Per-step coefficients of the Adam-family update (see adam_update). */
typedef struct tb_adam_coefs {
    float beta1, beta2, eps;
    /* 1 - beta1 and 1 - beta2, formed in double (the host's bias correction uses the double
     * betas: 1 - (float)0.999999 is 0.66% off 1e-6) */
    float one_minus_beta1, one_minus_beta2;
    float l2;      /* coupled (L2) decay added to the gradient */
    float decay;   /* decoupled decay factor: 1 - lr wd (1: none) */
    float dir_decay; /* with dir: the decay rate added to the direction, carried itself (1 -
                        (float)(1 - wd) is 0 for wd below about 3e-8) */
    float c_m;     /* numerator weight of the first moment (lr / bc1 for Adam) */
    float c_g;     /* numerator weight of the current gradient (0 for Adam) */
    float inv_bc2; /* 1 / (1 - beta2^t), or 1 without bias correction */
} tb_adam_coefs;

/* Per-step coefficients of the RMSProp/Adagrad-family update (see rms_update). */
typedef struct tb_rms_coefs {
    float v_decay, sq_scale; /* v = v_decay v + sq_scale g'^2 */
    float eps;
    bool eps_inside;         /* sqrt(v + eps) (TF RMSProp) or sqrt(v) + eps (torch, Adagrad) */
    float momentum;
    float lr_in, lr_out;     /* learning rate inside the momentum buffer or outside it */
    float l2;
} tb_rms_coefs;

/* Per-step coefficients of the element-wise updates of src/optim/ beyond the Adam family (see
 * sf_update, lion_update, adopt_update, ademamix_update, prodigy_accumulate/_apply). */
typedef struct tb_sf_coefs { /* Schedule-Free AdamW and SGD */
    float beta2, one_minus_beta2, bc2; /* bc2 = 1 - beta2^t */
    float eps, wd;                     /* wd: the decay added to the normalised gradient */
    float ckp1;                        /* the averaging weight c_{k+1} */
    float c_y, lr;                     /* y += c_y u (c_y = lr (beta1 (1 - ckp1) - 1)); z -= lr u */
} tb_sf_coefs;

typedef struct tb_lion_coefs {
    float beta1, one_minus_beta1, beta2, one_minus_beta2;
    float lr, decay; /* decay = 1 - lr wd */
} tb_lion_coefs;

typedef struct tb_adopt_coefs {
    float beta1_gap; /* 1 - beta1: the lerp weight of m toward the normalised gradient */
    float beta2, one_minus_beta2, eps, l2, decay, lr;
    float clip;      /* the normalised gradient is clamped to [-clip, clip] (inf: none) */
    bool first;      /* step 1: v = v + g'^2 only */
} tb_adopt_coefs;

typedef struct tb_ademamix_coefs {
    float one_minus_beta1, beta2, one_minus_beta2, one_minus_beta3; /* beta3 at this step */
    float alpha, bc1, bc2_sqrt, eps, l2, decay, lr;
} tb_ademamix_coefs;

typedef struct tb_prodigy_coefs {
    float l2;                  /* coupled decay added to the gradient (decouple = 0) */
    float beta2, m_scale, v_scale;  /* m = beta1 m + m_scale g'; v = beta2 v + v_scale g'^2 */
    float beta1, beta3, s_scale;    /* s = beta3 s + s_scale g' */
    float decay, dlr, d_eps;   /* apply: w = decay w - dlr m / (sqrt(v) + d_eps) */
} tb_prodigy_coefs;

/* ==== per-step scalars (CUDA graphs) ========================================================
 * Values that change from step to step (learning rate, Adam bias corrections, the dropout
 * counter) are passed to kernels BY POINTER into the backend's step block: TB_STEP_BLOCK_BYTES
 * of host memory (pinned where the backend can) in 64-byte slots (tb_backend_step_alloc),
 * mirrored on devices whose kernels cannot read host memory. The CPU backend reads the host
 * value. The CUDA backend reads it when the kernel is queued, except while a graph is being
 * captured: then a pointer into the block becomes the same offset of the device mirror
 * (tb_step_device_ref), so each replay reads what the last tb_backend_step_upload copied. */
#define TB_STEP_BLOCK_BYTES 65536
#define TB_STEP_SLOT_BYTES 64
#define TB_STEP_SLOTS (TB_STEP_BLOCK_BYTES / TB_STEP_SLOT_BYTES)

typedef struct tb_step_block {
    unsigned char *host;  /* NULL until the first tb_backend_step_alloc */
    void *device;         /* the device mirror; NULL where kernels read host memory (CPU) */
    bool pinned;          /* host came from the backend's host_alloc */
    bool used[TB_STEP_SLOTS];      /* slot i is part of an allocation */
    uint16_t span[TB_STEP_SLOTS];  /* slots of the allocation that starts at slot i */
    size_t high;          /* bytes up to the end of the highest slot in use: what uploads copy */
} tb_step_block;
/* (tb_step_device_ref is defined after struct tb_backend, at the end of this file.) */
/* ==== end of per-step scalars ============================================================== */

/* What a product's output gets besides op(A) op(B), in this order: the bias (added to every
 * row), the residual (a matrix added), then the activation, either forward (C keeps the
 * pre-activation z and act_y receives act(z)) or backward (C, the gradient reaching act(z), is
 * multiplied by act'(z) in place, z = act_x, y = act(z) = act_y for activations whose
 * derivative uses it). Every matrix shares C's row stride ldc. */
typedef enum tb_gemm_act_mode {
    TB_GEMM_ACT_NONE = 0,
    TB_GEMM_ACT_FWD, /* act_y = act(C) */
    TB_GEMM_ACT_BWD  /* C *= act'(act_x) */
} tb_gemm_act_mode;

typedef struct tb_gemm_epilogue {
    const float *bias;     /* [n] or NULL */
    const float *residual; /* [m, n] or NULL */
    tb_gemm_act_mode mode;
    tb_act act;
    float *act_y;        /* FWD: written; BWD: read (may be NULL for ReLU, GELU, SiLU) */
    const float *act_x;  /* BWD: the pre-activation */
} tb_gemm_epilogue;

typedef struct tb_backend_ops {
    /* ---- memory ---- */
    void *(*alloc)(tb_backend *be, size_t bytes);
    void (*free)(tb_backend *be, void *ptr);
    void (*upload)(tb_backend *be, void *dst, const void *host, size_t bytes);
    void (*download)(tb_backend *be, void *host, const void *src, size_t bytes);
    void (*copy)(tb_backend *be, void *dst, const void *src, size_t bytes);
    void (*sync)(tb_backend *be);

    /* ---- optional entries: NULL where a backend has no such thing (CPU) ---- */
    /* CUDA graphs (tb_backend_capture_begin etc. in backend.h document the contract). */
    tb_status (*capture_begin)(tb_backend *be, tb_error *err);
    tb_status (*capture_end)(tb_backend *be, tb_error *err);
    tb_status (*replay)(tb_backend *be, tb_error *err);
    /* The first failure of asynchronous work (a kernel launch, a copy) so far, or TB_OK. */
    tb_status (*status)(tb_backend *be, tb_error *err);
    /* Page-locked host memory (fast, truly asynchronous copies) for the step block; NULL:
     * plain host memory. */
    void *(*host_alloc)(tb_backend *be, size_t bytes);
    void (*host_free)(tb_backend *be, void *ptr);

    /* ---- BLAS-like ---- */
    /* C[M,N] = alpha * op(A) op(B) + beta * C, row-major; op(A) is [M,K], op(B) is [K,N]. */
    void (*gemm)(tb_backend *be, bool trans_a, bool trans_b, int m, int n, int k, float alpha,
                 const float *a, int lda, const float *b, int ldb, float beta, float *c, int ldc);
    /* C = op(A) op(B) with the epilogue ep (bias, residual, activation: tb_gemm_epilogue);
     * C is not read. A backend may leave it NULL: tb_backend_create then fills in gemm
     * followed by the element-wise entries (the CPU backend applies the epilogue to each tile
     * of C while it is in cache instead). */
    void (*gemm_ep)(tb_backend *be, bool trans_a, bool trans_b, int m, int n, int k,
                    const float *a, int lda, const float *b, int ldb, const tb_gemm_epilogue *ep,
                    float *c, int ldc);
    /* A linear layer's parameter gradients in one call: dw [out, in] (+)= dy^T x and, when db
     * is given, db [out] (+)= the column sums of dy, for dy [rows, out] and x [rows, in]; each
     * added to where its acc flag is set, else written (never read). A backend may leave it
     * NULL: tb_backend_create then fills in gemm and bias_grad (the CPU backend sums dy's
     * columns while it packs dy for the product instead of reading it again). */
    void (*linear_wgrad)(tb_backend *be, int rows, int in, int out, const float *dy,
                         const float *x, float *dw, bool dw_acc, float *db, bool db_acc);
    /* The same for `batch` independent products at element strides sa, sb, sc. */
    void (*gemm_batched)(tb_backend *be, bool trans_a, bool trans_b, int m, int n, int k,
                         float alpha, const float *a, int lda, int64_t sa, const float *b, int ldb,
                         int64_t sb, float beta, float *c, int ldc, int64_t sc, int batch);

    /* ---- element-wise ---- */
    void (*fill)(tb_backend *be, float *x, int64_t n, float value);
    void (*scale)(tb_backend *be, float *x, int64_t n, float a);                     /* x *= a */
    void (*axpy)(tb_backend *be, int64_t n, float a, const float *x, float *y);      /* y += a x */
    void (*add)(tb_backend *be, int64_t n, const float *a, const float *b, float *y); /* y = a+b */
    /* db[c] += sum over rows of dy[r, c] */
    void (*bias_grad)(tb_backend *be, int64_t rows, int64_t cols, const float *dy, float *db);
    void (*act_fwd)(tb_backend *be, tb_act act, int64_t n, const float *x, float *y);
    /* dx (+)= dy * act'(x); y = act(x) is given for activations whose derivative uses it. */
    void (*act_bwd)(tb_backend *be, tb_act act, int64_t n, const float *x, const float *y,
                    const float *dy, float *dx, bool dx_acc);
    /* For every index i of shape[0..ndim): dst[i . dst_stride] (+)= src[i . src_stride].
     * Covers transpose, concat, slicing and their backward passes. */
    void (*strided_copy)(tb_backend *be, int ndim, const int64_t *shape, float *dst,
                         const int64_t *dst_stride, const float *src, const int64_t *src_stride,
                         bool accumulate);
    /* Sum of squares of x[0..n), accumulated in double, returned to the host (synchronises). */
    double (*sum_squares)(tb_backend *be, int64_t n, const float *x);
    /* Whether every x[0..n) is finite (no NaN, no infinity), returned to the host
     * (synchronises). One read of x in float: cheaper than sum_squares, for the check before
     * every optimizer step. */
    bool (*all_finite)(tb_backend *be, int64_t n, const float *x);
    /* Copies a device scalar to the host (synchronises). */
    float (*read_scalar)(tb_backend *be, const float *x);

    /* ---- losses (mean over examples; the result is one device float) ---- */
    /* Softmax cross-entropy with label smoothing s: target = (1-s) onehot + s/C. stats [N, 2]
     * is saved for the backward pass: each row's max logit and 1 / sum_j exp(z_j - max), from
     * which the backward pass recomputes the probabilities out of the logits (no [N, C]
     * matrix of probabilities is kept). */
    void (*softmax_xent_fwd)(tb_backend *be, int n, int c, const float *logits,
                             const int32_t *labels, float smoothing, float *stats, float *loss);
    void (*softmax_xent_bwd)(tb_backend *be, int n, int c, const float *logits,
                             const float *stats, const int32_t *labels, float smoothing,
                             const float *dloss, float *dlogits, bool dx_acc);
    /* Mean squared error over all n elements: mean((pred - target)^2). */
    void (*mse_fwd)(tb_backend *be, int64_t n, const float *pred, const float *target,
                    float *loss);
    void (*mse_bwd)(tb_backend *be, int64_t n, const float *pred, const float *target,
                    const float *dloss, float *dpred);
    /* Sigmoid binary cross-entropy on logits, mean over all n elements (targets in [0,1]). */
    void (*bce_fwd)(tb_backend *be, int64_t n, const float *logits, const float *target,
                    float *loss);
    void (*bce_bwd)(tb_backend *be, int64_t n, const float *logits, const float *target,
                    const float *dloss, float *dlogits);

    /* ---- dropout: mask[i] = 0 or 1/(1-p), drawn from Philox(key, c + i/4, lane i%4) with
     * c = *counter, so every backend draws the same mask; the call then advances *counter by
     * ceil(n/4) (the stream's counter: a per-step value, see the step block). ---- */
    void (*dropout_fwd)(tb_backend *be, int64_t n, float p, const uint32_t key[2],
                        uint64_t *counter, const float *x, float *y, float *mask);
    void (*dropout_bwd)(tb_backend *be, int64_t n, const float *mask, const float *dy,
                        float *dx);

    /* ---- convolution and pooling (NCHW) ---- */
    /* Bytes of scratch memory conv2d_fwd/bwd need for this shape. */
    size_t (*conv2d_workspace)(tb_backend *be, const tb_conv_shape *s);
    void (*conv2d_fwd)(tb_backend *be, const tb_conv_shape *s, const float *x, const float *w,
                       const float *bias, float *y, void *workspace);
    /* Any of dx, dw, db may be NULL (not needed); dw and db accumulate, dx as dx_acc says. */
    void (*conv2d_bwd)(tb_backend *be, const tb_conv_shape *s, const float *x, const float *w,
                       const float *dy, float *dx, bool dx_acc, float *dw, float *db,
                       void *workspace);
    void (*maxpool2d_fwd)(tb_backend *be, const tb_pool_shape *s, const float *x, float *y,
                          int32_t *argmax);
    void (*maxpool2d_bwd)(tb_backend *be, const tb_pool_shape *s, const int32_t *argmax,
                          const float *dy, float *dx, bool dx_acc);
    void (*avgpool2d_fwd)(tb_backend *be, const tb_pool_shape *s, const float *x, float *y);
    void (*avgpool2d_bwd)(tb_backend *be, const tb_pool_shape *s, const float *dy, float *dx);
    /* Global average pooling [N,C,HW] -> [N,C]. */
    void (*gap_fwd)(tb_backend *be, int64_t nc, int64_t hw, const float *x, float *y);
    void (*gap_bwd)(tb_backend *be, int64_t nc, int64_t hw, const float *dy, float *dx);

    /* ---- normalisation ---- */
    /* Batch norm over [N,C,HW] per channel. Training: uses batch statistics, saves mean and
     * invstd [C], updates running_mean/var (unbiased var) with `momentum` (torch convention). */
    /* relu: y = max(0, batch norm) (the fused BN-ReLU of tb_op_batchnorm_act). */
    void (*batchnorm_fwd_train)(tb_backend *be, int64_t n, int64_t c, int64_t hw,
                                const float *x, const float *gamma, const float *beta, float eps,
                                float momentum, float *running_mean, float *running_var,
                                bool relu, float *y, float *mean, float *invstd);
    void (*batchnorm_fwd_eval)(tb_backend *be, int64_t n, int64_t c, int64_t hw,
                               const float *x, const float *gamma, const float *beta, float eps,
                               const float *running_mean, const float *running_var, float *y);
    /* relu_beta != NULL: the forward pass was fused with ReLU, with this beta; dy counts only
     * where that output, (x - mean) invstd gamma + beta recomputed exactly as the forward
     * kernel computes it, was > 0. */
    void (*batchnorm_bwd)(tb_backend *be, int64_t n, int64_t c, int64_t hw, const float *x,
                          const float *gamma, const float *mean, const float *invstd,
                          const float *relu_beta, const float *dy, float *dx, bool dx_acc,
                          float *dgamma, float *dbeta);
    /* Backward of eval mode, where the statistics are constants: y = gamma (x - rm) r + beta
     * with r = 1/sqrt(rv + eps); dx += dy gamma r, dgamma += sum dy (x - rm) r, dbeta += sum dy.
     * Any of dx, dgamma, dbeta may be NULL. */
    void (*batchnorm_bwd_eval)(tb_backend *be, int64_t n, int64_t c, int64_t hw, const float *x,
                               const float *gamma, float eps, const float *running_mean,
                               const float *running_var, const float *dy, float *dx,
                               float *dgamma, float *dbeta);
    /* Layer norm over the last dimension of [rows, cols]; saves mean and rstd [rows]. */
    void (*layernorm_fwd)(tb_backend *be, int64_t rows, int64_t cols, const float *x,
                          const float *gamma, const float *beta, float eps, float *y, float *mean,
                          float *rstd);
    void (*layernorm_bwd)(tb_backend *be, int64_t rows, int64_t cols, const float *x,
                          const float *gamma, const float *mean, const float *rstd,
                          const float *dy, float *dx, bool dx_acc, float *dgamma,
                          float *dbeta);

    /* ---- embedding: y[i,:] = table[idx[i],:] for a table of `vocab` rows ----
     * The op checks indices on the host, except inside a replayed CUDA graph, where nothing is
     * read back: there a kernel must not read or write past the table. An index outside
     * [0, vocab) gives a row of NaN forward (so the loss shows it) and no gradient backward. */
    void (*embedding_fwd)(tb_backend *be, int64_t n, int64_t dim, int64_t vocab,
                          const float *table, const int32_t *idx, float *y);
    void (*embedding_bwd)(tb_backend *be, int64_t n, int64_t dim, int64_t vocab,
                          const int32_t *idx, const float *dy, float *dtable);

    /* ---- causal multi-head self-attention core ----
     * qkv [B,T,3C] holds q, k, v side by side (C = heads * head_dim); y [B,T,C].
     * att [B,heads,T,T] saves the softmax probabilities for the backward pass. */
    size_t (*attention_workspace)(tb_backend *be, int b, int t, int c, int heads);
    void (*attention_fwd)(tb_backend *be, int b, int t, int c, int heads, const float *qkv,
                          float *y, float *att, void *workspace);
    /* dqkv += the gradient, or = it when dqkv_acc is false (dqkv is then never read) */
    void (*attention_bwd)(tb_backend *be, int b, int t, int c, int heads, const float *qkv,
                          const float *att, const float *dy, float *dqkv, bool dqkv_acc,
                          void *workspace);

    /* ---- optimizer updates (one sweep over a flat parameter buffer) ---- */
    /* Heavy-ball / Nesterov momentum with L2 weight decay folded into the gradient:
     * g' = g + wd w; v = mu v + g'; w -= lr (nesterov ? g' + mu v : v). *lr is host memory
     * (a per-step value, see the step block). */
    void (*sgd_update)(tb_backend *be, int64_t n, float *w, const float *g, float *v,
                       const float *lr, float momentum, bool nesterov, float weight_decay);
    /* Adam family (Adam, AdamW, NAdam, NAdamW, LAMB's direction), coefficients from the host
     * (tb_adam_coefs; per-step values, see the step block):
     *   g' = g + l2 w;  m = beta1 m + (1-beta1) g';  v = beta2 v + (1-beta2) g'^2;
     *   step = (c_m m + c_g g') / (sqrt(v inv_bc2) + eps)
     * dir == NULL: w = decay w - step. dir != NULL: w is left unchanged and
     * dir = dir_decay w + step (for trust-ratio methods that rescale it per layer). */
    void (*adam_update)(tb_backend *be, int64_t n, float *w, const float *g, float *m, float *v,
                        const tb_adam_coefs *c, float *dir);
    /* RMSProp / Adagrad family, coefficients from the host (tb_rms_coefs; per-step values):
     *   g' = g + l2 w;  v = v_decay v + sq_scale g'^2;
     *   d = eps_inside ? sqrt(v + eps) : sqrt(v) + eps;
     *   m != NULL: m = momentum m + lr_in g'/d; w -= lr_out m.
     *   m == NULL: w -= lr_out lr_in g'/d. */
    void (*rms_update)(tb_backend *be, int64_t n, float *w, const float *g, float *v, float *m,
                       const tb_rms_coefs *c);
    /* LARS momentum with the learning rate inside the buffer (TF / MLPerf form):
     * v = momentum v + scaled_lr (g + l2 w); w -= v. scaled_lr = lr * trust, from the host. */
    void (*lars_update)(tb_backend *be, int64_t n, float *w, const float *g, float *v,
                        float scaled_lr, float momentum, float l2);
    /* Schedule-Free (y the parameters, z the base sequence; v NULL for SGD):
     *   v = beta2 v + (1-beta2) g^2;  u = v ? g / (sqrt(v / bc2) + eps) : g;  u += wd y;
     *   y += ckp1 (z - y) + c_y u;  z -= lr u. */
    void (*sf_update)(tb_backend *be, int64_t n, float *y, const float *g, float *z, float *v,
                      const tb_sf_coefs *c);
    /* Lion: w *= decay; w -= lr sign(beta1 m + (1-beta1) g); m = beta2 m + (1-beta2) g. */
    void (*lion_update)(tb_backend *be, int64_t n, float *w, const float *g, float *m,
                        const tb_lion_coefs *c);
    /* ADOPT: g' = g + l2 w; w *= decay; first: v += g'^2; otherwise
     * u = clamp(g' / max(sqrt(v), eps), -clip, clip); m += beta1_gap (u - m); w -= lr m;
     * v = beta2 v + (1-beta2) g'^2. */
    void (*adopt_update)(tb_backend *be, int64_t n, float *w, const float *g, float *m, float *v,
                         const tb_adopt_coefs *c);
    /* AdEMAMix: g' = g + l2 w; w *= decay; m1 += (1-beta1)(g' - m1);
     * v = beta2 v + (1-beta2) g'^2; m2 += (1-beta3)(g' - m2);
     * w -= lr (m1 / bc1 + alpha m2) / (sqrt(v) / bc2_sqrt + eps). */
    void (*ademamix_update)(tb_backend *be, int64_t n, float *w, const float *g, float *m1,
                            float *m2, float *v, const tb_ademamix_coefs *c);
    /* Prodigy's first pass: g' = g + l2 w; sums[0] = sum g' (p0 - w) (before the update);
     * m = beta1 m + m_scale g'; v = beta2 v + v_scale g'^2; s = beta3 s + s_scale g';
     * sums[1] = sum |s| (after). Synchronises (the sums are read back). */
    void (*prodigy_accumulate)(tb_backend *be, int64_t n, const float *w, const float *g,
                               const float *p0, float *m, float *v, float *s,
                               const tb_prodigy_coefs *c, double sums[2]);
    /* Prodigy's second pass: w = decay w - dlr m / (sqrt(v) + d_eps). */
    void (*prodigy_apply)(tb_backend *be, int64_t n, float *w, const float *m, const float *v,
                          const tb_prodigy_coefs *c);
    /* MARS's corrected gradient: c = k (g - last) + g; last = g. */
    void (*mars_correct)(tb_backend *be, int64_t n, const float *g, float *last, float *c,
                         float k);
} tb_backend_ops;

/* gemm_ep from a backend's other entries (gemm, strided_copy, act_fwd, act_bwd): what
 * tb_backend_create fills in for a backend without its own (exported for the tests). */
void tb_backend_gemm_ep_by_parts(tb_backend *be, bool trans_a, bool trans_b, int m, int n, int k,
                                 const float *a, int lda, const float *b, int ldb,
                                 const tb_gemm_epilogue *ep, float *c, int ldc);

struct tb_backend {
    tb_device device;
    const char *name;
    char description[256];
    int threads;
    void *impl; /* backend-private state */
    tb_backend_ops ops;
    void (*destroy)(tb_backend *be);
    uint64_t gemm_flops; /* 2 m n k summed over gemm/gemm_batched calls (for efficiency figures) */
    bool capturing;      /* between tb_backend_capture_begin and _end (set by backend.c; the
                            one record of an open capture, backends read it) */
    tb_step_block step;  /* per-step scalars (managed by backend.c) */
    struct tb_product_prof *prof; /* the product profile (product_profile.c); NULL: never on */
};

/* Frees the product profile (tb_backend_destroy). */
void tb_product_prof_free(tb_backend *be);

/* While be is capturing a graph, the device address of host pointer p when p lies in be's step
 * block (a device mirror exists); NULL otherwise, meaning: read *p now. */
static inline void *tb_step_device_ref(const tb_backend *be, const void *p)
{
    uintptr_t q = (uintptr_t)p, base = (uintptr_t)be->step.host;
    if (!be->capturing || !be->step.device || !base || q < base ||
        q >= base + TB_STEP_BLOCK_BYTES)
        return NULL;
    return (unsigned char *)be->step.device + (q - base);
}

/* Constructors, one per backend, called by the registry (backend.c). */
tb_status tb_cpu_backend_init(tb_backend *be, const tb_backend_config *config, tb_error *err);
tb_status tb_cuda_backend_init(tb_backend *be, const tb_backend_config *config, tb_error *err);

#endif
