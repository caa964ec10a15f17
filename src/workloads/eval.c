/* eval.c: examples to batches (host reads, uploads onto a tape), the forward pass and loss,
 * and evaluation of a split into the workload's metrics. */
#include "workloads/workload_impl.h"

#include "trainbench/curvature.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A NULL argument of a call that builds on a tape: the tape's failure naming it (none on a
 * NULL tape), and NULL. */
static tb_var *null_arg(tb_tape *tape, const char *fn, const char *what)
{
    return tb_tape_fail(tape, TB_ERR_INVALID, "%s: %s is NULL", fn, what);
}

tb_status tb_workload_example_ids(const tb_workload *wl, tb_split split, const int64_t *rows,
                                  int64_t n, int64_t *ids, tb_error *err)
{
    if (!wl || (!rows && n > 0) || (!ids && n > 0))
        return tb_fail(err, TB_ERR_INVALID, "workload_example_ids: %s is NULL",
                       !wl ? "the workload" : !rows ? "rows" : "ids");
    if (split < TB_SPLIT_TRAIN || split > TB_SPLIT_TEST)
        return tb_fail(err, TB_ERR_INVALID, "unknown split %d", (int)split);
    int64_t size = wl->split_n[split];
    for (int64_t i = 0; i < n; i++) {
        if (rows[i] < 0 || rows[i] >= size)
            return tb_fail(err, TB_ERR_INVALID, "example %lld outside the %s split",
                           (long long)rows[i], tb_split_name(split));
        ids[i] = wl->split_ids[split][rows[i]];
    }
    return TB_OK;
}

int32_t tb_workload_example_class(const tb_workload *wl, int64_t id)
{
    if (!wl || !wl->src.classes_of || id < 0 || id >= wl->src.n) return -1;
    return wl->src.classes_of[id];
}

tb_status tb_workload_read(const tb_workload *wl, tb_split split, const int64_t *rows, int64_t n,
                           void *x, void *y, tb_error *err)
{
    if (!wl || (n > 0 && (!rows || !x || !y)))
        return tb_fail(err, TB_ERR_INVALID, "workload_read: %s is NULL",
                       !wl ? "the workload" : !rows ? "rows" : !x ? "x" : "y");
    if (split < TB_SPLIT_TRAIN || split > TB_SPLIT_TEST)
        return tb_fail(err, TB_ERR_INVALID, "unknown split %d", (int)split);
    size_t xb = tb_example_x_bytes(&wl->src.layout), yb = tb_example_y_bytes(&wl->src.layout);
    int64_t size = wl->split_n[split];
    for (int64_t i = 0; i < n; i++) {
        if (rows[i] < 0 || rows[i] >= size)
            return tb_fail(err, TB_ERR_INVALID, "example %lld outside the %s split",
                           (long long)rows[i], tb_split_name(split));
        wl->src.read(wl->src.data, wl->split_ids[split][rows[i]], (char *)x + (size_t)i * xb,
                     (char *)y + (size_t)i * yb);
    }
    return TB_OK;
}

bool tb_workload_stage(tb_workload *wl, int64_t n)
{
    if (n <= wl->stage_cap) return true;
    size_t xb = tb_example_x_bytes(&wl->src.layout), yb = tb_example_y_bytes(&wl->src.layout);
    unsigned char *sx = realloc(wl->stage_x, (size_t)n * xb);
    if (sx) wl->stage_x = sx;
    unsigned char *sy = realloc(wl->stage_y, (size_t)n * yb);
    if (sy) wl->stage_y = sy;
    if (!sx || !sy) return false;
    wl->stage_cap = n;
    return true;
}

bool tb_workload_upload(tb_workload *wl, tb_tape *tape, int64_t n, const void *x, const void *y,
                        tb_var **inputs, tb_var **targets)
{
    if (tb_tape_status(tape) != TB_OK) return false;
    const char *missing = !wl ? "the workload" : !x ? "x" : !y ? "y" : !inputs ? "inputs"
                          : !targets ? "targets" : NULL;
    if (missing) {
        null_arg(tape, "workload_upload", missing);
        return false;
    }
    const tb_example_layout *l = &wl->src.layout;
    int64_t xs[4] = {n}, ys[4] = {n};
    for (int i = 0; i < l->x_ndim; i++) xs[i + 1] = l->x_shape[i];
    for (int i = 0; i < l->y_ndim; i++) ys[i + 1] = l->y_shape[i];
    *inputs = tb_tape_new_var(tape, l->x_dtype, l->x_ndim + 1, xs, false);
    *targets = tb_tape_new_var(tape, l->y_dtype, l->y_ndim + 1, ys, false);
    if (!*inputs || !*targets) return false;
    tb_backend_upload(wl->be, (*inputs)->value.data, x, (size_t)n * tb_example_x_bytes(l));
    tb_backend_upload(wl->be, (*targets)->value.data, y, (size_t)n * tb_example_y_bytes(l));
    return true;
}

bool tb_workload_gather(tb_workload *wl, tb_tape *tape, tb_split split, const int64_t *rows,
                        int64_t n, tb_var **inputs, tb_var **targets)
{
    if (tb_tape_status(tape) != TB_OK) return false;
    const char *missing = !wl ? "the workload" : !rows && n > 0 ? "rows" : !inputs ? "inputs"
                          : !targets ? "targets" : NULL;
    if (missing) {
        null_arg(tape, "workload_gather", missing);
        return false;
    }
    if (!tb_workload_stage(wl, n)) {
        tb_tape_fail(tape, TB_ERR_NOMEM, "out of memory for a batch of %lld", (long long)n);
        return false;
    }
    tb_error e = {0};
    if (tb_workload_read(wl, split, rows, n, wl->stage_x, wl->stage_y, &e) != TB_OK) {
        tb_tape_fail(tape, e.status, "%s", e.message);
        return false;
    }
    return tb_workload_upload(wl, tape, n, wl->stage_x, wl->stage_y, inputs, targets);
}

tb_var *tb_workload_forward(tb_workload *wl, tb_tape *tape, tb_var *inputs, tb_rng *dropout)
{
    if (tb_tape_status(tape) != TB_OK) return NULL;
    if (!wl || !inputs)
        return null_arg(tape, "workload_forward", wl ? "inputs" : "the workload");
    return wl->vt->forward(wl, tape, inputs, dropout);
}

tb_var *tb_workload_loss_fn(tb_workload *wl, tb_tape *tape, tb_var *outputs, tb_var *targets)
{
    if (tb_tape_status(tape) != TB_OK) return NULL;
    if (!wl || !outputs || !targets)
        return null_arg(tape, "workload_loss_fn",
                        !wl ? "the workload" : !outputs ? "outputs" : "targets");
    if (wl->vt->loss) return wl->vt->loss(wl, tape, outputs, targets);
    return tb_workload_xent(wl, tape, outputs, targets);
}

tb_var *tb_workload_xent(tb_workload *wl, tb_tape *tape, tb_var *logits, tb_var *labels)
{
    float s = tb_tape_training(tape) ? wl->label_smoothing : 0.0f;
    return tb_op_softmax_xent(tape, logits, labels, s);
}

tb_var *tb_workload_fisher_loss(tb_workload *wl, tb_tape *tape, tb_var *outputs, tb_rng *rng)
{
    if (tb_tape_status(tape) != TB_OK) return NULL;
    if (!wl || !outputs)
        return null_arg(tape, "workload_fisher_loss", wl ? "outputs" : "the workload");
    if (!rng) return tb_tape_fail(tape, TB_ERR_INVALID, "Fisher loss: no random stream given");
    if (outputs->value.ndim < 1 || tb_tensor_numel(&outputs->value) == 0) {
        char buf[96];
        return tb_tape_fail(tape, TB_ERR_SHAPE, "Fisher loss: model outputs %s: nothing to sample",
                            tb_shape_str(&outputs->value, buf, sizeof buf));
    }
    if (wl->vt->sample_targets) {
        /* the workload's loss averages over every output element; the Fisher is that of the
         * per-example log-likelihood (a sum over the example's outputs, a mean over examples),
         * which is what curvature optimizers' batch-mean convention expects */
        tb_var *y = wl->vt->sample_targets(wl, tape, outputs, rng);
        tb_var *loss = y ? tb_workload_loss_fn(wl, tape, outputs, y) : NULL;
        int64_t rows = outputs->value.shape[0];
        int64_t per_example = rows > 0 ? tb_tensor_numel(&outputs->value) / rows : 1;
        return tb_op_scale(tape, loss, (float)per_example);
    }
    /* softmax outputs [..., C]: sample a class per row */
    int64_t flat[2] = {-1, outputs->value.shape[outputs->value.ndim - 1]};
    tb_var *logits = outputs->value.ndim == 2 ? outputs : tb_op_reshape(tape, outputs, 2, flat);
    tb_var *labels = logits ? tb_fisher_sample_labels(tape, logits, rng) : NULL;
    return labels ? tb_op_softmax_xent(tape, logits, labels, 0.0f) : NULL;
}

tb_var *tb_workload_loss(tb_workload *wl, tb_tape *tape, const int64_t *idx, int64_t n,
                         tb_rng *dropout)
{
    tb_var *x, *y;
    if (tb_tape_status(tape) != TB_OK) return NULL;
    if (!idx && n > 0) return null_arg(tape, "workload_loss", "idx");
    if (!tb_workload_gather(wl, tape, TB_SPLIT_TRAIN, idx, n, &x, &y)) return NULL;
    return tb_workload_loss_fn(wl, tape, tb_workload_forward(wl, tape, x, dropout), y);
}

/* Counts outputs whose argmax over the last dimension equals the int32 target. */
static int64_t count_correct(const float *out, const int32_t *y, int64_t rows, int64_t c)
{
    int64_t correct = 0;
    for (int64_t i = 0; i < rows; i++) {
        const float *z = out + i * c;
        int64_t best = 0;
        for (int64_t j = 1; j < c; j++)
            if (z[j] > z[best]) best = j;
        correct += best == y[i];
    }
    return correct;
}

int64_t tb_eval_subset_row(int64_t size, int64_t n, int64_t k)
{
    if (n >= size) return k;
    return (2 * k + 1) * size / (2 * n); /* the middle of the k-th of n equal parts */
}

tb_status tb_workload_evaluate(tb_workload *wl, tb_tape *tape, tb_split split, int64_t limit,
                               tb_eval_metrics *out, tb_error *err)
{
    if (!wl || !tape || !out)
        return tb_fail(err, TB_ERR_INVALID, "workload_evaluate: %s is NULL",
                       !wl ? "the workload" : !tape ? "the tape" : "out");
    if (split < TB_SPLIT_TRAIN || split > TB_SPLIT_TEST)
        return tb_fail(err, TB_ERR_INVALID, "unknown split %d", (int)split);
    /* a subset is spread evenly over the split, not its first rows: the official test sets of
     * the text corpora are in corpus order (the first rows would be Genesis, or nouns) */
    int64_t size = tb_workload_size(wl, split), total = size;
    if (limit > 0 && limit < total) total = limit;
    const int64_t batch = wl->vt->eval_batch > 0 ? wl->vt->eval_batch : 500;
    /* class labels, and a model whose logits pick one (not a sparse-target output layer) */
    bool classify = wl->src.layout.y_dtype == TB_I32 && !wl->vt->info.no_error_rate;
    int64_t *rows = malloc((size_t)batch * sizeof *rows);
    float *host = NULL;
    double loss_sum = 0;
    int64_t correct = 0, targets = 0;
    bool was_training = tb_tape_training(tape);
    tb_tape_set_training(tape, false);
    tb_tape_set_grad_enabled(tape, false);
    tb_status st = rows ? TB_OK : tb_fail(err, TB_ERR_NOMEM, "out of memory evaluating");
    for (int64_t start = 0; start < total && st == TB_OK; start += batch) {
        int64_t n = total - start < batch ? total - start : batch;
        for (int64_t i = 0; i < n; i++) rows[i] = tb_eval_subset_row(size, total, start + i);
        tb_tape_reset(tape);
        tb_var *x, *y, *outs = NULL, *loss = NULL;
        if (tb_workload_gather(wl, tape, split, rows, n, &x, &y)) {
            outs = wl->vt->forward(wl, tape, x, NULL);
            loss = tb_workload_loss_fn(wl, tape, outs, y);
        }
        if (!loss) {
            st = tb_fail(err, tb_tape_status(tape), "evaluating %s: %s", tb_split_name(split),
                         tb_tape_error(tape)->message);
            break;
        }
        float l;
        tb_tensor_download(&loss->value, &l, NULL);
        loss_sum += (double)l * (double)n;
        if (!classify) continue;
        int64_t numel = tb_tensor_numel(&outs->value);
        int64_t c = outs->value.shape[outs->value.ndim - 1];
        if (!host) host = malloc((size_t)numel * sizeof(float)); /* the first batch is largest */
        if (!host) {
            st = tb_fail(err, TB_ERR_NOMEM, "out of memory evaluating");
            break;
        }
        tb_tensor_download(&outs->value, host, NULL);
        /* the staged targets of this batch are still in wl->stage_y */
        correct += count_correct(host, (const int32_t *)wl->stage_y, numel / c, c);
        targets += numel / c;
    }
    free(rows);
    free(host);
    tb_tape_reset(tape);
    tb_tape_set_training(tape, was_training);
    tb_tape_set_grad_enabled(tape, true);
    if (st != TB_OK) return st;
    out->examples = total;
    out->loss = total ? loss_sum / (double)total : NAN;
    out->accuracy = classify && targets ? (double)correct / (double)targets : NAN;
    out->error_rate = 1.0 - out->accuracy;
    switch (wl->vt->metric_kind) {
    case TB_METRIC_ERROR_RATE: out->metric = out->error_rate; break;
    case TB_METRIC_BPC: out->metric = out->loss / log(2.0); break;
    default: out->metric = out->loss; break;
    }
    return TB_OK;
}
