/* ops_sample.c: labels drawn from the model's predictive distribution (softmax of its logits),
 * for the true Fisher of curvature optimizers (see trainbench/nn.h). */
#include "nn/tape_impl.h"

#include <math.h>
#include <stdlib.h>

tb_var *tb_fisher_sample_labels(tb_tape *tape, tb_var *logits, tb_rng *rng)
{
    if (!tb_op_begin(tape, 1, &logits) ||
        !tb_op_expect(tape, "fisher labels", "logits", logits, TB_F32, 2, 2))
        return NULL;
    int64_t n = logits->value.shape[0], c = logits->value.shape[1];
    if (n == 0 || c == 0) {
        char buf[96];
        /* no class to draw (or no row): softmax_xent would refuse these logits too */
        return tb_op_fail(tape, TB_ERR_SHAPE, "fisher labels: empty logits %s",
                          tb_shape_str(&logits->value, buf, sizeof buf));
    }
    if (!rng)
        return tb_op_fail(tape, TB_ERR_INVALID,
                          "fisher labels: no random stream given (rng is NULL)");
    tb_var *y = tb_tape_new_var(tape, TB_I32, 1, &n, false);
    if (!y) return NULL;
    float *host = malloc((size_t)(n * c) * sizeof *host);
    int32_t *labels = malloc((size_t)n * sizeof *labels);
    if (!host || !labels) {
        free(host);
        free(labels);
        return tb_op_fail(tape, TB_ERR_NOMEM, "fisher labels: no host memory for %lld x %lld",
                          (long long)n, (long long)c);
    }
    tb_backend_download(tb_tape_be(tape), host, logits->value.data, (size_t)(n * c) * 4);
    bool finite = true;
    for (int64_t i = 0; i < n; i++) {
        const float *row = host + i * c;
        double mx = row[0], total = 0.0;
        for (int64_t j = 1; j < c; j++) mx = fmax(mx, row[j]);
        for (int64_t j = 0; j < c; j++) total += exp(row[j] - mx);
        if (!isfinite(total)) finite = false;
        double u = tb_rng_uniform(rng) * total, acc = 0.0;
        int64_t pick = c - 1;
        for (int64_t j = 0; j < c; j++) {
            acc += exp(row[j] - mx);
            if (u < acc) {
                pick = j;
                break;
            }
        }
        labels[i] = (int32_t)pick;
    }
    if (finite) tb_backend_upload(tb_tape_be(tape), y->value.data, labels, (size_t)n * 4);
    free(host);
    free(labels);
    if (!finite)
        return tb_op_fail(tape, TB_ERR_NUMERIC, "fisher labels: logits are not finite");
    return y;
}
