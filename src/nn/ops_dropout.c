/* ops_dropout.c: dropout with a rate drawn at random for each example (docs/DROPOUT.md,
 * "The random-rate scheme"). The fixed-rate op is in ops_loss.c; this one shares its kernels:
 * one draw of the rates from the stream, then each row's mask as fixed-rate dropout draws it. */
#include "nn/tape_impl.h"

#include "trainbench/backend.h"

#include <stdlib.h>

void tb_dropout_random_rates(const tb_rng *rng, int64_t n, float lo, float hi, float *rates)
{
    tb_rng copy = *rng;
    tb_rng_fill_uniform(&copy, rates, n, lo, hi);
}

/* saved: the mask (0 or 1 / (1 - p_i) per element of row i), as dropout's */
void tb_fwd_dropout_random(tb_tape *t, const tb_node *n)
{
    tb_rng *rng = n->attr.dropout_random.rng;
    int64_t rows = n->out->value.shape[0];
    int64_t cols = rows ? tb_tensor_numel(&n->out->value) / rows : 0;
    float *rates = malloc((size_t)(rows ? rows : 1) * sizeof *rates);
    if (!rates) {
        tb_op_fail(t, TB_ERR_NOMEM, "dropout_random: no host memory for %lld rates",
                   (long long)rows);
        return;
    }
    tb_rng_fill_uniform(rng, rates, rows, n->attr.dropout_random.lo, n->attr.dropout_random.hi);
    const float *x = n->in[0]->value.data;
    float *y = n->out->value.data, *mask = n->saved[0];
    for (int64_t i = 0; i < rows; i++)
        tb_tape_ops(t)->dropout_fwd(tb_tape_be(t), cols, rates[i], rng->key, &rng->counter,
                                    x + i * cols, y + i * cols, mask + i * cols);
    free(rates);
}

tb_var *tb_op_dropout_random(tb_tape *t, tb_var *x, float lo, float hi, tb_rng *rng)
{
    if (!tb_op_begin(t, 1, &x)) return NULL;
    if (!tb_op_expect(t, "dropout_random", "input", x, TB_F32, 1, TB_MAX_DIMS)) return NULL;
    if (!(lo >= 0.0f && lo <= hi && hi < 1.0f))
        return tb_op_fail(t, TB_ERR_INVALID,
                          "dropout_random: rates [%g, %g) are not a range inside [0, 1)", lo, hi);
    if (!rng) return tb_op_fail(t, TB_ERR_INVALID, "dropout_random: no random stream given");
    if (!tb_tape_training(t) || hi == 0.0f) return x;
    if (tb_backend_capturing(tb_tape_be(t)))
        return tb_op_fail(t, TB_ERR_UNSUPPORTED,
                          "dropout_random draws its rates on the host: it cannot be captured in "
                          "a CUDA graph (run without --cuda-graph)");
    int64_t numel = tb_tensor_numel(&x->value);
    tb_var *y = tb_tape_output(t, TB_F32, x->value.ndim, x->value.shape, 1, &x);
    float *mask = tb_tape_scratch(t, (size_t)numel * sizeof(float));
    if (!y || !mask) return NULL;
    return tb_op_run(t, &(tb_node){.op = TB_OP_DROPOUT_RANDOM, .n_in = 1, .in = {x}, .out = y,
                                   .saved = {mask}, .attr.dropout_random = {lo, hi, rng}});
}
