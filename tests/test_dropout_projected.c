/* test_dropout_projected.c: training on projected dropout noise (docs/DROPOUT.md, "Training
 * on projected samples"): fmnist_mlp_projected's loss falls on real data, its runs are
 * bit-identical for a seed and at 1 and 2 threads, its dropout seed is a real source of
 * variation, a projection that does not converge is refused (the batch trained clean) and
 * counted, bad settings are refused by name, and the shipped study parses. */
#include "testutil.h"

#include "trainbench/study_plan.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define STEPS 6

static tb_run_config small(const char *workload, int threads)
{
    tb_run_config c = tb_run_config_default();
    c.model.workload = workload;
    c.model.algorithm = "adam";
    c.model.backend.threads = threads;
    c.data.source.train_limit = 512;
    c.data.batch_size = 32;
    c.length.max_steps = STEPS;
    c.length.schedule = TB_SCHEDULE_CONSTANT;
    tb_run_config_seed_all(&c, 9);
    return c;
}

typedef struct outcome {
    double loss[STEPS];
    double val_loss;
    tb_projection_stats proj;
} outcome;

/* STEPS steps (losses), the stage's figures, then validation on 200 examples */
static bool run(const tb_run_config *c, outcome *o)
{
    tb_error err = {0};
    tb_run *r;
    memset(o, 0, sizeof *o);
    if (!CHECK_OK(tb_run_create(c, &r, &err), &err)) return false;
    bool ok = true;
    for (int i = 0; i < STEPS && ok; i++) {
        tb_run_step_info s;
        ok = CHECK_OK(tb_run_step(r, true, &s, &err), &err);
        o->loss[i] = s.loss;
    }
    tb_pipeline_projection_stats(tb_run_pipeline(r), &o->proj);
    tb_eval_metrics m;
    ok = ok && CHECK_OK(tb_run_evaluate(r, TB_SPLIT_VALIDATION, 200, &m, &err), &err);
    o->val_loss = m.loss;
    tb_run_destroy(r);
    return ok;
}

static bool same(const outcome *a, const outcome *b)
{
    return memcmp(a->loss, b->loss, sizeof a->loss) == 0 && a->val_loss == b->val_loss &&
           a->proj.mean_steps == b->proj.mean_steps &&
           a->proj.mean_final_error == b->proj.mean_final_error;
}

static void test_trains(void)
{
    tb_run_config c = small("fmnist_mlp_projected", 1);
    outcome a, b, t2, other;
    if (!run(&c, &a)) return;
    /* every batch projected, the noise reduced, the loss falling */
    CHECK(a.proj.batches == STEPS && a.proj.projected == STEPS && a.proj.unconverged == 0);
    CHECK(a.proj.mean_steps >= 1 && a.proj.max_steps <= 100 && a.proj.last_refusal[0] == '\0');
    CHECK(a.proj.mean_initial_error > 0.2 && a.proj.mean_final_error <= 0.05 + 1e-12);
    CHECK(a.loss[STEPS - 1] < 0.8 * a.loss[0]);
    if (!run(&c, &b)) return;
    CHECK(same(&a, &b)); /* same seeds, same bits */
    c.model.backend.threads = 2;
    if (!run(&c, &t2)) return;
    CHECK(same(&a, &t2)); /* and at 2 threads */
    c.model.backend.threads = 1;
    c.seeds[TB_STREAM_DROPOUT] = 10; /* other masks projected: other inputs trained on */
    if (!run(&c, &other)) return;
    CHECK(a.loss[0] != other.loss[0] && a.val_loss != other.val_loss);
}

/* one projection step cannot converge: every batch is refused and trained clean, so the run
 * is the no-dropout network's on the same seeds, bit for bit */
static void test_refused(void)
{
    tb_run_config c = small("fmnist_mlp_projected", 1);
    c.data.pipeline.projection.max_steps = 1;
    outcome o, clean;
    if (!run(&c, &o)) return;
    CHECK(o.proj.batches == STEPS && o.proj.unconverged == STEPS && o.proj.projected == 0);
    CHECK(strstr(o.proj.last_refusal, "batch 6: projection did not converge: 1 steps") != NULL);
    tb_run_config base = small("fmnist_mlp", 1);
    if (!run(&base, &clean)) return;
    CHECK(memcmp(o.loss, clean.loss, sizeof o.loss) == 0 && o.val_loss == clean.val_loss);
    CHECK(clean.proj.batches == 0); /* no stage without a projected variant */
}

static void test_bad_input(void)
{
    tb_error err = {0};
    tb_run *r = NULL;
    tb_run_config c = small("fmnist_mlp_projected", 1);
    static const double bad[] = {1.0, -0.2, 1.5};
    for (int i = 0; i < 3; i++) {
        c.data.source.dropout_rate = bad[i];
        CHECK_FAILS(tb_run_create(&c, &r, &err), TB_ERR_INVALID, &err, "dropout_rate");
    }
    c = small("fmnist_mlp_projected", 1);
    c.data.pipeline.projection.max_steps = -1;
    CHECK_FAILS(tb_run_create(&c, &r, &err), TB_ERR_INVALID, &err, "projection: max_steps");
    c.data.pipeline.projection.max_steps = 0;
    c.data.pipeline.projection.momentum = 1.0;
    CHECK_FAILS(tb_run_create(&c, &r, &err), TB_ERR_INVALID, &err, "momentum = 1");
    CHECK(tb_workload_has_dropout("fmnist_mlp_projected"));
}

static void test_study_file(void)
{
    tb_study_plan *p = NULL;
    tb_error err = {0};
    if (!CHECK_OK(tb_study_plan_load(TB_SOURCE_DIR "/studies/dropout_augmentation.json", &p,
                                     &err), &err))
        return;
    CHECK(tb_study_plan_cells(p) == 4 && p->seeds >= 6 && p->n_comparisons == 3);
    CHECK(p->comparisons[0].expect == TB_EXPECT_A_NOT_WORSE &&
          p->comparisons[1].expect == TB_EXPECT_A_NOT_WORSE);
    tb_study_plan_free(p);
}

int main(void)
{
    test_bad_input();
    test_study_file();
    test_refused();
    test_trains();
    return tb_test_finish("test_dropout_projected");
}
