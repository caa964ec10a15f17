/* test_dropout_projection.c: the projection of dropout noise into the input space
 * (docs/DROPOUT.md) on a small real batch: it reduces the reconstruction error and says in
 * how many steps; one that does not converge is reported as such. */
#include "testutil.h"

#include "trainbench/dropout.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { N = 8, PIX = 784 };

static void test_projection(void)
{
    tb_error err = {0};
    tb_backend *be = tb_test_backend();
    tb_workload_config cfg = {.train_limit = 256};
    tb_workload *wl;
    if (!CHECK_OK(tb_workload_create("fmnist_mlp_dropout", be, &cfg, &wl, &err), &err)) {
        tb_backend_destroy(be);
        return;
    }
    tb_rng init = tb_rng_make(1, TB_STREAM_INIT);
    CHECK_OK(tb_workload_init(wl, &init, &err), &err);
    int64_t rows[N];
    for (int i = 0; i < N; i++) rows[i] = 17 * i;
    float *x = malloc(N * PIX * sizeof *x), *xs = malloc(N * PIX * sizeof *xs);
    int32_t y[N];
    CHECK_OK(tb_workload_read(wl, TB_SPLIT_TRAIN, rows, N, x, y, &err), &err);
    tb_tape *tape = tb_test_tape(be);
    tb_projection_config pc = {.rate = 0.3f};
    tb_rng drop = tb_rng_make(2, TB_STREAM_DROPOUT), start = drop;
    tb_projection_report r;
    CHECK_OK(tb_dropout_project(wl, tape, N, x, &pc, &drop, xs, &r, &err), &err);
    CHECK(r.converged && r.steps >= 10 && r.steps <= 500);
    CHECK(r.initial_error > 0 && r.final_error < 0.5 * r.initial_error);
    CHECK(drop.counter > start.counter && memcmp(x, xs, N * PIX * sizeof *x) != 0);
    /* the same stream, the same projection */
    float *again = malloc(N * PIX * sizeof *again);
    tb_projection_report r2;
    CHECK_OK(tb_dropout_project(wl, tape, N, x, &pc, &start, again, &r2, &err), &err);
    CHECK(r2.steps == r.steps && memcmp(again, xs, N * PIX * sizeof *xs) == 0);
    /* too few steps: reported, not silently used */
    pc.max_steps = 3;
    CHECK_FAILS(tb_dropout_project(wl, tape, N, x, &pc, &drop, xs, &r, &err), TB_ERR_NUMERIC,
                &err, "did not converge: 3 steps");
    CHECK(!r.converged && r.steps == 3);
    pc.max_steps = 0;
    pc.rate = 1.0f;
    CHECK_FAILS(tb_dropout_project(wl, tape, N, x, &pc, &drop, xs, &r, &err), TB_ERR_INVALID,
                &err, "rate = 1");
    free(again);
    free(x);
    free(xs);
    tb_tape_destroy(tape);
    tb_workload_destroy(wl);
    tb_backend_destroy(be);
}

int main(void)
{
    test_projection();
    return tb_test_finish("test_dropout_projection");
}
