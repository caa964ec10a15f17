/* ops_sparse_out.c: the sparse-target output layer as a tape op (tb_op_sparse_out): forward is
 * the layer's loss, backward its gradient for h and its own SGD update (docs/SPARSE_TARGETS.md,
 * "In a workload"). The layer runs on the host: CPU backend only. */
#include "nn/sparse_out_impl.h"
#include "nn/tape_impl.h"

static tb_sparse_target target_of(const tb_node *n)
{
    const tb_tensor *y = &n->in[1]->value;
    return (tb_sparse_target){.m = y->shape[0], .k = y->ndim == 2 ? y->shape[1] : 1,
                              .idx = y->data};
}

void tb_fwd_sparse_out(tb_tape *t, const tb_node *n)
{
    tb_sparse_target y = target_of(n);
    double loss = 0.0;
    tb_error err = {0};
    if (tb_sparse_out_forward(n->attr.sparse_out.layer, n->in[0]->value.data, &y, &loss, &err) !=
        TB_OK) {
        tb_op_fail(t, err.status, "%s", err.message);
        return;
    }
    *(float *)n->out->value.data = (float)loss;
}

void tb_bwd_sparse_out(tb_tape *t, const tb_node *n)
{
    bool acc = false;
    float *dh = n->in[0]->requires_grad ? tb_var_grad_for(t, n->in[0], &acc) : NULL;
    float dloss = *(const float *)n->out->grad.data;
    tb_error err = {0};
    if (tb_sparse_out_backward_update(n->attr.sparse_out.layer, dloss, n->attr.sparse_out.lr, dh,
                                      acc, &err) != TB_OK)
        tb_op_fail(t, err.status, "%s", err.message);
}

tb_var *tb_op_sparse_out(tb_tape *t, struct tb_sparse_out *layer, tb_var *h, tb_var *targets,
                         float lr)
{
    tb_var *ins[2] = {h, targets};
    if (!tb_op_begin(t, 2, ins)) return NULL;
    if (!layer) return tb_op_fail(t, TB_ERR_INVALID, "sparse_out: no layer");
    if (tb_backend_device(tb_tape_be(t)) != TB_DEVICE_CPU)
        return tb_op_fail(t, TB_ERR_UNSUPPORTED, "sparse_out: the sparse-target output layer "
                          "runs on the CPU backend only (not %s)", tb_backend_name(tb_tape_be(t)));
    if (!tb_op_expect(t, "sparse_out", "h", h, TB_F32, 2, 2) ||
        !tb_op_expect(t, "sparse_out", "targets", targets, TB_I32, 1, 2))
        return NULL;
    if (h->value.shape[1] != layer->cfg.dim || targets->value.shape[0] != h->value.shape[0])
        return tb_op_fail(t, TB_ERR_SHAPE, "sparse_out: h [%lld, %lld] and %lld targets for a "
                          "layer of width %lld", (long long)h->value.shape[0],
                          (long long)h->value.shape[1], (long long)targets->value.shape[0],
                          (long long)layer->cfg.dim);
    tb_var *loss = tb_tape_output(t, TB_F32, 0, NULL, 2, ins);
    if (!loss) return NULL;
    tb_var *r = tb_op_run(t, &(tb_node){.op = TB_OP_SPARSE_OUT, .n_in = 2, .in = {h, targets},
                                        .out = loss, .attr.sparse_out = {layer, lr}});
    return tb_tape_status(t) != TB_OK ? NULL : r;
}
