/* test_golden.c: dense ops, activations, losses and a small MLP against PyTorch references
 * (fixtures in tests/golden/, written by tests/golden/make_golden.py; see golden.h for the
 * format and the tolerance). Each op case back-propagates a fixed dy through sum(y * dy). */
#include "golden.h"

#include <string.h>

static void case_linear(tb_backend *be)
{
    tb_golden g;
    tb_tape *tape = tb_golden_begin(be, "linear", &g);
    if (!tape) return;
    tb_var *x = tb_golden_var(tape, &g, "x", true), *w = tb_golden_var(tape, &g, "w", true);
    tb_var *b = tb_golden_var(tape, &g, "b", true), *dy = tb_golden_var(tape, &g, "dy", false);
    tb_var *y = tb_op_linear(tape, x, w, b);
    if (tb_golden_backward(&g, tape, tb_golden_dot(tape, y, dy))) {
        tb_golden_compare(&g, "y", &y->value);
        tb_golden_compare(&g, "dx", &x->grad);
        tb_golden_compare(&g, "dw", &w->grad);
        tb_golden_compare(&g, "db", &b->grad);
    }
    tb_golden_end(tape, &g);
}

static void case_matmul(tb_backend *be, const char *name, bool trans_b)
{
    tb_golden g;
    tb_tape *tape = tb_golden_begin(be, name, &g);
    if (!tape) return;
    tb_var *a = tb_golden_var(tape, &g, "a", true), *b = tb_golden_var(tape, &g, "b", true);
    tb_var *dy = tb_golden_var(tape, &g, "dy", false);
    tb_var *y = tb_op_matmul(tape, a, b, trans_b);
    if (tb_golden_backward(&g, tape, tb_golden_dot(tape, y, dy))) {
        tb_golden_compare(&g, "y", &y->value);
        tb_golden_compare(&g, "da", &a->grad);
        tb_golden_compare(&g, "db", &b->grad);
    }
    tb_golden_end(tape, &g);
}

static void case_activation(tb_backend *be, tb_activation act)
{
    char name[64];
    snprintf(name, sizeof name, "act_%s", tb_activation_name(act));
    tb_golden g;
    tb_tape *tape = tb_golden_begin(be, name, &g);
    if (!tape) return;
    tb_var *x = tb_golden_var(tape, &g, "x", true), *dy = tb_golden_var(tape, &g, "dy", false);
    tb_var *y = tb_op_activation(tape, act, x);
    if (tb_golden_backward(&g, tape, tb_golden_dot(tape, y, dy))) {
        tb_golden_compare(&g, "y", &y->value);
        tb_golden_compare(&g, "dx", &x->grad);
    }
    tb_golden_end(tape, &g);
}

static void case_xent(tb_backend *be, const char *name)
{
    tb_golden g;
    tb_tape *tape = tb_golden_begin(be, name, &g);
    if (!tape) return;
    tb_var *logits = tb_golden_var(tape, &g, "logits", true);
    tb_var *labels = tb_golden_var(tape, &g, "labels", false);
    float smoothing = (float)tb_golden_scalar(&g, "smoothing");
    tb_var *loss = tb_op_softmax_xent(tape, logits, labels, smoothing);
    if (tb_golden_backward(&g, tape, loss)) {
        tb_golden_compare(&g, "loss", &loss->value);
        tb_golden_compare(&g, "dlogits", &logits->grad);
    }
    tb_golden_end(tape, &g);
}

static void case_mse(tb_backend *be)
{
    tb_golden g;
    tb_tape *tape = tb_golden_begin(be, "mse", &g);
    if (!tape) return;
    tb_var *pred = tb_golden_var(tape, &g, "pred", true);
    tb_var *target = tb_golden_var(tape, &g, "target", true);
    tb_var *loss = tb_op_mse(tape, pred, target);
    if (tb_golden_backward(&g, tape, loss)) {
        tb_golden_compare(&g, "loss", &loss->value);
        tb_golden_compare(&g, "dpred", &pred->grad);
        tb_golden_compare(&g, "dtarget", &target->grad);
    }
    tb_golden_end(tape, &g);
}

static void case_bce(tb_backend *be)
{
    tb_golden g;
    tb_tape *tape = tb_golden_begin(be, "bce", &g);
    if (!tape) return;
    tb_var *logits = tb_golden_var(tape, &g, "logits", true);
    tb_var *target = tb_golden_var(tape, &g, "target", false);
    tb_var *loss = tb_op_sigmoid_bce(tape, logits, target);
    if (tb_golden_backward(&g, tape, loss)) {
        tb_golden_compare(&g, "loss", &loss->value);
        tb_golden_compare(&g, "dlogits", &logits->grad);
    }
    tb_golden_end(tape, &g);
}

/* 20-32-32-5 MLP with gelu, softmax cross-entropy with label smoothing: loss and every
 * parameter gradient. */
static void case_mlp(tb_backend *be)
{
    tb_golden g;
    tb_tape *tape = tb_golden_begin(be, "mlp", &g);
    if (!tape) return;
    tb_params *params = NULL;
    tb_error err = {0};
    tb_linear_layer fc[3];
    const int64_t sizes[4] = {20, 32, 32, 5};
    bool ok = CHECK_OK(tb_params_create(be, &params, &err), &err);
    for (int i = 0; ok && i < 3; i++) {
        char name[16];
        snprintf(name, sizeof name, "fc%d", i + 1);
        ok = CHECK_OK(tb_linear_layer_init(&fc[i], params, name, sizes[i], sizes[i + 1], true,
                                           &err), &err);
    }
    ok = ok && CHECK_OK(tb_params_finalize(params, &err), &err) &&
         tb_golden_params_upload(&g, params);
    if (ok) {
        tb_var *h = tb_golden_var(tape, &g, "x", false);
        tb_var *labels = tb_golden_var(tape, &g, "labels", false);
        for (int i = 0; i < 3; i++) {
            h = tb_linear_layer_forward(tape, &fc[i], h);
            if (i < 2) h = tb_op_gelu(tape, h);
        }
        tb_var *loss =
            tb_op_softmax_xent(tape, h, labels, (float)tb_golden_scalar(&g, "smoothing"));
        if (tb_golden_backward(&g, tape, loss)) {
            tb_golden_compare(&g, "loss", &loss->value);
            tb_golden_params_compare(&g, params);
        }
    }
    tb_params_destroy(params);
    tb_golden_end(tape, &g);
}

int main(void)
{
    if (!tb_golden_available()) {
        CHECK(false);
        return tb_test_finish("test_golden");
    }
    tb_backend *be = tb_test_backend();
    case_linear(be);
    case_matmul(be, "matmul", false);
    case_matmul(be, "matmul_tb", true);
    for (int a = TB_RELU; a <= TB_SIGMOID; a++) case_activation(be, (tb_activation)a);
    case_xent(be, "xent_s0");
    case_xent(be, "xent_s01");
    case_mse(be);
    case_bce(be);
    case_mlp(be);
    tb_backend_destroy(be);
    return tb_test_finish("test_golden");
}
