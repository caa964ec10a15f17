/* test_dist.c: the MPI context and its collectives. Run plainly it checks the world of 1 (no
 * MPI); ctest also runs it under mpirun with 2 and 3 ranks, where it checks the gradient
 * average of known per-rank buffers, rank 0's decision reaching every rank, and the
 * identical-weights check catching one perturbed rank, and every rank counted on this machine. */
#include "testutil.h"

#include "trainbench/dist.h"

#include <stdlib.h>
#include <string.h>

static void test_world_of_one(tb_dist *d)
{
    CHECK(tb_dist_rank(d) == 0 && tb_dist_size(d) == 1 && tb_dist_node_size(d) == 1);
    CHECK(tb_dist_node_size(NULL) == 1);
    CHECK(!tb_dist_uses_mpi(d));
    tb_error err = {0};
    float buf[3] = {1.5f, -2.0f, 3.0f};
    CHECK_OK(tb_dist_average(d, buf, 3, &err), &err);
    CHECK(buf[0] == 1.5f && buf[1] == -2.0f && buf[2] == 3.0f); /* unchanged */
    int decision = 5;
    CHECK_OK(tb_dist_broadcast(d, &decision, &err), &err);
    CHECK(decision == 5);
    CHECK_OK(tb_dist_check_identical(d, buf, 3, "weights", &err), &err);
}

/* rank r holds r + i at i (and a large value at the end): the mean is (size - 1) / 2 + i */
static void test_average(tb_dist *d)
{
    int rank = tb_dist_rank(d), size = tb_dist_size(d);
    enum { N = 1000 };
    float *buf = malloc(N * sizeof *buf);
    for (int i = 0; i < N; i++) buf[i] = (float)(rank + i);
    buf[N - 1] = 1e6f * (float)(rank + 1);
    tb_error err = {0};
    CHECK_OK(tb_dist_average(d, buf, N, &err), &err);
    int wrong = 0;
    for (int i = 0; i < N - 1; i++)
        if (fabsf(buf[i] - ((float)(size - 1) / 2.0f + (float)i)) > 1e-4f * (1.0f + (float)i))
            wrong++;
    CHECK(wrong == 0);
    CHECK_NEAR(buf[N - 1], 1e6 * (size + 1) / 2.0, 1.0);
    free(buf);
    CHECK_FAILS(tb_dist_average(d, NULL, 4, &err), TB_ERR_INVALID, &err, "buf is NULL");
}

static void test_broadcast(tb_dist *d)
{
    tb_error err = {0};
    int decision = tb_dist_rank(d) == 0 ? 7 : -1 - tb_dist_rank(d);
    CHECK_OK(tb_dist_broadcast(d, &decision, &err), &err);
    CHECK(decision == 7);
}

static void test_identical(tb_dist *d)
{
    float w[64];
    for (int i = 0; i < 64; i++) w[i] = 0.25f * (float)i - 3.0f;
    tb_error err = {0};
    CHECK_OK(tb_dist_check_identical(d, w, 64, "weights", &err), &err);
    /* rank 1 alone moves one weight by one ulp: every rank learns, naming rank 1 */
    if (tb_dist_rank(d) == 1) w[17] = nextafterf(w[17], 1e9f);
    CHECK_FAILS(tb_dist_check_identical(d, w, 64, "weights", &err), TB_ERR_INTERNAL, &err,
                "weights differ across ranks: 1 of");
    CHECK(strstr(err.message, "(1)") != NULL);
}

int main(void)
{
    tb_dist *d = NULL;
    tb_error err = {0};
    if (!CHECK_OK(tb_dist_init(&d, &err), &err)) return tb_test_finish("test_dist");
    printf("rank %d of %d (%s)\n", tb_dist_rank(d), tb_dist_size(d),
           tb_dist_uses_mpi(d) ? "mpi" : "no mpi");
    if (!tb_dist_launched()) {
        test_world_of_one(d);
    } else {
        CHECK(tb_dist_uses_mpi(d));
        /* ctest starts every rank on this machine */
        CHECK(tb_dist_node_size(d) == tb_dist_size(d));
        test_average(d);
        test_broadcast(d);
        if (tb_dist_size(d) > 1) test_identical(d);
    }
    CHECK_OK(tb_dist_finalize(d, &err), &err);
    return tb_test_finish("test_dist");
}
