/* test_golden_conv.c: convolution, pooling, batch and layer norm, and a small conv net against
 * PyTorch references (fixtures in tests/golden/, written by tests/golden/make_golden.py; see
 * golden.h for the format and the tolerance). Op gradients are back-propagated from a fixed dy;
 * the conv net compares its loss, every parameter gradient and the updated running stats. */
#include "golden.h"

static void case_conv2d(tb_backend *be)
{
    tb_golden g;
    tb_tape *tape = tb_golden_begin(be, "conv2d", &g);
    if (!tape) return;
    tb_var *x = tb_golden_var(tape, &g, "x", true), *w = tb_golden_var(tape, &g, "w", true);
    tb_var *b = tb_golden_var(tape, &g, "b", true), *dy = tb_golden_var(tape, &g, "dy", false);
    tb_var *y = tb_op_conv2d(tape, x, w, b, (int)tb_golden_scalar(&g, "stride"),
                             (int)tb_golden_scalar(&g, "pad"));
    if (tb_golden_backward(&g, tape, tb_golden_dot(tape, y, dy))) {
        tb_golden_compare(&g, "y", &y->value);
        tb_golden_compare(&g, "dx", &x->grad);
        tb_golden_compare(&g, "dw", &w->grad);
        tb_golden_compare(&g, "db", &b->grad);
    }
    tb_golden_end(tape, &g);
}

/* kind: 'm' max pool, 'a' average pool (count_include_pad), 'g' global average pool */
static void case_pool(tb_backend *be, const char *name, char kind)
{
    tb_golden g;
    tb_tape *tape = tb_golden_begin(be, name, &g);
    if (!tape) return;
    tb_var *x = tb_golden_var(tape, &g, "x", true), *dy = tb_golden_var(tape, &g, "dy", false);
    tb_var *y;
    if (kind == 'g') {
        y = tb_op_global_avgpool(tape, x);
    } else {
        int k = (int)tb_golden_scalar(&g, "kernel"), s = (int)tb_golden_scalar(&g, "stride");
        int p = (int)tb_golden_scalar(&g, "pad");
        y = kind == 'm' ? tb_op_maxpool2d(tape, x, k, s, p) : tb_op_avgpool2d(tape, x, k, s, p);
    }
    if (tb_golden_backward(&g, tape, tb_golden_dot(tape, y, dy))) {
        tb_golden_compare(&g, "y", &y->value);
        tb_golden_compare(&g, "dx", &x->grad);
    }
    tb_golden_end(tape, &g);
}

/* Running statistics persist across steps, so they are owning tensors, not step variables. */
static bool alloc_stats(tb_backend *be, const tb_golden *g, tb_tensor *mean, tb_tensor *var)
{
    const tb_golden_tensor *ref = tb_golden_get(g, "new_running_mean");
    tb_error err = {0};
    if (!ref) return tb_test_check(false, "running stats", __FILE__, __LINE__);
    return CHECK_OK(tb_tensor_alloc(be, TB_F32, 1, ref->shape, mean, &err), &err) &&
           CHECK_OK(tb_tensor_alloc(be, TB_F32, 1, ref->shape, var, &err), &err);
}

static void case_batchnorm(tb_backend *be, const char *name, bool training)
{
    tb_golden g;
    tb_tape *tape = tb_golden_begin(be, name, &g);
    if (!tape) return;
    tb_tensor rm = {0}, rv = {0};
    if (alloc_stats(be, &g, &rm, &rv) && tb_golden_upload(&g, "running_mean", &rm) &&
        tb_golden_upload(&g, "running_var", &rv)) {
        tb_tape_set_training(tape, training);
        tb_var *x = tb_golden_var(tape, &g, "x", true);
        tb_var *gamma = tb_golden_var(tape, &g, "gamma", true);
        tb_var *beta = tb_golden_var(tape, &g, "beta", true);
        tb_var *dy = tb_golden_var(tape, &g, "dy", false);
        tb_var *y = tb_op_batchnorm(tape, x, gamma, beta, &rm, &rv,
                                    (float)tb_golden_scalar(&g, "momentum"),
                                    (float)tb_golden_scalar(&g, "eps"));
        if (tb_golden_backward(&g, tape, tb_golden_dot(tape, y, dy))) {
            tb_golden_compare(&g, "y", &y->value);
            tb_golden_compare(&g, "dx", &x->grad);
            tb_golden_compare(&g, "dgamma", &gamma->grad);
            tb_golden_compare(&g, "dbeta", &beta->grad);
            /* eval mode leaves them as they were, as torch does */
            tb_golden_compare(&g, "new_running_mean", &rm);
            tb_golden_compare(&g, "new_running_var", &rv);
        }
    }
    tb_tensor_free(&rm);
    tb_tensor_free(&rv);
    tb_golden_end(tape, &g);
}

static void case_layernorm(tb_backend *be)
{
    tb_golden g;
    tb_tape *tape = tb_golden_begin(be, "layernorm", &g);
    if (!tape) return;
    tb_var *x = tb_golden_var(tape, &g, "x", true);
    tb_var *gamma = tb_golden_var(tape, &g, "gamma", true);
    tb_var *beta = tb_golden_var(tape, &g, "beta", true);
    tb_var *dy = tb_golden_var(tape, &g, "dy", false);
    tb_var *y = tb_op_layernorm(tape, x, gamma, beta, (float)tb_golden_scalar(&g, "eps"));
    if (tb_golden_backward(&g, tape, tb_golden_dot(tape, y, dy))) {
        tb_golden_compare(&g, "y", &y->value);
        tb_golden_compare(&g, "dx", &x->grad);
        tb_golden_compare(&g, "dgamma", &gamma->grad);
        tb_golden_compare(&g, "dbeta", &beta->grad);
    }
    tb_golden_end(tape, &g);
}

/* conv(3->6, k3 s1 p1) - batchnorm (training) - relu - maxpool(2, 2) - flatten - linear(96->5),
 * softmax cross-entropy with label smoothing; running stats start at mean 0, var 1. */
static void case_convnet(tb_backend *be)
{
    tb_golden g;
    tb_tape *tape = tb_golden_begin(be, "convnet", &g);
    if (!tape) return;
    tb_params *params = NULL;
    tb_error err = {0};
    tb_linear_layer fc;
    tb_var *conv_w = NULL, *conv_b = NULL, *bn_w = NULL, *bn_b = NULL;
    tb_tensor rm = {0}, rv = {0};
    const int64_t c6 = 6, wshape[4] = {6, 3, 3, 3};
    bool ok = CHECK_OK(tb_params_create(be, &params, &err), &err);
    if (ok) {
        conv_w = tb_params_add(params, "conv.weight", TB_PARAM_WEIGHT, 4, wshape, &err);
        conv_b = tb_params_add(params, "conv.bias", TB_PARAM_BIAS, 1, &c6, &err);
        bn_w = tb_params_add(params, "bn.weight", TB_PARAM_NORM, 1, &c6, &err);
        bn_b = tb_params_add(params, "bn.bias", TB_PARAM_NORM, 1, &c6, &err);
        ok = CHECK(conv_w && conv_b && bn_w && bn_b) &&
             CHECK_OK(tb_linear_layer_init(&fc, params, "fc", 96, 5, true, &err), &err);
    }
    ok = ok && CHECK_OK(tb_params_finalize(params, &err), &err) &&
         tb_golden_params_upload(&g, params) && alloc_stats(be, &g, &rm, &rv);
    if (ok) {
        float ones[6] = {1, 1, 1, 1, 1, 1};
        tb_tensor_upload(&rv, ones, NULL); /* rm stays zero */
        tb_var *x = tb_golden_var(tape, &g, "x", false);
        tb_var *labels = tb_golden_var(tape, &g, "labels", false);
        tb_var *h = tb_op_conv2d(tape, x, conv_w, conv_b, 1, 1);
        h = tb_op_batchnorm(tape, h, bn_w, bn_b, &rm, &rv,
                            (float)tb_golden_scalar(&g, "momentum"),
                            (float)tb_golden_scalar(&g, "eps"));
        h = tb_op_maxpool2d(tape, tb_op_relu(tape, h), 2, 2, 0);
        const int64_t flat[2] = {4, 96};
        h = tb_linear_layer_forward(tape, &fc, tb_op_reshape(tape, h, 2, flat));
        tb_var *loss =
            tb_op_softmax_xent(tape, h, labels, (float)tb_golden_scalar(&g, "smoothing"));
        if (tb_golden_backward(&g, tape, loss)) {
            tb_golden_compare(&g, "loss", &loss->value);
            tb_golden_params_compare(&g, params);
            tb_golden_compare(&g, "new_running_mean", &rm);
            tb_golden_compare(&g, "new_running_var", &rv);
        }
    }
    tb_tensor_free(&rm);
    tb_tensor_free(&rv);
    tb_params_destroy(params);
    tb_golden_end(tape, &g);
}

int main(void)
{
    if (!tb_golden_available()) {
        CHECK(false);
        return tb_test_finish("test_golden_conv");
    }
    tb_backend *be = tb_test_backend();
    case_conv2d(be);
    case_pool(be, "maxpool", 'm');
    case_pool(be, "avgpool", 'a');
    case_pool(be, "global_avgpool", 'g');
    case_batchnorm(be, "batchnorm_train", true);
    case_batchnorm(be, "batchnorm_train_2d", true);
    case_batchnorm(be, "batchnorm_eval", false);
    case_layernorm(be);
    case_convnet(be);
    tb_backend_destroy(be);
    return tb_test_finish("test_golden_conv");
}
