/* curvature.h: what curvature optimizers (kfac, ekfac) need from the model and the trainer.
 *
 * K-FAC and EKFAC precondition each dense or convolution layer with Kronecker factors built
 * from the layer's input activations a and the gradients g of its pre-activation output. The
 * trainer tells the optimizer which layers to precondition once, after creating it:
 *
 *     tb_layer_ref layers[3] = {tb_layer_linear(&m->l1), tb_layer_linear(&m->l2),
 *                               tb_layer_linear(&m->l3)};
 *     tb_optimizer_set_layers(opt, layers, 3, &err);
 *
 * Parameters of no listed layer (norm scales, embeddings, ...) get momentum SGD (heavy ball,
 * same learning rate and momentum, L2 weight decay on weights) inside the optimizer.
 *
 * The Fisher statistics come from a backward pass whose targets are SAMPLED from the model's
 * predictive distribution (the true Fisher). Each step, the trainer asks whether the coming
 * step needs them and, if so, runs one extra forward and backward before the training one:
 *
 *     if (tb_optimizer_wants_fisher(opt)) {
 *         tb_var *logits = ...forward on tape...;
 *         tb_var *y = tb_fisher_sample_labels(tape, logits, &fisher_rng); // nn.h
 *         tb_tape_backward(tape, tb_op_softmax_xent(tape, logits, y, 0.0f));
 *         tb_optimizer_update_fisher(opt, &err);     // reads a and g from the layers now
 *         tb_tape_reset(tape);  tb_params_zero_grad(params);
 *     }
 *     ...training forward, backward, tb_optimizer_step(opt, factor, &err)...
 *
 * With the hyperparameter empirical_fisher = 1 the optimizer instead reads a and g of the
 * training backward inside tb_optimizer_step (the empirical Fisher: cheaper, and biased), and
 * tb_optimizer_wants_fisher returns false. For every other optimizer wants_fisher is false and
 * update_fisher does nothing, so a trainer can run this code for any algorithm. */
#ifndef TRAINBENCH_CURVATURE_H
#define TRAINBENCH_CURVATURE_H

#include <stdbool.h>

#include "trainbench/nn.h"
#include "trainbench/rng.h"
#include "trainbench/sharpness.h"
#include "trainbench/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tb_optimizer tb_optimizer;

static inline tb_layer_ref tb_layer_linear(tb_linear_layer *l)
{
    tb_layer_ref r = {TB_LAYER_LINEAR, NULL, l, NULL};
    return r;
}
static inline tb_layer_ref tb_layer_conv(tb_conv_layer *c)
{
    tb_layer_ref r = {TB_LAYER_CONV, NULL, NULL, c};
    return r;
}

/* Tells a curvature optimizer the n layers to precondition (copied; layers may be NULL when
 * n is 0; call once, before the first step). Every layer's weight (and bias) must be a parameter of the optimizer's tb_params,
 * and no layer may be listed twice. Optimizers without curvature accept and ignore the call.
 * Fails with TB_ERR_INVALID naming the layer's parameter otherwise, and for a layer whose
 * factor side (inputs + 1 for a bias, or outputs) exceeds the hyperparameter max_factor_dim
 * (default 4096), before allocating anything, with the factor's size and the memory it would
 * take; a failed call attaches none of the layers, so it may be retried (a failed step does
 * not count as the first). */
tb_status tb_optimizer_set_layers(tb_optimizer *opt, const tb_layer_ref *layers, int n,
                                  tb_error *err);

/* Whether opt is a curvature optimizer (one that takes layers: kfac, ekfac), whose statistics
 * come from the layers' activations and output gradients, not from the gradients alone. */
bool tb_optimizer_has_curvature(const tb_optimizer *opt);

/* Whether the next tb_optimizer_step needs Fisher statistics from a sampled-label backward
 * (tb_optimizer_update_fisher) first. False for optimizers without curvature. */
bool tb_optimizer_wants_fisher(const tb_optimizer *opt);

/* Reads every attached layer's a (input) and g (output gradient) of the backward pass just
 * run, and updates the Kronecker factors (and EKFAC's scaling) for the next step. The loss
 * must be a mean over the rows of the layers' outputs (g is multiplied by that count). Fails
 * with TB_ERR_INVALID naming the layer if a layer has no input or gradient, with
 * TB_ERR_SHAPE if its last pass had an empty batch (nothing to average). A no-op for
 * optimizers without curvature. */
tb_status tb_optimizer_update_fisher(tb_optimizer *opt, tb_error *err);

/* ---- Hessian-diagonal estimates (sophia) ---------------------------------------------------
 * Sophia divides its momentum by an average of Hutchinson estimates z * (H z) of the Hessian
 * diagonal, refreshed every update_period steps. Before such a step the trainer hands it a
 * gradient function of the step's batch (tb_grad_fn: deterministic, batch norm's running
 * averages frozen, the same dropout masks each call):
 *
 *     if (tb_optimizer_wants_hessian(opt))
 *         tb_optimizer_update_hessian(opt, grad_of_batch, &ctx, &rng, &err);
 *     ...training forward, backward, tb_optimizer_step(opt, factor, &err)...
 *
 * The products are central differences of gradients (tb_hvp_begin), two gradient evaluations
 * per probe; the parameters and gradients are left bit for bit as they were. For every other
 * optimizer wants_hessian is false and update_hessian does nothing. */
bool tb_optimizer_wants_hessian(const tb_optimizer *opt);
/* Draws the optimizer's probes from rng and forms the estimate the next step uses. Fails
 * with TB_ERR_NUMERIC naming the step and the parameter when the estimate (or a gradient it
 * evaluates) is not finite, and returns the gradient function's errors as they are. */
tb_status tb_optimizer_update_hessian(tb_optimizer *opt, tb_grad_fn grad, void *user,
                                      tb_rng *rng, tb_error *err);


#ifdef __cplusplus
}
#endif
#endif
