/* test_label_smoothing.c: a workload's label smoothing (tb_workload_config.label_smoothing,
 * AlgoPerf's label_smoothing): the training loss of a classification workload is the smoothed
 * cross-entropy of its logits, evaluation's is not smoothed, and a value out of range or for a
 * workload whose loss is not cross-entropy against labels is refused naming it. */
#include "testutil.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define ROWS 16

/* The workload's loss on ROWS training rows, in training mode or not, and the plain
 * cross-entropy of the same logits with smoothing s. */
static void losses(tb_backend *be, const char *id, double s, bool training, float *got,
                   float *want)
{
    tb_error err = {0};
    tb_workload_config cfg = {.train_limit = 256, .label_smoothing = s};
    tb_workload *wl = NULL;
    *got = *want = NAN;
    if (!CHECK_OK(tb_workload_create(id, be, &cfg, &wl, &err), &err)) return;
    tb_rng init = tb_rng_make(3, TB_STREAM_INIT);
    CHECK_OK(tb_workload_init(wl, &init, &err), &err);
    tb_tape *tape = tb_test_tape(be);
    tb_tape_set_training(tape, training);
    int64_t rows[ROWS];
    for (int i = 0; i < ROWS; i++) rows[i] = 7 * i;
    tb_var *x, *y;
    if (CHECK(tb_workload_gather(wl, tape, TB_SPLIT_TRAIN, rows, ROWS, &x, &y))) {
        tb_var *out = tb_workload_forward(wl, tape, x, NULL);
        tb_var *loss = tb_workload_loss_fn(wl, tape, out, y);
        int64_t ls[2] = {-1, out ? out->value.shape[out->value.ndim - 1] : 0}, ts[1] = {-1};
        tb_var *ref = tb_op_softmax_xent(tape, tb_op_reshape(tape, out, 2, ls),
                                         tb_op_reshape(tape, y, 1, ts), (float)s);
        if (CHECK(loss && ref)) {
            tb_tensor_download(&loss->value, got, NULL);
            tb_tensor_download(&ref->value, want, NULL);
        }
    }
    tb_tape_destroy(tape);
    tb_workload_destroy(wl);
}

static void test_smoothed_loss(tb_backend *be)
{
    static const char *ids[] = {"fmnist_mlp", "kjv_transformer"};
    for (int i = 0; i < 2; i++) {
        CHECK(tb_workload_has_label_smoothing(ids[i]));
        float got, want, plain, plain_want;
        losses(be, ids[i], 0.2, true, &got, &want);
        CHECK(got == want); /* the same op on the same logits */
        losses(be, ids[i], 0.0, true, &plain, &plain_want);
        CHECK(plain == plain_want && fabsf(got - plain) > 1e-3f); /* smoothing changes it */
        losses(be, ids[i], 0.2, false, &got, &want); /* evaluation: not smoothed */
        CHECK(got == plain);
    }
}

static void test_refused(tb_backend *be)
{
    tb_error err = {0};
    tb_workload *wl = NULL;
    CHECK(!tb_workload_has_label_smoothing("fmnist_autoencoder") &&
          !tb_workload_has_label_smoothing("wordnet_sparse_sq_exact"));
    tb_workload_config cfg = {.label_smoothing = 0.1};
    CHECK_FAILS(tb_workload_create("fmnist_autoencoder", be, &cfg, &wl, &err),
                TB_ERR_UNSUPPORTED, &err, "fmnist_autoencoder has no label smoothing");
    cfg.label_smoothing = 1.0;
    CHECK_FAILS(tb_workload_create("fmnist_mlp", be, &cfg, &wl, &err), TB_ERR_INVALID, &err,
                "fmnist_mlp: label_smoothing = 1 is outside [0, 1)");
    cfg.label_smoothing = -0.1;
    CHECK_FAILS(tb_workload_create("fmnist_mlp", be, &cfg, &wl, &err), TB_ERR_INVALID, &err,
                "label_smoothing = -0.1");
    CHECK(wl == NULL);
}

int main(void)
{
    tb_backend *be = tb_test_backend();
    test_refused(be);
    test_smoothed_loss(be);
    tb_backend_destroy(be);
    return tb_test_finish("test_label_smoothing");
}
