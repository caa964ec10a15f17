/* layer_conv.c: a 2-D convolution layer that keeps its batch input and output for curvature
 * methods (K-FAC), like the dense layer in layer_linear.c. */
#include "trainbench/nn.h"

#include <stdio.h>

tb_status tb_conv_layer_init(tb_conv_layer *layer, tb_params *params, const char *name,
                             int64_t c_in, int64_t c_out, int kernel, int stride, int pad,
                             bool bias, tb_error *err)
{
    if (!layer || !params || !name)
        return tb_fail(err, TB_ERR_INVALID, "conv layer: %s is NULL",
                       !layer ? "layer" : !params ? "params" : "name");
    if (c_in < 1 || c_out < 1 || kernel < 1 || stride < 1 || pad < 0)
        return tb_fail(err, TB_ERR_INVALID,
                       "conv layer '%s': c_in %lld, c_out %lld, kernel %d, stride %d, pad %d "
                       "(need positive sizes and stride, pad >= 0)",
                       name, (long long)c_in, (long long)c_out, kernel, stride, pad);
    char pname[TB_PARAM_NAME_MAX + 16]; /* truncated: too long, and tb_params_add says so */
    int64_t wshape[4] = {c_out, c_in, kernel, kernel};
    snprintf(pname, sizeof pname, "%s.weight", name);
    layer->w = tb_params_add(params, pname, TB_PARAM_WEIGHT, 4, wshape, err);
    if (!layer->w) return err ? err->status : TB_ERR_INVALID;
    layer->b = NULL;
    if (bias) {
        snprintf(pname, sizeof pname, "%s.bias", name);
        layer->b = tb_params_add(params, pname, TB_PARAM_BIAS, 1, &c_out, err);
        if (!layer->b) return err ? err->status : TB_ERR_INVALID;
    }
    layer->stride = stride;
    layer->pad = pad;
    layer->input = layer->output = NULL;
    return TB_OK;
}

tb_var *tb_conv_layer_forward(tb_tape *tape, tb_conv_layer *layer, tb_var *x)
{
    if (!layer) return tb_tape_fail(tape, TB_ERR_INVALID, "conv layer: layer is NULL");
    layer->input = x;
    layer->output = tb_op_conv2d(tape, x, layer->w, layer->b, layer->stride, layer->pad);
    return layer->output;
}
