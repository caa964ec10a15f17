/* test_golden_attn.c: embedding and the causal multi-head self-attention core against PyTorch
 * references (fixtures in tests/golden/, written by tests/golden/make_golden.py; see golden.h
 * for the format and the tolerance). Gradients are back-propagated from a fixed dy. */
#include "golden.h"

static void case_embedding(tb_backend *be)
{
    tb_golden g;
    tb_tape *tape = tb_golden_begin(be, "embedding", &g);
    if (!tape) return;
    tb_var *table = tb_golden_var(tape, &g, "table", true);
    tb_var *idx = tb_golden_var(tape, &g, "idx", false);
    tb_var *dy = tb_golden_var(tape, &g, "dy", false);
    tb_var *y = tb_op_embedding(tape, table, idx);
    if (tb_golden_backward(&g, tape, tb_golden_dot(tape, y, dy))) {
        tb_golden_compare(&g, "y", &y->value);
        tb_golden_compare(&g, "dtable", &table->grad);
    }
    tb_golden_end(tape, &g);
}

/* torch reference: q, k, v = qkv.split(C); per head softmax(q k^T / sqrt(hd)) with a causal
 * mask, times v, heads merged back to [B, T, C]. */
static void case_attention(tb_backend *be)
{
    tb_golden g;
    tb_tape *tape = tb_golden_begin(be, "attention", &g);
    if (!tape) return;
    tb_var *qkv = tb_golden_var(tape, &g, "qkv", true);
    tb_var *dy = tb_golden_var(tape, &g, "dy", false);
    tb_var *y = tb_op_causal_attention(tape, qkv, (int)tb_golden_scalar(&g, "heads"));
    if (tb_golden_backward(&g, tape, tb_golden_dot(tape, y, dy))) {
        tb_golden_compare(&g, "y", &y->value);
        tb_golden_compare(&g, "dqkv", &qkv->grad);
    }
    tb_golden_end(tape, &g);
}

int main(void)
{
    if (!tb_golden_available()) {
        CHECK(false);
        return tb_test_finish("test_golden_attn");
    }
    tb_backend *be = tb_test_backend();
    case_embedding(be);
    case_attention(be);
    tb_backend_destroy(be);
    return tb_test_finish("test_golden_attn");
}
