/* op_table.c: the op table: each op's name, forward and backward, indexed by tb_op. */
#include "nn/op_table.h"

_Static_assert(TB_OP_RELU + TB_RELU == TB_OP_RELU && TB_OP_RELU + TB_GELU == TB_OP_GELU &&
                   TB_OP_RELU + TB_SILU == TB_OP_SILU && TB_OP_RELU + TB_TANH == TB_OP_TANH &&
                   TB_OP_RELU + TB_SIGMOID == TB_OP_SIGMOID,
               "the activation ops follow tb_activation's order");
_Static_assert((int)TB_RELU == (int)TB_ACT_RELU && (int)TB_GELU == (int)TB_ACT_GELU &&
                   (int)TB_SILU == (int)TB_ACT_SILU && (int)TB_TANH == (int)TB_ACT_TANH &&
                   (int)TB_SIGMOID == (int)TB_ACT_SIGMOID,
               "a tb_activation is the kernels' tb_act");

const tb_op_def tb_op_table[TB_OP_COUNT] = {
    [TB_OP_MATMUL] = {.name = "matmul", .forward = tb_fwd_matmul, .backward = tb_bwd_matmul},
    [TB_OP_RELU] = {.name = "relu", .forward = tb_fwd_act, .backward = tb_bwd_act},
    [TB_OP_GELU] = {.name = "gelu", .forward = tb_fwd_act, .backward = tb_bwd_act},
    [TB_OP_SILU] = {.name = "silu", .forward = tb_fwd_act, .backward = tb_bwd_act},
    [TB_OP_TANH] = {.name = "tanh", .forward = tb_fwd_act, .backward = tb_bwd_act},
    [TB_OP_SIGMOID] = {.name = "sigmoid", .forward = tb_fwd_act, .backward = tb_bwd_act},
    [TB_OP_ADD] = {.name = "add", .forward = tb_fwd_add, .backward = tb_bwd_add},
    [TB_OP_SCALE] = {.name = "scale", .forward = tb_fwd_scale, .backward = tb_bwd_scale},
    [TB_OP_RESHAPE] = {.name = "reshape", .forward = NULL, .backward = tb_bwd_reshape},
    [TB_OP_TRANSPOSE] = {.name = "transpose",
                         .forward = tb_fwd_transpose, .backward = tb_bwd_transpose},
    [TB_OP_CONCAT] = {.name = "concat", .forward = tb_fwd_concat, .backward = tb_bwd_concat},
    [TB_OP_LINEAR] = {.name = "linear", .forward = tb_fwd_linear, .backward = tb_bwd_linear},
    [TB_OP_MLP] = {.name = "mlp", .forward = tb_fwd_mlp, .backward = tb_bwd_mlp},
    [TB_OP_CONV2D] = {.name = "conv2d", .forward = tb_fwd_conv2d, .backward = tb_bwd_conv2d},
    [TB_OP_MAXPOOL2D] = {.name = "maxpool2d",
                         .forward = tb_fwd_maxpool2d, .backward = tb_bwd_maxpool2d},
    [TB_OP_AVGPOOL2D] = {.name = "avgpool2d",
                         .forward = tb_fwd_avgpool2d, .backward = tb_bwd_avgpool2d},
    [TB_OP_GLOBAL_AVGPOOL] = {.name = "global_avgpool",
                              .forward = tb_fwd_global_avgpool, .backward = tb_bwd_global_avgpool},
    [TB_OP_BATCHNORM] = {.name = "batchnorm",
                         .forward = tb_fwd_batchnorm, .backward = tb_bwd_batchnorm},
    [TB_OP_BATCHNORM_RELU] = {.name = "batchnorm_relu",
                              .forward = tb_fwd_batchnorm, .backward = tb_bwd_batchnorm},
    [TB_OP_LAYERNORM] = {.name = "layernorm",
                         .forward = tb_fwd_layernorm, .backward = tb_bwd_layernorm},
    [TB_OP_SOFTMAX_XENT] = {.name = "softmax_xent",
                            .forward = tb_fwd_softmax_xent, .backward = tb_bwd_softmax_xent},
    [TB_OP_MSE] = {.name = "mse", .forward = tb_fwd_mse, .backward = tb_bwd_mse},
    [TB_OP_SIGMOID_BCE] = {.name = "sigmoid_bce",
                           .forward = tb_fwd_sigmoid_bce, .backward = tb_bwd_sigmoid_bce},
    [TB_OP_DROPOUT] = {.name = "dropout", .forward = tb_fwd_dropout, .backward = tb_bwd_dropout},
    [TB_OP_EMBEDDING] = {.name = "embedding",
                         .forward = tb_fwd_embedding, .backward = tb_bwd_embedding},
    [TB_OP_CAUSAL_ATTENTION] = {.name = "causal_attention",
                                .forward = tb_fwd_causal_attention,
                                .backward = tb_bwd_causal_attention},
    /* its mask is saved as dropout's, so dropout's backward serves */
    [TB_OP_DROPOUT_RANDOM] = {.name = "dropout_random", .forward = tb_fwd_dropout_random,
                              .backward = tb_bwd_dropout},
    [TB_OP_SPARSE_OUT] = {.name = "sparse_out",
                          .forward = tb_fwd_sparse_out, .backward = tb_bwd_sparse_out},
};
