/* ops_attention.c: token embedding lookup and the causal multi-head self-attention core. */
#include "nn/tape_impl.h"

#include <string.h>

/* ---- embedding: y [..., D] = table [V, D] gathered at idx [...] ----------------------------- */

/* in: table, idx */
void tb_fwd_embedding(tb_tape *t, const tb_node *n)
{
    const tb_tensor *table = &n->in[0]->value;
    if (n->attr.embedding.n > 0 && n->attr.embedding.dim > 0)
        tb_tape_ops(t)->embedding_fwd(tb_tape_be(t), n->attr.embedding.n, n->attr.embedding.dim,
                                      table->shape[0], table->data, n->in[1]->value.data,
                                      n->out->value.data);
}

void tb_bwd_embedding(tb_tape *t, const tb_node *n)
{
    float *dtable = tb_var_grad(t, n->in[0]);
    if (!dtable) return;
    tb_tape_ops(t)->embedding_bwd(tb_tape_be(t), n->attr.embedding.n, n->attr.embedding.dim,
                                  n->in[0]->value.shape[0], n->in[1]->value.data,
                                  n->out->grad.data, dtable);
}

tb_var *tb_op_embedding(tb_tape *t, tb_var *table, tb_var *idx)
{
    tb_var *ins[2] = {table, idx};
    if (!tb_op_begin(t, 2, ins)) return NULL;
    if (!tb_op_expect(t, "embedding", "table", table, TB_F32, 2, 2) ||
        !tb_op_expect(t, "embedding", "indices", idx, TB_I32, 0, TB_MAX_DIMS - 1))
        return NULL;
    const tb_backend_ops *k = tb_tape_ops(t);
    if (!k->embedding_fwd || !k->embedding_bwd)
        return tb_op_fail(t, TB_ERR_UNSUPPORTED, "embedding: the %s backend has no kernel",
                          tb_backend_name(tb_tape_be(t)));
    int64_t vocab = table->value.shape[0], dim = table->value.shape[1];
    int64_t n = tb_tensor_numel(&idx->value);
    /* inside a graph capture nothing may be read back: the eager steps before it check */
    if (!tb_op_check_indices(t, "embedding", "index", idx, vocab)) return NULL;
    int64_t shape[TB_MAX_DIMS];
    memcpy(shape, idx->value.shape, (size_t)idx->value.ndim * sizeof *shape);
    shape[idx->value.ndim] = dim;
    /* the indices are data: only the table receives a gradient */
    tb_var *y = tb_tape_output(t, TB_F32, idx->value.ndim + 1, shape, 1, ins);
    if (!y) return NULL;
    return tb_op_run(t, &(tb_node){.op = TB_OP_EMBEDDING, .n_in = 2, .in = {table, idx}, .out = y,
                                   .attr.embedding = {.n = n, .dim = dim}});
}

/* ---- causal self-attention: qkv [B, T, 3C] -> y [B, T, C] ----------------------------------- */

/* saved: the attention probabilities [B, heads, T, T] and the kernels' workspace (or NULL) */
void tb_fwd_causal_attention(tb_tape *t, const tb_node *n)
{
    tb_tape_ops(t)->attention_fwd(tb_tape_be(t), (int)n->attr.attention.batch,
                                  (int)n->attr.attention.t, (int)n->attr.attention.c,
                                  n->attr.attention.heads, n->in[0]->value.data,
                                  n->out->value.data, n->saved[0], n->saved[1]);
}

void tb_bwd_causal_attention(tb_tape *t, const tb_node *n)
{
    bool acc;
    float *dqkv = tb_var_grad_for(t, n->in[0], &acc); /* a fresh one is overwritten */
    if (!dqkv) return;
    tb_tape_ops(t)->attention_bwd(tb_tape_be(t), (int)n->attr.attention.batch,
                                  (int)n->attr.attention.t, (int)n->attr.attention.c,
                                  n->attr.attention.heads, n->in[0]->value.data, n->saved[0],
                                  n->out->grad.data, dqkv, acc, n->saved[1]);
}

tb_var *tb_op_causal_attention(tb_tape *t, tb_var *qkv, int heads)
{
    if (!tb_op_begin(t, 1, &qkv)) return NULL;
    if (!tb_op_expect(t, "causal_attention", "qkv", qkv, TB_F32, 3, 3)) return NULL;
    const tb_backend_ops *k = tb_tape_ops(t);
    tb_backend *be = tb_tape_be(t);
    if (!k->attention_fwd || !k->attention_bwd || !k->attention_workspace)
        return tb_op_fail(t, TB_ERR_UNSUPPORTED, "causal_attention: the %s backend has no kernel",
                          tb_backend_name(be));
    char xs[96];
    const tb_tensor *x = &qkv->value;
    int64_t B = x->shape[0], T = x->shape[1], C3 = x->shape[2];
    if (heads < 1)
        return tb_op_fail(t, TB_ERR_INVALID, "causal_attention: %d heads (at least 1)", heads);
    if (B == 0 || T == 0 || C3 == 0)
        return tb_op_fail(t, TB_ERR_SHAPE, "causal_attention: qkv %s is empty",
                          tb_shape_str(x, xs, sizeof xs));
    if (C3 % 3 != 0)
        return tb_op_fail(t, TB_ERR_SHAPE,
                          "causal_attention: the last dimension of qkv %s is not divisible by 3 "
                          "(q, k and v side by side)",
                          tb_shape_str(x, xs, sizeof xs));
    int64_t C = C3 / 3;
    if (C % heads != 0)
        return tb_op_fail(t, TB_ERR_SHAPE,
                          "causal_attention: %lld channels (qkv %s) are not divisible by %d heads",
                          (long long)C, tb_shape_str(x, xs, sizeof xs), heads);
    if (B > INT32_MAX || T > INT32_MAX || C3 > INT32_MAX)
        return tb_op_fail(t, TB_ERR_SHAPE, "causal_attention: qkv %s is too large",
                          tb_shape_str(x, xs, sizeof xs));
    int64_t shape[3] = {B, T, C};
    tb_var *y = tb_tape_output(t, TB_F32, 3, shape, 1, &qkv);
    if (!y) return NULL;
    float *att = tb_tape_scratch(t, (size_t)(B * heads * T * T) * sizeof(float));
    if (!att) return NULL;
    size_t ws_bytes = k->attention_workspace(be, (int)B, (int)T, (int)C, heads);
    void *ws = NULL;
    if (ws_bytes > 0 && !(ws = tb_tape_scratch(t, ws_bytes))) return NULL;
    return tb_op_run(t, &(tb_node){.op = TB_OP_CAUSAL_ATTENTION, .n_in = 1, .in = {qkv},
                                   .out = y, .saved = {att, ws},
                                   .attr.attention = {.batch = B, .t = T, .c = C,
                                                      .heads = heads}});
}
