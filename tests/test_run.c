/* test_run.c: the run core (trainbench/run.h) on its own: set-up and steps, the one divergence
 * rule, the evaluation scheduler, and an update hook that takes the standard step with its own
 * optimizer giving the built-in run's numbers bit for bit (one step, whichever driver). */
#include "testutil.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define STEPS 12

static tb_run_config small(void)
{
    tb_run_config c = tb_run_config_default();
    c.model.algorithm = "sgd";
    tb_hparams_set(&c.model.hparams, "learning_rate", 0.05, NULL);
    c.model.backend.threads = 1;
    c.data.source.train_limit = 2048;
    c.data.batch_size = 64;
    c.length.max_steps = STEPS;
    c.length.schedule = TB_SCHEDULE_CONSTANT;
    tb_run_config_seed_all(&c, 5);
    return c;
}

/* STEPS steps of a run: their losses into loss[], and the run's bookkeeping checked. */
static bool run_steps(const tb_run_config *c, double *loss, tb_error *err)
{
    tb_run *r;
    if (!CHECK_OK(tb_run_create(c, &r, err), err)) return false;
    CHECK(tb_run_total_steps(r) == STEPS && !tb_run_open_ended(r) && tb_run_batch_size(r) == 64);
    bool ok = true;
    for (int i = 0; i < STEPS && ok; i++) {
        tb_run_step_info s;
        ok = CHECK_OK(tb_run_step(r, true, &s, err), err);
        loss[i] = s.loss;
        ok = ok && CHECK(s.step == i + 1 && s.examples == 64 && s.seconds >= 0 && !s.done);
    }
    CHECK(tb_run_steps(r) == STEPS && tb_run_timed_s(r) > 0 && tb_run_first_loss(r) == loss[0]);
    tb_run_destroy(r);
    return ok;
}

static void test_steps(void)
{
    tb_error err = {0};
    tb_run_config c = small();
    double a[STEPS], b[STEPS];
    if (!run_steps(&c, a, &err) || !run_steps(&c, b, &err)) return;
    CHECK(memcmp(a, b, sizeof a) == 0); /* the same seeds, the same bits */
    CHECK(a[STEPS - 1] < a[0]);         /* it trains */
    /* an open-ended run: no length, its schedule spans the workload's step hint */
    c.length.max_steps = 0;
    c.length.epochs = 0;
    c.length.schedule = TB_SCHEDULE_WARMUP_COSINE;
    tb_run *r;
    if (!CHECK_OK(tb_run_create(&c, &r, &err), &err)) return;
    CHECK(tb_run_open_ended(r) && tb_run_total_steps(r) == INT64_MAX &&
          tb_run_schedule(r)->total_steps == tb_workload_get_info(tb_run_workload(r))->step_hint);
    tb_run_destroy(r);
}

/* The rule: not finite, or over TB_RUN_DIVERGENCE_FACTOR x the first loss, named. */
static void test_divergence(void)
{
    tb_error err = {0};
    tb_run_config c = small();
    tb_run *r;
    if (!CHECK_OK(tb_run_create(&c, &r, &err), &err)) return;
    CHECK_OK(tb_run_check_loss(r, "x", 1e30, 3, false, &err), &err); /* no yardstick yet */
    tb_run_step_info s;
    CHECK_OK(tb_run_step(r, true, &s, &err), &err);
    double first = tb_run_first_loss(r);
    CHECK(first == s.loss && first > 0);
    CHECK_OK(tb_run_check_loss(r, "x", 0.999 * TB_RUN_DIVERGENCE_FACTOR * first, 2, false, &err),
             &err);
    CHECK_FAILS(tb_run_check_loss(r, "the training loss", 1.001 * TB_RUN_DIVERGENCE_FACTOR * first,
                                  7, false, &err),
                TB_ERR_NUMERIC, &err, "the training loss is");
    CHECK(strstr(err.message, "at step 7") && strstr(err.message, "times the first step's"));
    CHECK_FAILS(tb_run_check_loss(r, "the validation loss", NAN, 9, true, &err), TB_ERR_NUMERIC,
                &err, "after the last step (9) (not finite)");
    tb_run_destroy(r);
    /* a learning rate that explodes the loss: the step itself fails, and is not counted */
    tb_hparams_set(&c.model.hparams, "learning_rate", 1e6, NULL);
    if (!CHECK_OK(tb_run_create(&c, &r, &err), &err)) return;
    tb_status st = TB_OK;
    int64_t i = 0;
    for (; i < STEPS && st == TB_OK; i++) st = tb_run_step(r, true, &s, &err);
    CHECK(st == TB_ERR_NUMERIC && strstr(err.message, "diverged"));
    CHECK(tb_run_steps(r) == i - 1);
    tb_run_destroy(r);
}

static void test_eval_sched(void)
{
    tb_run_eval e = {.during = 3};
    tb_eval_sched s = tb_eval_sched_make(&e, 10);
    int due[11] = {0};
    for (int step = 1; step <= 10; step++) due[step] = tb_eval_sched_due(&s, step, 0);
    /* the k-th after step ceil(k * 10 / 4): 3, 5, 8; never at the last step */
    for (int step = 1; step <= 10; step++)
        CHECK(due[step] == (step == 3 || step == 5 || step == 8));
    /* by period, from the last evaluation (not a fixed grid) */
    e = (tb_run_eval){.period_s = 1.0};
    s = tb_eval_sched_make(&e, INT64_MAX);
    CHECK(!tb_eval_sched_due(&s, 1, 0.5) && tb_eval_sched_due(&s, 2, 1.2));
    tb_eval_sched_done(&s, 1.2);
    CHECK(!tb_eval_sched_due(&s, 3, 2.1) && tb_eval_sched_due(&s, 4, 2.2));
    /* counted evaluations need a known length */
    e = (tb_run_eval){.during = 5};
    s = tb_eval_sched_make(&e, INT64_MAX);
    CHECK(!tb_eval_sched_due(&s, 1000000, 0));
    /* by steps: after every 4th step whatever the clock says, the period off */
    e = (tb_run_eval){.every_steps = 4, .period_s = 1.0};
    s = tb_eval_sched_make(&e, 10);
    static const double clock[11] = {0, 0.1, 5, 9, 9.1, 9.2, 20, 30, 31, 40, 50};
    for (int step = 1; step <= 10; step++) {
        bool d = tb_eval_sched_due(&s, step, clock[step]);
        if (d) tb_eval_sched_done(&s, clock[step]);
        CHECK(d == (step == 4 || step == 8));
    }
}

/* An update hook with its own sgd through tb_run_standard_update: the built-in run's bits. */
typedef struct hook {
    tb_optimizer *opt;
    tb_hparams hp;
    int batch_calls;
} hook;

static int hook_batch(void *user, tb_run *run)
{
    (void)run;
    ((hook *)user)->batch_calls++;
    return 64;
}

static tb_status hook_update(void *user, tb_run *run, const tb_batch *batch, int64_t step,
                             tb_step_report *rep, tb_error *err)
{
    (void)step;
    hook *h = user;
    if (!h->opt) {
        tb_status st = tb_optimizer_create("sgd", tb_workload_params(tb_run_workload(run)), &h->hp,
                                           &h->opt, err);
        if (st != TB_OK) return st;
    }
    return tb_run_standard_update(run, h->opt, batch, 1.0, &rep->loss, err);
}

static void test_update_hook(void)
{
    tb_error err = {0};
    tb_run_config c = small();
    double builtin[STEPS], hooked[STEPS];
    if (!run_steps(&c, builtin, &err)) return;
    hook h = {.hp = c.model.hparams};
    c.model.algorithm = NULL;
    c.data.batch_size = 0;
    c.update = (tb_run_update){.batch_size = hook_batch, .update = hook_update, .user = &h};
    tb_run *r;
    if (!CHECK_OK(tb_run_create(&c, &r, &err), &err)) return;
    CHECK(h.batch_calls == 1 && !tb_run_optimizer(r) && !tb_run_step_runner(r));
    bool ok = true;
    for (int i = 0; i < STEPS && ok; i++) {
        tb_run_step_info s;
        ok = CHECK_OK(tb_run_step(r, false, &s, &err), &err);
        hooked[i] = s.loss;
    }
    CHECK(memcmp(builtin, hooked, sizeof builtin) == 0);
    tb_optimizer_destroy(h.opt); /* it lives on the run's backend: before the run */
    tb_run_destroy(r);
    /* a hook's refusals: no batch, CUDA graphs */
    c.update.batch_size = NULL;
    c.model.cuda_graph = true;
    CHECK_FAILS(tb_run_create(&c, &r, &err), TB_ERR_UNSUPPORTED, &err, "CUDA graphs");
}

static void test_bad_config(void)
{
    tb_error err = {0};
    tb_run *r = NULL;
    tb_run_config c = small();
    c.model.workload = NULL;
    CHECK_FAILS(tb_run_create(&c, &r, &err), TB_ERR_INVALID, &err, "model.workload is NULL");
    c = small();
    c.data.batch_size = 4096; /* more than the 2048 examples kept */
    CHECK_FAILS(tb_run_create(&c, &r, &err), TB_ERR_INVALID, &err, "exceeds the");
    c = small();
    c.length.epochs = 1e12;
    c.length.max_steps = 0;
    CHECK_FAILS(tb_run_create(&c, &r, &err), TB_ERR_INVALID, &err, "more than the");
    c = small();
    c.eval.period_s = -1;
    CHECK_FAILS(tb_run_create(&c, &r, &err), TB_ERR_INVALID, &err, "eval period");
    CHECK(r == NULL);
}

int main(void)
{
    test_eval_sched();
    test_bad_config();
    test_steps();
    test_divergence();
    test_update_hook();
    return tb_test_finish("test_run");
}
