/* test_study_claims.c: the shipped studies of the optimizer papers' claims (docs/STUDIES.md)
 * load and state what their claims need, without training: large_batch tunes every optimizer
 * at three batch sizes or more (the largest at least 16 times the smallest) with the same
 * trial budget; ekfac_vs_kfac and ekfac_vs_kfac_time tune learning rate and damping, the
 * second by timed seconds; inclusion's spaces respect the inclusions on two workloads or more,
 * inclusion_restricted's tune the learning rate alone; the edge-of-stability studies measure
 * full-batch Adam at 3 step sizes and gradient descent at 2 against 38/eta and 2/eta. */
#include "testutil.h"

#include <math.h>
#include <string.h>

#include "study/study_impl.h"
#include "trainbench/study_plan.h"
#include "trainbench/tune.h"

static tb_study_plan *load(const char *name)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/studies/%s.json", TB_SOURCE_DIR, name);
    tb_study_plan *p = NULL;
    tb_error err = {0};
    if (!CHECK_OK(tb_study_plan_load(path, &p, &err), &err)) return NULL;
    CHECK(strcmp(p->name, name) == 0);
    return p;
}

static const tb_study_axis *axis(const tb_study_plan *p, tb_study_axis_kind kind)
{
    for (int k = 0; k < p->n_axes; k++)
        if (p->axes[k].kind == kind) return &p->axes[k];
    return NULL;
}

/* The cell's algorithm (its run configuration's). */
static const char *cell_algorithm(const tb_study_plan *p, int cell, tb_run_config *c)
{
    tb_error err = {0};
    if (!CHECK_OK(tb_study_plan_run_config(p, cell, 0, c, &err), &err)) return "";
    return c->model.algorithm;
}

/* The dimension `name` of the space cell tunes over; false when it has none. */
static bool tuned_dim(const tb_study_plan *p, int cell, const char *name, tb_search_dim *out,
                      int *dims)
{
    const tb_study_tune *t = tb_study_plan_cell_tune(p, cell);
    if (!t) return false;
    tb_search_space *s = NULL;
    tb_error err = {0};
    if (!CHECK_OK(tb_search_space_parse(p->space_json[t->space], "space", &s, &err), &err))
        return false;
    bool found = false;
    *dims = tb_search_space_dims(s);
    for (int i = 0; i < *dims && !found; i++) {
        tb_search_dim d;
        found = tb_search_space_dim(s, i, &d) && strcmp(d.name, name) == 0 &&
                tb_search_space_dim_varies(s, i);
        if (found) *out = d;
    }
    tb_search_space_destroy(s);
    return found;
}

/* Every cell tunes, each with `trials` trials, its learning rate over a range. */
static void check_all_tuned(const tb_study_plan *p, int trials)
{
    for (int cell = 0; cell < tb_study_plan_cells(p); cell++) {
        const tb_study_tune *t = tb_study_plan_cell_tune(p, cell);
        tb_search_dim d;
        int dims = 0;
        if (!CHECK(t != NULL)) continue;
        CHECK(t->trials == trials && t->budget_steps == 0 && t->budget_epochs == 0);
        CHECK(tuned_dim(p, cell, "learning_rate", &d, &dims) && d.max / d.min >= 10);
    }
}

static void test_large_batch(void)
{
    tb_study_plan *p = load("large_batch");
    if (!p) return;
    const tb_study_axis *b = axis(p, TB_AXIS_BATCH_SIZE), *a = axis(p, TB_AXIS_ALGORITHM);
    if (CHECK(b && a)) {
        double lo = INFINITY, hi = 0;
        for (int i = 0; i < b->n; i++) {
            lo = fmin(lo, b->numbers[i]);
            hi = fmax(hi, b->numbers[i]);
        }
        CHECK(b->n >= 3 && hi >= 16 * lo);
        CHECK(a->n == 4);
    }
    /* the same trial budget for every optimizer at every batch size, and the same number of
     * dimensions */
    check_all_tuned(p, p->tune.on ? p->tune.trials : tb_study_plan_cell_tune(p, 0)->trials);
    int dims0 = -1;
    for (int cell = 0; cell < tb_study_plan_cells(p); cell++) {
        tb_search_dim d;
        int dims = 0;
        tuned_dim(p, cell, "learning_rate", &d, &dims);
        if (dims0 < 0) dims0 = dims;
        CHECK(dims == dims0);
    }
    CHECK(p->n_comparisons == 2 && p->comparisons[0].expect == TB_EXPECT_A_NOT_WORSE &&
          p->comparisons[1].expect == TB_EXPECT_A_NOT_WORSE);
    tb_study_plan_free(p);
}

static void check_ekfac(const char *name, bool timed)
{
    tb_study_plan *p = load(name);
    if (!p) return;
    check_all_tuned(p, tb_study_plan_cell_tune(p, 0) ? tb_study_plan_cell_tune(p, 0)->trials : 0);
    for (int cell = 0; cell < tb_study_plan_cells(p); cell++) {
        tb_search_dim d;
        int dims = 0;
        tb_run_config c;
        const char *algo = cell_algorithm(p, cell, &c);
        CHECK(strcmp(algo, "kfac") == 0 || strcmp(algo, "ekfac") == 0);
        CHECK(tuned_dim(p, cell, "damping", &d, &dims) && d.max / d.min >= 100);
        CHECK(timed ? c.length.max_time_s > 0 : c.length.max_time_s == 0);
        CHECK(strcmp(c.model.workload, "fmnist_autoencoder") == 0);
    }
    CHECK(p->n_comparisons == 1 && p->comparisons[0].expect == TB_EXPECT_A_BETTER);
    tb_study_plan_free(p);
}

static void test_ekfac(void)
{
    check_ekfac("ekfac_vs_kfac", false);
    check_ekfac("ekfac_vs_kfac_time", true);
}

/* Wide: SGD is momentum's point 0; Adam's and NAdam's epsilon is tuned with their learning
 * rate and reaches 1 and above, where the step is learning_rate / epsilon times the momentum
 * buffer. Restricted: the learning rate alone, every cell. */
static void check_inclusion(const char *name, bool wide)
{
    tb_study_plan *p = load(name);
    if (!p) return;
    const tb_study_axis *w = axis(p, TB_AXIS_WORKLOAD);
    CHECK(w && w->n >= 2);
    for (int cell = 0; cell < tb_study_plan_cells(p); cell++) {
        tb_search_dim d;
        int dims = 0;
        tb_run_config c;
        const char *algo = cell_algorithm(p, cell, &c);
        if (!CHECK(tuned_dim(p, cell, "learning_rate", &d, &dims))) continue;
        if (!wide) {
            CHECK(dims == 1);
            continue;
        }
        if (strcmp(algo, "adam") == 0 || strcmp(algo, "nadam") == 0)
            CHECK(tuned_dim(p, cell, "epsilon", &d, &dims) && d.min <= 1e-8 && d.max >= 1);
        else if (strcmp(algo, "momentum") == 0)
            CHECK(tuned_dim(p, cell, "momentum", &d, &dims) && d.min == 0);
        else
            CHECK(strcmp(algo, "sgd") == 0 &&
                  tb_hparams_get(&c.model.hparams, "momentum", 1) == 0);
    }
    CHECK(p->n_comparisons >= 2 && p->comparisons[0].expect != TB_EXPECT_NONE);
    tb_study_plan_free(p);
}

static void test_inclusion(void)
{
    check_inclusion("inclusion", true);
    check_inclusion("inclusion_restricted", false);
}

/* edge_of_stability: full-batch Adam at beta1 0.9 at 3 step sizes or more, each cell's
 * threshold 38/eta; edge_of_stability_gd: gradient descent (momentum 0) at 2 or more, 2/eta;
 * both measure the sharpness during their runs, on a smooth workload, judged at the threshold. */
static void check_eos(const char *name, const char *algorithm, int min_sizes, double factor)
{
    tb_study_plan *p = load(name);
    if (!p) return;
    CHECK(p->base.data.full_batch > 0 && p->base.diag.sharpness_every > 0);
    CHECK(p->base.length.schedule == TB_SCHEDULE_CONSTANT);
    CHECK(strstr(p->workload, "relu") == NULL && strncmp(p->workload, "fmnist_cnn", 10) != 0);
    CHECK(p->fig_stability && p->stability_judged && p->stability_tail > 0);
    CHECK(tb_study_plan_cells(p) >= min_sizes);
    for (int cell = 0; cell < tb_study_plan_cells(p); cell++) {
        tb_run_config c;
        tb_error err = {0};
        double t = 0;
        CHECK(strcmp(cell_algorithm(p, cell, &c), algorithm) == 0);
        CHECK(tb_hparams_get(&c.model.hparams, "weight_decay", 1) == 0);
        const double lr = tb_hparams_get(&c.model.hparams, "learning_rate", 0);
        if (CHECK_OK(tb_study_cell_threshold(p, cell, &t, &err), &err))
            CHECK(fabs(t * lr - factor) < 1e-9 * factor);
    }
    tb_study_plan_free(p);
}

static void test_eos(void)
{
    check_eos("edge_of_stability", "adam", 3, 38);
    check_eos("edge_of_stability_gd", "sgd", 2, 2);
}

int main(void)
{
    test_large_batch();
    test_ekfac();
    test_inclusion();
    test_eos();
    return tb_test_finish("test_study_claims");
}
