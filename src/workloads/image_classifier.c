/* image_classifier.c: what every image-classification workload shares: loading the data, the
 * train/validation split, batch assembly, the loss, evaluation, and the registry. */
#include "workloads/workload_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const tb_workload_vtable *const registry[] = {
    &tb_workload_fmnist_mlp,
};
#define N_REGISTRY ((int)(sizeof registry / sizeof *registry))

const char *tb_split_name(tb_split split)
{
    switch (split) {
    case TB_SPLIT_TRAIN: return "train";
    case TB_SPLIT_VALIDATION: return "validation";
    case TB_SPLIT_TEST: return "test";
    }
    return "unknown";
}

int tb_workload_count(void) { return N_REGISTRY; }

const tb_workload_info *tb_workload_info_at(int i)
{
    return i >= 0 && i < N_REGISTRY ? &registry[i]->info : NULL;
}

tb_status tb_workload_create(const char *id, tb_backend *be, const tb_workload_config *config,
                             tb_workload **out, tb_error *err)
{
    const tb_workload_vtable *vt = NULL;
    for (int i = 0; i < N_REGISTRY; i++)
        if (strcmp(registry[i]->info.id, id) == 0) vt = registry[i];
    if (!vt) {
        char known[256] = "";
        for (int i = 0; i < N_REGISTRY; i++) {
            strncat(known, i ? ", " : "", sizeof known - strlen(known) - 1);
            strncat(known, registry[i]->info.id, sizeof known - strlen(known) - 1);
        }
        return tb_fail(err, TB_ERR_INVALID, "unknown workload '%s' (known: %s)", id, known);
    }
    tb_workload_config cfg = {0};
    if (config) cfg = *config;
    tb_workload *wl = calloc(1, sizeof *wl);
    if (!wl) return tb_fail(err, TB_ERR_NOMEM, "cannot allocate workload %s", id);
    wl->vt = vt;
    wl->be = be;
    tb_status st = tb_fmnist_load(cfg.data_dir, "train", &wl->train_all, err);
    if (st == TB_OK) st = tb_fmnist_load(cfg.data_dir, "test", &wl->test, err);
    if (st != TB_OK) {
        tb_workload_destroy(wl);
        return st;
    }
    /* a seeded random validation split held out of the official training set */
    int64_t n_all = wl->train_all.n;
    int64_t n_val = cfg.validation_size > 0 ? cfg.validation_size : n_all / 12;
    if (n_val >= n_all) {
        tb_workload_destroy(wl);
        return tb_fail(err, TB_ERR_INVALID, "validation size %lld leaves no training data",
                       (long long)n_val);
    }
    int64_t *perm = malloc((size_t)n_all * sizeof *perm);
    if (!perm) {
        tb_workload_destroy(wl);
        return tb_fail(err, TB_ERR_NOMEM, "out of memory for the split");
    }
    for (int64_t i = 0; i < n_all; i++) perm[i] = i;
    tb_rng split_rng = tb_rng_make(cfg.split_seed, TB_STREAM_SPLIT);
    tb_rng_shuffle_i64(&split_rng, perm, n_all);
    wl->val_idx = perm;
    wl->n_val = n_val;
    wl->train_idx = perm + n_val;
    wl->n_train = n_all - n_val;
    st = tb_params_create(be, &wl->params, err);
    if (st == TB_OK) st = vt->create_model(wl, err);
    if (st == TB_OK) st = tb_params_finalize(wl->params, err);
    if (st != TB_OK) {
        tb_workload_destroy(wl);
        return st;
    }
    *out = wl;
    return TB_OK;
}

void tb_workload_destroy(tb_workload *wl)
{
    if (!wl) return;
    if (wl->vt->destroy_model) wl->vt->destroy_model(wl);
    tb_params_destroy(wl->params);
    tb_image_dataset_free(&wl->train_all);
    tb_image_dataset_free(&wl->test);
    free(wl->val_idx); /* train_idx points into the same block */
    free(wl->stage_x);
    free(wl->stage_y);
    free(wl->rows);
    free(wl);
}

const tb_workload_info *tb_workload_get_info(const tb_workload *wl) { return &wl->vt->info; }
tb_params *tb_workload_params(tb_workload *wl) { return wl->params; }

int64_t tb_workload_size(const tb_workload *wl, tb_split split)
{
    return split == TB_SPLIT_TRAIN ? wl->n_train
           : split == TB_SPLIT_VALIDATION ? wl->n_val
                                          : wl->test.n;
}

tb_status tb_workload_init(tb_workload *wl, tb_rng *rng, tb_error *err)
{
    return wl->vt->init_model(wl, rng, err);
}

/* Copies examples rows[0..n) of ds into device variables x [n, C, H, W] and y [n]. */
static bool gather(tb_workload *wl, tb_tape *tape, const tb_image_dataset *ds,
                   const int64_t *rows, int64_t n, tb_var **x, tb_var **y)
{
    int64_t dim = (int64_t)ds->channels * ds->height * ds->width;
    if (n > wl->stage_cap) {
        float *sx = realloc(wl->stage_x, (size_t)(n * dim) * sizeof(float));
        if (sx) wl->stage_x = sx;
        int32_t *sy = realloc(wl->stage_y, (size_t)n * sizeof(int32_t));
        if (sy) wl->stage_y = sy;
        if (!sx || !sy) {
            tb_tape_fail(tape, TB_ERR_NOMEM, "out of memory for a batch of %lld", (long long)n);
            return false;
        }
        wl->stage_cap = n;
    }
    for (int64_t i = 0; i < n; i++) {
        memcpy(wl->stage_x + i * dim, ds->images + rows[i] * dim, (size_t)dim * sizeof(float));
        wl->stage_y[i] = ds->labels[rows[i]];
    }
    int64_t xs[4] = {n, ds->channels, ds->height, ds->width};
    *x = tb_tape_new_var(tape, TB_F32, 4, xs, false);
    *y = tb_tape_new_var(tape, TB_I32, 1, &n, false);
    if (!*x || !*y) return false;
    tb_backend_upload(wl->be, (*x)->value.data, wl->stage_x, (size_t)(n * dim) * sizeof(float));
    tb_backend_upload(wl->be, (*y)->value.data, wl->stage_y, (size_t)n * sizeof(int32_t));
    return true;
}

bool tb_workload_gather(tb_workload *wl, tb_tape *tape, tb_split split, const int64_t *rows,
                        int64_t n, tb_var **inputs, tb_var **targets)
{
    if (tb_tape_status(tape) != TB_OK) return false;
    int64_t size = tb_workload_size(wl, split);
    if (split == TB_SPLIT_TEST) {
        for (int64_t i = 0; i < n; i++)
            if (rows[i] < 0 || rows[i] >= size) {
                tb_tape_fail(tape, TB_ERR_INVALID, "example %lld outside the %s split",
                             (long long)rows[i], tb_split_name(split));
                return false;
            }
        return gather(wl, tape, &wl->test, rows, n, inputs, targets);
    }
    /* rows index the split; map them to rows of the official training set */
    const int64_t *map = split == TB_SPLIT_TRAIN ? wl->train_idx : wl->val_idx;
    if (n > wl->rows_cap) {
        int64_t *buf = realloc(wl->rows, (size_t)n * sizeof *buf);
        if (!buf) {
            tb_tape_fail(tape, TB_ERR_NOMEM, "out of memory for a batch index");
            return false;
        }
        wl->rows = buf;
        wl->rows_cap = n;
    }
    for (int64_t i = 0; i < n; i++) {
        if (rows[i] < 0 || rows[i] >= size) {
            tb_tape_fail(tape, TB_ERR_INVALID, "example %lld outside the %s split",
                         (long long)rows[i], tb_split_name(split));
            return false;
        }
        wl->rows[i] = map[rows[i]];
    }
    return gather(wl, tape, &wl->train_all, wl->rows, n, inputs, targets);
}

tb_var *tb_workload_forward(tb_workload *wl, tb_tape *tape, tb_var *inputs, tb_rng *dropout)
{
    return wl->vt->forward(wl, tape, inputs, dropout);
}

tb_var *tb_workload_loss_fn(tb_workload *wl, tb_tape *tape, tb_var *outputs, tb_var *targets)
{
    (void)wl;
    return tb_op_softmax_xent(tape, outputs, targets, 0.0f);
}

tb_var *tb_workload_loss(tb_workload *wl, tb_tape *tape, const int64_t *idx, int64_t n,
                         tb_rng *dropout)
{
    tb_var *x, *y;
    if (!tb_workload_gather(wl, tape, TB_SPLIT_TRAIN, idx, n, &x, &y)) return NULL;
    return tb_workload_loss_fn(wl, tape, tb_workload_forward(wl, tape, x, dropout), y);
}

tb_status tb_workload_evaluate(tb_workload *wl, tb_tape *tape, tb_split split, int64_t limit,
                               tb_eval_metrics *out, tb_error *err)
{
    const tb_image_dataset *ds = split == TB_SPLIT_TEST ? &wl->test : &wl->train_all;
    const int64_t *map = split == TB_SPLIT_TRAIN ? wl->train_idx
                         : split == TB_SPLIT_VALIDATION ? wl->val_idx
                                                        : NULL;
    int64_t total = tb_workload_size(wl, split);
    if (limit > 0 && limit < total) total = limit;
    const int64_t batch = 500;
    int64_t rows[500];
    double loss_sum = 0;
    int64_t correct = 0;
    bool was_training = tb_tape_training(tape);
    tb_tape_set_training(tape, false);
    tb_tape_set_grad_enabled(tape, false);
    float *logits_host = NULL;
    tb_status st = TB_OK;
    for (int64_t start = 0; start < total && st == TB_OK; start += batch) {
        int64_t n = total - start < batch ? total - start : batch;
        for (int64_t i = 0; i < n; i++) rows[i] = map ? map[start + i] : start + i;
        tb_tape_reset(tape);
        tb_var *x, *y;
        tb_var *logits = NULL, *loss = NULL;
        if (gather(wl, tape, ds, rows, n, &x, &y)) {
            logits = wl->vt->forward(wl, tape, x, NULL);
            loss = tb_op_softmax_xent(tape, logits, y, 0.0f);
        }
        if (!loss) {
            st = tb_fail(err, tb_tape_status(tape), "evaluating %s: %s", tb_split_name(split),
                         tb_tape_error(tape)->message);
            break;
        }
        int64_t c = logits->value.shape[1];
        if (!logits_host) logits_host = malloc((size_t)(batch * c) * sizeof(float));
        if (!logits_host) {
            st = tb_fail(err, TB_ERR_NOMEM, "out of memory evaluating");
            break;
        }
        tb_tensor_download(&logits->value, logits_host, NULL);
        float l;
        tb_tensor_download(&loss->value, &l, NULL);
        loss_sum += (double)l * (double)n;
        for (int64_t i = 0; i < n; i++) {
            const float *z = logits_host + i * c;
            int64_t best = 0;
            for (int64_t j = 1; j < c; j++)
                if (z[j] > z[best]) best = j;
            correct += best == ds->labels[rows[i]];
        }
    }
    free(logits_host);
    tb_tape_reset(tape);
    tb_tape_set_training(tape, was_training);
    tb_tape_set_grad_enabled(tape, true);
    if (st != TB_OK) return st;
    out->examples = total;
    out->loss = total ? loss_sum / (double)total : NAN;
    out->accuracy = total ? (double)correct / (double)total : NAN;
    out->error_rate = 1.0 - out->accuracy;
    return TB_OK;
}
