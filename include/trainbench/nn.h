/* nn.h: variables, the tape (reverse-mode autodiff), ops, parameters and layers.
 *
 * A tiny example: a linear layer and a loss, forward and backward.
 *
 *     tb_tape *tape;  tb_tape_create(be, &tape, &err);
 *     tb_var *x = tb_tape_constant(tape, &images);          // [N, 784]
 *     tb_var *y = tb_tape_constant(tape, &labels);          // [N] int32
 *     tb_var *h = tb_op_linear(tape, x, w, b);              // w, b: parameters (tb_params)
 *     tb_var *loss = tb_op_softmax_xent(tape, h, y, 0.0f);
 *     if (tb_tape_backward(tape, loss) != TB_OK) ... tb_tape_error(tape)->message ...
 *     // gradients are now in w->grad, b->grad; tb_tape_reset(tape) frees the step's memory.
 *
 * Ops run eagerly and record a node on the tape for the backward pass. Errors are sticky: once
 * an op fails (bad shapes, out of memory) it returns NULL, every later op on the same tape
 * returns NULL too, and tb_tape_status()/tb_tape_error() tell what happened first. So model
 * code reads straight through and checks once. An input whose value has elements but no
 * memory (a parameter before tb_params_finalize, a zeroed tb_var) fails the op with
 * TB_ERR_INVALID naming it. All step memory (activations, intermediate
 * gradients) comes from the tape's arena and is released by tb_tape_reset. */
#ifndef TRAINBENCH_NN_H
#define TRAINBENCH_NN_H

#include <stdbool.h>
#include <stdint.h>

#include "trainbench/backend.h"
#include "trainbench/rng.h"
#include "trainbench/status.h"
#include "trainbench/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A value and (if it requires one) its gradient, of the same shape. grad.data stays NULL until
 * a gradient flows into it. The gradient is contiguous whatever the value's strides: the tape
 * allocates it so (a strided view's gradient is not a view) and sets grad's strides; a buffer
 * the caller provides must be contiguous (otherwise backward fails with TB_ERR_INVALID).
 * Parameters' gradients live in their tb_params flat buffer; grad_fresh says that buffer holds
 * no gradient yet (tb_params_begin_grads): the first op that sends one writes it instead of
 * adding to it. */
typedef struct tb_var {
    tb_tensor value;
    tb_tensor grad;
    bool requires_grad;
    bool grad_fresh;
} tb_var;

/* ---- the tape -------------------------------------------------------------------------- */
typedef struct tb_tape tb_tape;

/* Every tape call accepts a NULL tape: ops and tb_tape_constant/new_var return NULL,
 * tb_tape_backward returns TB_ERR_INVALID, setters do nothing, and queries answer as for an
 * empty tape whose status is TB_ERR_INVALID ("the tape is NULL"). */
tb_status tb_tape_create(tb_backend *be, tb_tape **out, tb_error *err);
void tb_tape_destroy(tb_tape *tape);
/* Drops every node and all step memory; clears a sticky error. Keep no tb_var of the step. */
void tb_tape_reset(tb_tape *tape);
/* Training mode (default true): dropout active, batch norm uses and updates batch stats. */
void tb_tape_set_training(tb_tape *tape, bool training);
bool tb_tape_training(const tb_tape *tape);
/* Whether ops record nodes for backward (default true). Off for evaluation. */
void tb_tape_set_grad_enabled(tb_tape *tape, bool enabled);
/* Whether every variable's gradient stays as computed for it after the backward pass (default
 * false). By default an op whose output gradient reaches an input unchanged (a residual add,
 * a reshape) lets the input take over the output's buffer, so the output's gradient may later
 * hold the input's whole gradient. Curvature statistics read layer output gradients after the
 * pass (tb_fisher_pass turns this on); it costs a copy per residual. */
void tb_tape_set_keep_grads(tb_tape *tape, bool keep);
/* Whether training-mode batch norm leaves its running mean and variance as they are (default
 * false: it updates them). It still normalises by the batch's statistics and back-propagates
 * as in training. For extra passes that must not change the model, such as the Fisher pass of
 * curvature optimizers (tb_fisher_pass turns this on), so that the moving averages see one
 * update per training step. */
void tb_tape_set_freeze_running_stats(tb_tape *tape, bool freeze);
bool tb_tape_freezes_running_stats(const tb_tape *tape);
tb_status tb_tape_status(const tb_tape *tape);
const tb_error *tb_tape_error(const tb_tape *tape);
tb_backend *tb_tape_backend(const tb_tape *tape);
/* Number of recorded nodes (for tests and diagnostics). */
int tb_tape_node_count(const tb_tape *tape);
/* Bytes of step memory in use now and at most since creation. */
size_t tb_tape_memory_peak(const tb_tape *tape);
uint64_t tb_tape_block_allocations(const tb_tape *tape);

/* Per-op time profile (a diagnostic: where does a step go?). While enabled, every recorded op
 * is charged the time since the previous tape event (the step's start, an input wrapped as a
 * constant, or the previous op) as forward time, and each backward node the time of its
 * backward function; the backend is synchronised around each so device work is included.
 * Sums accumulate over steps until cleared. Synchronising costs time: profile, then measure. */
typedef struct tb_op_profile {
    const char *name; /* the op's name (static storage) */
    int64_t calls;
    double forward_s, backward_s;
} tb_op_profile;
void tb_tape_set_profiling(tb_tape *tape, bool enabled);
/* Copies up to cap entries, largest total time first; returns the number of distinct ops. */
int tb_tape_profile(const tb_tape *tape, tb_op_profile *out, int cap);
void tb_tape_profile_clear(tb_tape *tape);

/* Records a failure on the tape (the first one wins) and returns NULL, so code that builds a
 * model on the tape can fail the same way ops do. */
tb_var *tb_tape_fail(tb_tape *tape, tb_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Wraps an existing tensor (not copied) as a variable without gradient (value NULL fails the
 * tape). */
tb_var *tb_tape_constant(tb_tape *tape, const tb_tensor *value);
/* A new step-scoped variable (contents undefined) and, if requires_grad, a leaf of backward. */
tb_var *tb_tape_new_var(tb_tape *tape, tb_dtype dtype, int ndim, const int64_t *shape,
                        bool requires_grad);
/* A mark of the tape's current end, and a rewind to it: nodes recorded after the mark are
 * dropped (their memory stays until reset). Lets a trainer run an auxiliary forward/backward
 * pass (e.g. for Fisher statistics) and then the training pass on the same batch. */
int tb_tape_mark(const tb_tape *tape);
void tb_tape_rewind(tb_tape *tape, int mark);

/* Runs backward from a scalar loss: seeds d loss = 1 and visits nodes in reverse order.
 * Gradients accumulate into every var that requires one. Once per recorded graph: a second
 * call fails with TB_ERR_INVALID ("backward already ran on this tape") until tb_tape_reset,
 * or a tb_tape_rewind to a mark before every node the pass visited (as the Fisher pass does:
 * mark, forward, backward, rewind, then the training pass); the intermediate gradients are
 * complete after one pass, and a second would add them again. */
tb_status tb_tape_backward(tb_tape *tape, tb_var *loss);

/* ---- ops (forward now, backward recorded) ------------------------------------------------ */
typedef enum tb_activation {
    TB_RELU = 0,
    TB_GELU,
    TB_SILU,
    TB_TANH,
    TB_SIGMOID,
} tb_activation;

const char *tb_activation_name(tb_activation act);
tb_status tb_activation_parse(const char *name, tb_activation *out, tb_error *err);

/* y = x w^T + b; x [N, in] (or [..., in]), w [out, in] with in, out >= 1, b [out] or NULL. */
tb_var *tb_op_linear(tb_tape *tape, tb_var *x, tb_var *w, tb_var *b);
/* y = x w^T + b + r, the residual r (or NULL) of y's shape added in the product's epilogue:
 * tb_op_add(r, tb_op_linear(x, w, b)) without the passes over y. */
tb_var *tb_op_linear_add(tb_tape *tape, tb_var *x, tb_var *w, tb_var *b, tb_var *r);
/* The fused MLP y = act(x w1^T + b1) w2^T + b2 + r (b1, b2, r may be NULL): one op for the
 * linear, activation, linear and residual add of a transformer block, whose activation (and
 * in the backward pass its derivative) is applied by the products' epilogues. hidden (or
 * NULL) receives the hidden layer's variables: [0] before the activation, [1] after it. Other
 * ops may read them: their gradients flow back through the op as they would through the
 * unfused layers. After backward [0] holds its whole gradient; [1] holds only what other
 * ops sent it (the MLP's own part goes straight into [0]'s). */
tb_var *tb_op_mlp(tb_tape *tape, tb_var *x, tb_var *w1, tb_var *b1, tb_activation act,
                  tb_var *w2, tb_var *b2, tb_var *r, tb_var **hidden);
/* Batched matrix product: a [..., M, K] x b [..., K, N] (or b [..., N, K] with trans_b) with
 * equal leading dimensions; 2-D operands are one batch. */
tb_var *tb_op_matmul(tb_tape *tape, tb_var *a, tb_var *b, bool trans_b);
tb_var *tb_op_activation(tb_tape *tape, tb_activation act, tb_var *x);
tb_var *tb_op_relu(tb_tape *tape, tb_var *x);
tb_var *tb_op_gelu(tb_tape *tape, tb_var *x);
tb_var *tb_op_silu(tb_tape *tape, tb_var *x);
tb_var *tb_op_tanh(tb_tape *tape, tb_var *x);
tb_var *tb_op_sigmoid(tb_tape *tape, tb_var *x);
/* a * x for a constant a. */
tb_var *tb_op_scale(tb_tape *tape, tb_var *x, float a);
/* Residual add: a + b, same shape. */
tb_var *tb_op_add(tb_tape *tape, tb_var *a, tb_var *b);
/* A view with a new shape (one dimension may be -1); copies if x is not contiguous. */
tb_var *tb_op_reshape(tb_tape *tape, tb_var *x, int ndim, const int64_t *shape);
/* Swaps dimensions d0 and d1 into a new contiguous tensor. */
tb_var *tb_op_transpose(tb_tape *tape, tb_var *x, int d0, int d1);
/* Concatenates n tensors xs[0..n) along dim (shapes equal elsewhere), n from 1 to
 * TB_CONCAT_MAX_INPUTS (6: a tape node records at most that many inputs); concatenate more in
 * groups. */
#define TB_CONCAT_MAX_INPUTS 6
tb_var *tb_op_concat(tb_tape *tape, tb_var *const *xs, int n, int dim);

/* Mean softmax cross-entropy of logits [N, C] against int32 labels [N], with label smoothing
 * in [0, 1). Returns a scalar. A label outside [0, C) is an error, as an embedding's index:
 * checked on the host (labels in device memory are downloaded), except while a CUDA graph is
 * captured; a replayed step whose labels are out of range gets a NaN loss. */
tb_var *tb_op_softmax_xent(tb_tape *tape, tb_var *logits, tb_var *labels, float smoothing);
/* Mean squared error over all elements (pred and target of one shape; empty is an error). */
tb_var *tb_op_mse(tb_tape *tape, tb_var *pred, tb_var *target);
/* Mean sigmoid binary cross-entropy of logits against targets in [0, 1] (one shape; empty is
 * an error). Like softmax_xent's labels, the targets are checked: on the CPU backend a target
 * outside [0, 1] (or NaN) is an error naming it and its position; the CUDA backend does not
 * read them back, its loss is NaN instead (the gradient, sigmoid(z) - t, is computed as is). */
tb_var *tb_op_sigmoid_bce(tb_tape *tape, tb_var *logits, tb_var *target);

/* Inverted dropout with rate p in [0, 1): identity when not training or p == 0. The mask is
 * drawn from rng (advanced by the op). */
tb_var *tb_op_dropout(tb_tape *tape, tb_var *x, float p, tb_rng *rng);
/* Dropout whose rate is drawn at random for each example (row of dimension 0) uniformly in
 * [lo, hi), 0 <= lo <= hi < 1 (Bouthillier et al. 2015; docs/DROPOUT.md): the rates, then each
 * row's mask, come from rng (advanced by the op). Identity when not training or hi == 0. The
 * rates are drawn on the host: refused inside a CUDA graph capture. */
tb_var *tb_op_dropout_random(tb_tape *tape, tb_var *x, float lo, float hi, tb_rng *rng);
/* The rates tb_op_dropout_random draws for n rows from rng's current state (rng unchanged). */
void tb_dropout_random_rates(const tb_rng *rng, int64_t n, float lo, float hi, float *rates);

/* 2-D convolution: x [N, Cin, H, W], w [Cout, Cin, kh, kw], b [Cout] or NULL. */
tb_var *tb_op_conv2d(tb_tape *tape, tb_var *x, tb_var *w, tb_var *b, int stride, int pad);
tb_var *tb_op_maxpool2d(tb_tape *tape, tb_var *x, int kernel, int stride, int pad);
tb_var *tb_op_avgpool2d(tb_tape *tape, tb_var *x, int kernel, int stride, int pad);
/* [N, C, H, W] -> [N, C] */
tb_var *tb_op_global_avgpool(tb_tape *tape, tb_var *x);

/* Batch norm over [N, C] or [N, C, H, W] per channel. running_mean/var [C] are updated in
 * training mode (momentum as torch: new = (1 - m) old + m batch) and used in eval mode. */
tb_var *tb_op_batchnorm(tb_tape *tape, tb_var *x, tb_var *gamma, tb_var *beta,
                        tb_tensor *running_mean, tb_tensor *running_var, float momentum,
                        float eps);
/* act(batch norm(x)), the common conv block. With ReLU in training mode it is one fused op
 * (one pass less over the activations each way; the same values as the two ops); otherwise
 * it is tb_op_batchnorm followed by tb_op_activation. */
tb_var *tb_op_batchnorm_act(tb_tape *tape, tb_activation act, tb_var *x, tb_var *gamma,
                            tb_var *beta, tb_tensor *running_mean, tb_tensor *running_var,
                            float momentum, float eps);
/* Layer norm over the last dimension; gamma, beta [last]. */
tb_var *tb_op_layernorm(tb_tape *tape, tb_var *x, tb_var *gamma, tb_var *beta, float eps);
/* table [V, D], idx int32 [...] -> [..., D]. An index outside [0, V) is an error. */
tb_var *tb_op_embedding(tb_tape *tape, tb_var *table, tb_var *idx);
/* Causal multi-head self-attention core: qkv [B, T, 3C] -> [B, T, C]. */
tb_var *tb_op_causal_attention(tb_tape *tape, tb_var *qkv, int heads);
/* The mean loss of a sparse-target output layer (trainbench/sparse_out.h) on h [N, d] against
 * targets [N] or [N, K] (int32 indices, values 1): a scalar. Its backward pass writes h's
 * gradient AND updates the layer by SGD at rate lr (the layer is not a tb_params parameter; see
 * docs/SPARSE_TARGETS.md, "In a workload"). CPU backend only (TB_ERR_UNSUPPORTED elsewhere). */
struct tb_sparse_out;
tb_var *tb_op_sparse_out(tb_tape *tape, struct tb_sparse_out *layer, tb_var *h, tb_var *targets,
                         float lr);

/* ---- parameters ------------------------------------------------------------------------- */
/* The kind of a parameter decides optimizer treatment (weight decay, trust-ratio exclusions). */
typedef enum tb_param_kind {
    TB_PARAM_WEIGHT = 0, /* dense or conv weight matrix */
    TB_PARAM_BIAS,
    TB_PARAM_NORM,       /* batch/layer norm scale and shift */
    TB_PARAM_EMBEDDING,
} tb_param_kind;

/* Room for a parameter's name: names of up to TB_PARAM_NAME_MAX - 1 characters; longer ones
 * are refused (not truncated, which would let two names collide). */
#define TB_PARAM_NAME_MAX 64

typedef struct tb_param {
    char name[TB_PARAM_NAME_MAX];
    tb_param_kind kind;
    tb_var var;     /* value and grad are views into the flat buffers */
    int64_t offset; /* in elements, into the flat buffers */
} tb_param;

/* All trainable parameters of a model, in one flat value buffer and one flat gradient buffer.
 * Add every parameter, then finalize (allocates); pointers returned by add stay valid. */
typedef struct tb_params tb_params;

tb_status tb_params_create(tb_backend *be, tb_params **out, tb_error *err);
void tb_params_destroy(tb_params *params);
/* Declares a parameter; its var has no memory until tb_params_finalize. NULL on error: a
 * name declared before or longer than TB_PARAM_NAME_MAX - 1 characters, a bad shape
 * (tensor.h). */
tb_var *tb_params_add(tb_params *params, const char *name, tb_param_kind kind, int ndim,
                      const int64_t *shape, tb_error *err);
tb_status tb_params_finalize(tb_params *params, tb_error *err);
/* The queries below accept NULL params (as parameters with nothing declared). */
int tb_params_count(const tb_params *params);
tb_param *tb_params_get(tb_params *params, int i);
/* Elements of the flat buffers: every tensor padded to a multiple of 16 floats (what
 * optimizers sweep). */
int64_t tb_params_numel(const tb_params *params);
/* The model's parameters: the sum of the tensors' sizes, without padding. */
int64_t tb_params_trainable(const tb_params *params);
float *tb_params_values(tb_params *params); /* flat device buffers */
float *tb_params_grads(tb_params *params);
tb_backend *tb_params_backend(const tb_params *params);
void tb_params_zero_grad(tb_params *params);
/* The same without the pass over the gradients: every parameter's gradient is marked fresh,
 * so that backward writes it (a weight gradient's product overwrites instead of adding to
 * zeros it first read). After backward, tb_params_end_grads zeroes those no gradient reached
 * and clears the marks; between the two, the gradients are not to be read. */
void tb_params_begin_grads(tb_params *params);
void tb_params_end_grads(tb_params *params);
/* Global L2 norm of all gradients. */
double tb_params_grad_norm(tb_params *params);
/* Whether every gradient is finite (no NaN, no infinity; true without parameters): one read
 * of the gradients, cheaper than the norm. */
bool tb_params_grads_finite(tb_params *params);

/* Initialisation on the host, then copied to the device; draws from rng (not NULL). */
tb_status tb_init_normal(tb_var *v, tb_rng *rng, float mean, float std, tb_error *err);
tb_status tb_init_uniform(tb_var *v, tb_rng *rng, float lo, float hi, tb_error *err);
tb_status tb_init_constant(tb_var *v, float value, tb_error *err);
/* Uniform(+-1/sqrt(fan_in)): torch's default for Linear and Conv2d weights and biases. */
tb_status tb_init_fan_in_uniform(tb_var *v, int64_t fan_in, tb_rng *rng, tb_error *err);

/* ---- layers: parameters plus what curvature optimizers need ------------------------------
 * After a forward and backward pass, `input` is the layer's input activation of the batch and
 * `output->grad` the back-propagated gradient of its pre-activation output (K-FAC's a and g).
 * Both point into step memory and are valid until tb_tape_reset. */
typedef struct tb_linear_layer {
    tb_var *w; /* [out, in] */
    tb_var *b; /* [out] or NULL */
    tb_var *input;
    tb_var *output;
} tb_linear_layer;

typedef struct tb_conv_layer {
    tb_var *w; /* [Cout, Cin, k, k] */
    tb_var *b; /* [Cout] or NULL */
    int stride, pad;
    tb_var *input;
    tb_var *output;
} tb_conv_layer;

/* A reference to one dense or convolutional layer (for curvature optimizers and workloads that
 * list their layers). The layer is owned elsewhere and must outlive the reference. */
typedef enum tb_layer_kind {
    TB_LAYER_LINEAR = 0,
    TB_LAYER_CONV = 1,
} tb_layer_kind;

typedef struct tb_layer_ref {
    tb_layer_kind kind;
    const char *name;        /* the parameter prefix, e.g. "fc1"; may be NULL */
    tb_linear_layer *linear; /* when kind == TB_LAYER_LINEAR */
    tb_conv_layer *conv;     /* when kind == TB_LAYER_CONV */
} tb_layer_ref;

/* Declares the layer's parameters ("<name>.weight", "<name>.bias") in params; those names
 * must fit in TB_PARAM_NAME_MAX - 1 characters. */
tb_status tb_linear_layer_init(tb_linear_layer *layer, tb_params *params, const char *name,
                               int64_t in, int64_t out, bool bias, tb_error *err);
tb_var *tb_linear_layer_forward(tb_tape *tape, tb_linear_layer *layer, tb_var *x);
/* r + the layer's output (tb_op_linear_add); layer->output is the sum, whose gradient is the
 * layer's output gradient. */
tb_var *tb_linear_layer_forward_add(tb_tape *tape, tb_linear_layer *layer, tb_var *x, tb_var *r);
/* r (or NULL) + out(act(fc(x))) as one fused op (tb_op_mlp); the two layers' input and
 * output are set as if they had run one by one (fc->output the pre-activation, out->input the
 * activation, out->output the sum). */
tb_var *tb_mlp_forward(tb_tape *tape, tb_linear_layer *fc, tb_activation act,
                       tb_linear_layer *out, tb_var *x, tb_var *r);
tb_status tb_conv_layer_init(tb_conv_layer *layer, tb_params *params, const char *name,
                             int64_t c_in, int64_t c_out, int kernel, int stride, int pad,
                             bool bias, tb_error *err);
tb_var *tb_conv_layer_forward(tb_tape *tape, tb_conv_layer *layer, tb_var *x);

/* For the true Fisher of curvature optimizers (curvature.h): draws one label per row of logits [N, C] from softmax(logits), with rng (advanced), and
 * returns them as an int32 [N] constant on the tape (step memory). NULL on error, recorded on
 * the tape as ops do: empty logits (N or C zero, TB_ERR_SHAPE), no rng, logits not finite. The
 * logits' values are read on the host (one download). */
tb_var *tb_fisher_sample_labels(tb_tape *tape, tb_var *logits, tb_rng *rng);

#ifdef __cplusplus
}
#endif
#endif
