/* test_dist_throughput.c: data-parallel tb_throughput_run (`hw --dist`). ctest runs it under
 * mpirun with 2 ranks: the run trains the global batch (the losses read equal one process's on
 * the whole batch, to float summation order, which they do not when the gradients are not
 * averaged), every rank times the same windows of the same steps, rank 0's clock decides for
 * every rank, and a GPU or a batch that does not divide is refused on every rank. Run plainly
 * (a world of 1) it checks that a context of one process changes nothing. */
#include "testutil.h"

#include "trainbench/dist.h"
#include "trainbench/hardware.h"

#include <stdlib.h>
#include <string.h>

/* fmnist_mlp with the suite's settings: 2 warm-up steps, 3 windows of exactly 4 steps */
static tb_throughput_config tiny(tb_dist *d)
{
    tb_throughput_config c = tb_throughput_config_default();
    const char *alg;
    tb_hw_settings("fmnist_mlp", &alg, &c.hparams, NULL);
    c.algorithm = alg;
    c.backend.threads = 1;
    c.warmup_steps = 2;
    c.windows = 3;
    c.window_steps = 4;
    c.check_loss = true;
    c.dist = d;
    return c;
}

static void test_matches_single_process(tb_dist *d)
{
    tb_throughput_result *r = calloc(2, sizeof *r);
    tb_error err = {0};
    tb_throughput_config c = tiny(d);
    CHECK_OK(tb_throughput_run(&c, &r[0], &err), &err); /* includes the identical weights */
    CHECK(r[0].passed && r[0].ranks == tb_dist_size(d));
    CHECK(r[0].windows == 3 && r[0].steps == 12 && r[0].batch_size == 128);
    CHECK(r[0].examples == 12 * 128); /* the global batch's examples */
    CHECK(r[0].examples_per_s > 0 && r[0].peak_rss_mb > 0);
    float losses[2] = {(float)r[0].first_loss, (float)r[0].last_loss};
    CHECK_OK(tb_dist_check_identical(d, losses, 2, "the losses read", &err), &err);
    if (tb_dist_rank(d) == 0) {
        c = tiny(NULL);
        CHECK_OK(tb_throughput_run(&c, &r[1], &err), &err);
        CHECK(r[1].ranks == 1 && r[1].steps == 12);
        CHECK_NEAR(r[0].first_loss, r[1].first_loss, 1e-4 * r[1].first_loss);
        CHECK_NEAR(r[0].last_loss, r[1].last_loss, 1e-4 * r[1].last_loss);
        CHECK(r[0].last_loss < r[0].first_loss);
        printf("%d ranks: loss %.6f -> %.6f, one process %.6f -> %.6f\n", tb_dist_size(d),
               r[0].first_loss, r[0].last_loss, r[1].first_loss, r[1].last_loss);
    }
    free(r);
}

/* rank 1 alone has a tiny time limit and 2 s windows; rank 0 decides: windows of 4 steps and
 * no limit, so every rank runs rank 0's windows (without the agreement they would hang) */
static void test_rank0_decides(tb_dist *d)
{
    tb_throughput_result *r = calloc(1, sizeof *r);
    tb_error err = {0};
    tb_throughput_config c = tiny(d);
    c.windows = 2;
    if (tb_dist_rank(d) != 0) {
        c.max_time_s = 1e-9;
        c.window_s = 2;
    }
    CHECK_OK(tb_throughput_run(&c, r, &err), &err);
    CHECK(r->windows == 2 && r->steps == 8 && r->passed);
    free(r);
}

static void test_refusals(tb_dist *d)
{
    tb_throughput_result *r = calloc(1, sizeof *r);
    tb_error err = {0};
    tb_throughput_config c = tiny(d);
    c.batch_size = 63;
    CHECK_FAILS(tb_throughput_run(&c, r, &err), TB_ERR_INVALID, &err,
                "the batch of 63 examples does not divide among 2 ranks");
    c = tiny(d);
    c.backend.device = TB_DEVICE_CUDA;
    CHECK_FAILS(tb_throughput_run(&c, r, &err), TB_ERR_UNSUPPORTED, &err, "NCCL");
    free(r);
}

/* a world of 1: a run as without a context */
static void test_world_of_one(tb_dist *d)
{
    tb_throughput_result *r = calloc(2, sizeof *r);
    tb_error err = {0};
    tb_throughput_config c = tiny(d);
    CHECK_OK(tb_throughput_run(&c, &r[0], &err), &err);
    c = tiny(NULL);
    CHECK_OK(tb_throughput_run(&c, &r[1], &err), &err);
    CHECK(r[0].ranks == 1 && r[0].steps == r[1].steps && r[0].passed);
    CHECK(r[0].first_loss == r[1].first_loss && r[0].last_loss == r[1].last_loss);
    c = tiny(d);
    c.batch_size = 63; /* divides among 1 rank */
    CHECK_OK(tb_throughput_run(&c, &r[0], &err), &err);
    free(r);
}

/* more than one rank */
static void test_ranks(tb_dist *d)
{
    test_matches_single_process(d);
    test_rank0_decides(d);
    if (tb_dist_size(d) == 2) test_refusals(d);
}

int main(void) { return tb_test_dist_main("test_dist_throughput", test_world_of_one, test_ranks); }
