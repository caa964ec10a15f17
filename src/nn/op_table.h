/* op_table.h: the tape's ops, each named once (internal to the library).
 *
 * An op is an entry of tb_op_table (op_table.c), indexed by its tb_op: its name (the profiler's
 * and the error messages'), its forward function and its backward function. Both read a node:
 * the op's inputs, its output, the step memory the forward pass keeps for backward (saved) and
 * the op's attributes, one named struct per op family in a union (node->attr.conv.stride,
 * node->attr.batchnorm.training). A public op (tb_op_conv2d, ...) checks its operands,
 * allocates its output and step memory, fills a node and runs it (tb_op_run): the forward
 * function computes, and the node is recorded for backward when the output needs a gradient.
 * The layout follows kann's kad_op_list and ggml's op enum. */
#ifndef TRAINBENCH_OP_TABLE_H
#define TRAINBENCH_OP_TABLE_H

#include "backend/backend_impl.h"
#include "trainbench/nn.h"

#define TB_NODE_MAX_IN 6
#define TB_NODE_MAX_SAVED 4

typedef enum tb_op {
    TB_OP_MATMUL,
    /* the activations, in tb_activation's order: TB_OP_RELU + act */
    TB_OP_RELU,
    TB_OP_GELU,
    TB_OP_SILU,
    TB_OP_TANH,
    TB_OP_SIGMOID,
    TB_OP_ADD,
    TB_OP_SCALE,
    TB_OP_RESHAPE,
    TB_OP_TRANSPOSE,
    TB_OP_CONCAT,
    TB_OP_LINEAR,
    TB_OP_MLP,
    TB_OP_CONV2D,
    TB_OP_MAXPOOL2D,
    TB_OP_AVGPOOL2D,
    TB_OP_GLOBAL_AVGPOOL,
    TB_OP_BATCHNORM,
    TB_OP_BATCHNORM_RELU, /* batch norm with a fused ReLU (training mode only) */
    TB_OP_LAYERNORM,
    TB_OP_SOFTMAX_XENT,
    TB_OP_MSE,
    TB_OP_SIGMOID_BCE,
    TB_OP_DROPOUT,
    TB_OP_EMBEDDING,
    TB_OP_CAUSAL_ATTENTION,
    TB_OP_DROPOUT_RANDOM, /* dropout with each example's rate drawn at random */
    TB_OP_SPARSE_OUT, /* the sparse-target output layer's loss; backward updates it */
    TB_OP_COUNT
} tb_op;

typedef struct tb_batchnorm_attr {
    int64_t n, c, hw; /* [N, C] or [N, C, H, W] as N x C x H*W */
    float eps, momentum;
    bool training;
    /* the running statistics the forward pass reads (eval) or updates (training: the layer's
     * own, or copies when the tape freezes them) */
    float *running_mean, *running_var;
} tb_batchnorm_attr;

/* Each op family's attributes: sizes the kernels take, flags and constants. Ops not named here
 * (add, reshape, mse, sigmoid_bce) have none: their kernels read sizes off the tensors. */
typedef union tb_op_attr {
    struct { int64_t batch, m, k, n; bool trans_b; } matmul; /* c [B, M, N] = a [B, M, K] b */
    struct { tb_act kind; } act;                             /* the kernel's activation */
    struct { float a; } scale;
    struct { int d0, d1; } transpose;
    struct { int dim; } concat;
    struct { int64_t rows, in, out; } linear;
    struct { int64_t rows, in, hidden, out; tb_act act; } mlp;
    tb_conv_shape conv; /* the geometry the conv kernels take: .stride, .pad, ... */
    tb_pool_shape pool; /* .kh (= .kw: the kernel), .stride, .pad, ... */
    struct { int64_t nc, hw; } gap; /* [N, C, H, W] as N*C maps of H*W */
    tb_batchnorm_attr batchnorm;
    struct { int64_t rows, cols; float eps; } layernorm;
    struct { int64_t rows, classes; float smoothing; } xent;
    struct { float p; tb_rng *rng; } dropout; /* the kernel advances rng->counter */
    struct { float lo, hi; tb_rng *rng; } dropout_random; /* rates in [lo, hi) */
    struct { int64_t n, dim; } embedding;     /* n indices gathering rows of dim */
    struct { int64_t batch, t, c; int heads; } attention; /* qkv [B, T, 3C] */
    struct { struct tb_sparse_out *layer; float lr; } sparse_out; /* ops_sparse_out.c */
} tb_op_attr;

typedef struct tb_node {
    tb_op op;
    int n_in;
    tb_var *out;
    tb_var *in[TB_NODE_MAX_IN];
    void *saved[TB_NODE_MAX_SAVED]; /* step memory the forward pass keeps for backward */
    tb_op_attr attr;
} tb_node;

/* A forward function computes node->out from the inputs (its memory is allocated); a backward
 * function reads out->grad and accumulates into the inputs' gradients (tb_var_grad). */
typedef void (*tb_op_fn)(tb_tape *tape, const tb_node *node);

typedef struct tb_op_def {
    const char *name;
    tb_op_fn forward;  /* NULL for a view (reshape): the output is its input's memory */
    tb_op_fn backward;
} tb_op_def;

extern const tb_op_def tb_op_table[TB_OP_COUNT];

/* The ops' forward and backward functions (the files that hold them in brackets); each reads
 * only its node and the tape. */
/* [ops_dense.c] */
void tb_fwd_matmul(tb_tape *t, const tb_node *n);
void tb_bwd_matmul(tb_tape *t, const tb_node *n);
void tb_fwd_act(tb_tape *t, const tb_node *n);
void tb_bwd_act(tb_tape *t, const tb_node *n);
void tb_fwd_add(tb_tape *t, const tb_node *n);
void tb_bwd_add(tb_tape *t, const tb_node *n);
void tb_fwd_scale(tb_tape *t, const tb_node *n);
void tb_bwd_scale(tb_tape *t, const tb_node *n);
void tb_bwd_reshape(tb_tape *t, const tb_node *n);
void tb_fwd_transpose(tb_tape *t, const tb_node *n);
void tb_bwd_transpose(tb_tape *t, const tb_node *n);
void tb_fwd_concat(tb_tape *t, const tb_node *n);
void tb_bwd_concat(tb_tape *t, const tb_node *n);
/* [ops_linear.c] */
void tb_fwd_linear(tb_tape *t, const tb_node *n);
void tb_bwd_linear(tb_tape *t, const tb_node *n);
void tb_fwd_mlp(tb_tape *t, const tb_node *n);
void tb_bwd_mlp(tb_tape *t, const tb_node *n);
/* [ops_conv.c] */
void tb_fwd_conv2d(tb_tape *t, const tb_node *n);
void tb_bwd_conv2d(tb_tape *t, const tb_node *n);
void tb_fwd_maxpool2d(tb_tape *t, const tb_node *n);
void tb_bwd_maxpool2d(tb_tape *t, const tb_node *n);
void tb_fwd_avgpool2d(tb_tape *t, const tb_node *n);
void tb_bwd_avgpool2d(tb_tape *t, const tb_node *n);
void tb_fwd_global_avgpool(tb_tape *t, const tb_node *n);
void tb_bwd_global_avgpool(tb_tape *t, const tb_node *n);
/* [ops_norm.c] */
void tb_fwd_batchnorm(tb_tape *t, const tb_node *n);
void tb_bwd_batchnorm(tb_tape *t, const tb_node *n);
void tb_fwd_layernorm(tb_tape *t, const tb_node *n);
void tb_bwd_layernorm(tb_tape *t, const tb_node *n);
/* [ops_loss.c] */
void tb_fwd_softmax_xent(tb_tape *t, const tb_node *n);
void tb_bwd_softmax_xent(tb_tape *t, const tb_node *n);
void tb_fwd_mse(tb_tape *t, const tb_node *n);
void tb_bwd_mse(tb_tape *t, const tb_node *n);
void tb_fwd_sigmoid_bce(tb_tape *t, const tb_node *n);
void tb_bwd_sigmoid_bce(tb_tape *t, const tb_node *n);
void tb_fwd_dropout(tb_tape *t, const tb_node *n);
void tb_bwd_dropout(tb_tape *t, const tb_node *n);
void tb_fwd_dropout_random(tb_tape *t, const tb_node *n);
/* [ops_attention.c] */
void tb_fwd_embedding(tb_tape *t, const tb_node *n);
void tb_bwd_embedding(tb_tape *t, const tb_node *n);
void tb_fwd_causal_attention(tb_tape *t, const tb_node *n);
void tb_bwd_causal_attention(tb_tape *t, const tb_node *n);
/* [ops_sparse_out.c] */
void tb_fwd_sparse_out(tb_tape *t, const tb_node *n);
void tb_bwd_sparse_out(tb_tape *t, const tb_node *n);

#endif
