/* layer_linear.c: a dense layer that keeps its batch input and output for curvature methods. */
#include "trainbench/nn.h"

#include <stdio.h>

tb_status tb_linear_layer_init(tb_linear_layer *layer, tb_params *params, const char *name,
                               int64_t in, int64_t out, bool bias, tb_error *err)
{
    if (!layer || !params || !name)
        return tb_fail(err, TB_ERR_INVALID, "linear layer: %s is NULL",
                       !layer ? "layer" : !params ? "params" : "name");
    char pname[TB_PARAM_NAME_MAX + 16]; /* truncated: too long, and tb_params_add says so */
    int64_t wshape[2] = {out, in};
    snprintf(pname, sizeof pname, "%s.weight", name);
    layer->w = tb_params_add(params, pname, TB_PARAM_WEIGHT, 2, wshape, err);
    if (!layer->w) return err ? err->status : TB_ERR_INVALID;
    layer->b = NULL;
    if (bias) {
        snprintf(pname, sizeof pname, "%s.bias", name);
        layer->b = tb_params_add(params, pname, TB_PARAM_BIAS, 1, &out, err);
        if (!layer->b) return err ? err->status : TB_ERR_INVALID;
    }
    layer->input = layer->output = NULL;
    return TB_OK;
}

tb_var *tb_linear_layer_forward(tb_tape *tape, tb_linear_layer *layer, tb_var *x)
{
    if (!layer) return tb_tape_fail(tape, TB_ERR_INVALID, "linear layer: layer is NULL");
    layer->input = x;
    layer->output = tb_op_linear(tape, x, layer->w, layer->b);
    return layer->output;
}

tb_var *tb_linear_layer_forward_add(tb_tape *tape, tb_linear_layer *layer, tb_var *x, tb_var *r)
{
    if (!layer) return tb_tape_fail(tape, TB_ERR_INVALID, "linear layer: layer is NULL");
    layer->input = x;
    layer->output = tb_op_linear_add(tape, x, layer->w, layer->b, r);
    return layer->output;
}

tb_var *tb_mlp_forward(tb_tape *tape, tb_linear_layer *fc, tb_activation act,
                       tb_linear_layer *out, tb_var *x, tb_var *r)
{
    if (!fc || !out)
        return tb_tape_fail(tape, TB_ERR_INVALID, "mlp: layer %s is NULL", fc ? "out" : "fc");
    tb_var *hidden[2];
    tb_var *y = tb_op_mlp(tape, x, fc->w, fc->b, act, out->w, out->b, r, hidden);
    fc->input = x;
    fc->output = hidden[0];
    out->input = hidden[1];
    out->output = y;
    return y;
}
