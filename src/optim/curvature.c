/* curvature.c: the trainer-facing calls of curvature optimizers (trainbench/curvature.h):
 * attaching layers, the Fisher-statistics handshake, and sampling labels from the model's
 * predictive distribution for the true Fisher. */
#include "optim/optim_impl.h"

#include "nn/tape_impl.h"

#include <math.h>
#include <stdlib.h>

tb_status tb_optimizer_set_layers(tb_optimizer *opt, const tb_layer_ref *layers, int n,
                                  tb_error *err)
{
    if (!opt) return tb_fail(err, TB_ERR_INVALID, "optimizer_set_layers: the optimizer is NULL");
    if (n < 0 || (n > 0 && !layers))
        return tb_fail(err, TB_ERR_INVALID, "optimizer_set_layers: %s", n < 0 ?
                       "a negative number of layers" : "layers is NULL");
    if (!opt->vt->set_layers) return TB_OK;
    return opt->vt->set_layers(opt, layers, n, err);
}

bool tb_optimizer_has_curvature(const tb_optimizer *opt)
{
    return opt && opt->vt->set_layers != NULL;
}

bool tb_optimizer_wants_fisher(const tb_optimizer *opt)
{
    return opt && opt->vt->wants_fisher && opt->vt->wants_fisher(opt);
}

tb_status tb_optimizer_update_fisher(tb_optimizer *opt, tb_error *err)
{
    if (!opt)
        return tb_fail(err, TB_ERR_INVALID, "optimizer_update_fisher: the optimizer is NULL");
    if (!opt->vt->update_fisher) return TB_OK;
    return opt->vt->update_fisher(opt, err);
}

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
