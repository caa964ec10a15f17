/* test_dist_train.c: data-parallel tb_train. ctest runs it under mpirun with 2 ranks: every
 * step's loss equals a single process's on the whole batch (to float summation order) and is
 * the same on every rank, the weights end identical (tb_train checks), rank 0's decision to stop
 * stops every rank, and what is not built is refused on every rank. Run plainly (a world of 1)
 * it checks that a dist context of one process trains as a run without one. */
#include "testutil.h"

#include "trainbench/dist.h"

#include <string.h>

enum { STEPS = 20 };

typedef struct losses {
    float v[STEPS];
    int n;
} losses;

static void record(void *user, const tb_train_progress *p)
{
    losses *l = user;
    if (p->step >= 1 && p->step <= STEPS) l->v[p->step - 1] = (float)p->loss;
    l->n = (int)p->step;
}

/* Observers that record every step's loss into l. */
static const tb_train_observers *watch(tb_train_observers *o, losses *l)
{
    *o = (tb_train_observers){.progress = record, .progress_user = l};
    return o;
}

static tb_run_config base(tb_dist *d)
{
    tb_run_config c = tb_run_config_default();
    c.model.backend.threads = 1;
    c.data.batch_size = 64;
    c.length.max_steps = STEPS;
    c.eval.during = 0;
    c.eval.examples = 500;
    c.dist = d;
    return c;
}

/* every step's loss against one process's on the whole batch, and the same on every rank */
static void test_matches_single_process(tb_dist *d)
{
    losses dl = {0}, sl = {0};
    tb_run_config c = base(d);
    tb_train_observers o;
    tb_train_result r;
    tb_error err = {0};
    /* includes the identical-weights check */
    CHECK_OK(tb_train(&c, watch(&o, &dl), &r, &err), &err);
    CHECK(dl.n == STEPS && r.steps == STEPS && r.examples == STEPS * 64);
    CHECK_OK(tb_dist_check_identical(d, dl.v, STEPS, "the step losses", &err), &err);
    if (tb_dist_rank(d) != 0) {
        CHECK(r.evaluations == 0); /* rank 0 alone evaluates */
        return;
    }
    CHECK(r.evaluations == 1 && isfinite(r.validation.loss) && isfinite(r.test.loss));
    c = base(NULL);
    tb_train_result single;
    CHECK_OK(tb_train(&c, watch(&o, &sl), &single, &err), &err);
    int off = 0;
    for (int i = 0; i < STEPS; i++)
        if (!(fabsf(dl.v[i] - sl.v[i]) <= 1e-4f * fabsf(sl.v[i]))) {
            if (off++ < 3)
                printf("step %d: loss %.8g with %d ranks, %.8g in one process\n", i + 1,
                       dl.v[i], tb_dist_size(d), sl.v[i]);
        }
    CHECK(off == 0);
    CHECK(dl.v[STEPS - 1] < dl.v[0]); /* it learns */
    CHECK_NEAR(r.validation.loss, single.validation.loss, 1e-3 * single.validation.loss);
    printf("%d ranks: loss %.6f -> %.6f, one process %.6f -> %.6f\n", tb_dist_size(d), dl.v[0],
           dl.v[STEPS - 1], sl.v[0], sl.v[STEPS - 1]);
}

/* rank 0 alone has a time limit (reached after its first step): every rank stops there */
static void test_rank0_decides(tb_dist *d)
{
    losses l = {0};
    tb_run_config c = base(d);
    tb_train_observers o;
    c.length.max_steps = 1000;
    c.length.max_time_s = tb_dist_rank(d) == 0 ? 1e-9 : 0;
    tb_train_result r;
    tb_error err = {0};
    CHECK_OK(tb_train(&c, watch(&o, &l), &r, &err), &err);
    CHECK(r.steps == 1);
}

static void test_refusals(tb_dist *d)
{
    losses l = {0};
    tb_run_config c = base(d);
    tb_train_observers o;
    tb_train_result r;
    tb_error err = {0};
    c.data.batch_size = 63;
    CHECK_FAILS(tb_train(&c, watch(&o, &l), &r, &err), TB_ERR_INVALID, &err,
                "the batch of 63 examples does not divide among 2 ranks");
    c = base(d);
    c.model.algorithm = "kfac";
    CHECK_FAILS(tb_train(&c, watch(&o, &l), &r, &err), TB_ERR_UNSUPPORTED, &err,
                "kfac is not built for data-parallel training");
    c = base(d);
    c.model.backend.device = TB_DEVICE_CUDA;
    CHECK_FAILS(tb_train(&c, watch(&o, &l), &r, &err), TB_ERR_UNSUPPORTED, &err, "NCCL");
}

/* a world of 1: the same run as without a context, bit for bit */
static void test_world_of_one(tb_dist *d)
{
    losses a = {0}, b = {0};
    tb_run_config c = base(d);
    tb_train_observers o;
    c.length.max_steps = 5;
    tb_train_result ra, rb;
    tb_error err = {0};
    CHECK_OK(tb_train(&c, watch(&o, &a), &ra, &err), &err);
    c = base(NULL);
    c.length.max_steps = 5;
    CHECK_OK(tb_train(&c, watch(&o, &b), &rb, &err), &err);
    CHECK(memcmp(a.v, b.v, sizeof a.v) == 0);
    CHECK(ra.validation.loss == rb.validation.loss);
}

/* more than one rank */
static void test_ranks(tb_dist *d)
{
    test_matches_single_process(d);
    test_rank0_decides(d);
    if (tb_dist_size(d) == 2) test_refusals(d);
}

int main(void) { return tb_test_dist_main("test_dist_train", test_world_of_one, test_ranks); }
