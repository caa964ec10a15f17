/* test_study_detection.c: the detection figure (docs/STUDIES.md): the rates on synthetic
 * values with a known answer (identical distributions: the P(A>B) test's false positives
 * under its size, the single run and the mean half the time; well separated: no false
 * negatives), the figure over a plan's two cells, and bad figures refused at load. */
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "study/study_impl.h"
#include "trainbench/rng.h"
#include "trainbench/study_plan.h"

static void normals(double *x, int n, double mean, uint64_t seed)
{
    tb_rng rng = tb_rng_make(seed, 1);
    for (int i = 0; i < n; i++) x[i] = mean + tb_rng_normal(&rng);
}

static void test_rates(void)
{
    double a[300], b[300];
    normals(a, 300, 0, 1);
    normals(b, 300, 5, 2);
    tb_error err = {0};
    tb_study_detection_rates r;
    /* no true difference: A and B drawn from the same runs */
    if (!CHECK_OK(tb_study_detection_rates_of(a, 300, a, 300, 29, 5, 0.75, 2000, false, 3, &r,
                                              &err), &err))
        return;
    CHECK(r.resamples == 2000);
    CHECK(r.pab <= 0.05);                    /* one side of a two-sided test of size 0.05 */
    CHECK(r.single > 0.45 && r.single < 0.55); /* a coin: A's run lower half the time */
    CHECK(r.mean > 0.45 && r.mean < 0.55);
    /* well separated (lower better): every method finds it */
    if (!CHECK_OK(tb_study_detection_rates_of(a, 300, b, 300, 29, 5, 0.75, 500, false, 3, &r,
                                              &err), &err))
        return;
    CHECK(r.pab == 1.0 && r.mean == 1.0 && r.single > 0.99);
    /* higher better: the same pair is the other way round, nothing declares A better */
    if (!CHECK_OK(tb_study_detection_rates_of(a, 300, b, 300, 29, 5, 0.75, 500, true, 3, &r,
                                              &err), &err))
        return;
    CHECK(r.pab == 0.0 && r.mean == 0.0 && r.single < 0.01);
    /* too few runs a side for the test to be significant: 5 pairs never are at 0.05 */
    if (!CHECK_OK(tb_study_detection_rates_of(a, 300, b, 300, 5, 5, 0.75, 200, false, 3, &r,
                                              &err), &err))
        return;
    CHECK(r.pab == 0.0 && r.mean == 1.0);
    CHECK_FAILS(tb_study_detection_rates_of(a, 300, b, 300, 5, 6, 0.75, 200, false, 3, &r, &err),
                TB_ERR_INVALID, &err, "1 <= k <= n");
}

static const char plan_text[] =
    "{\"name\": \"d\", \"claim\": \"c\", \"source\": \"s\",\n"
    " \"settings\": {\"workload\": \"fmnist_mlp\", \"steps\": 10, \"eval_examples\": 100},\n"
    " \"axes\": {\"algorithm\": [%s]},\n"
    " \"seeds\": 8, \"metric\": \"validation_loss\",\n"
    " \"figures\": [%s]}";

static const char two[] = "\"adam\", \"sgd\"";

static void test_figure(void)
{
    char text[2048];
    snprintf(text, sizeof text, plan_text, two, "{\"type\": \"detection\", \"n\": 20, \"k\": 3, "
             "\"resamples\": 300, \"max_false_positive\": 0.1, \"max_false_negative\": 0.3}");
    tb_study_plan *p = NULL;
    tb_error err = {0};
    if (!CHECK_OK(tb_study_plan_parse(text, "d.json", &p, &err), &err)) return;
    CHECK(p->fig_detection && p->detection_n == 20 && p->detection_k == 3 &&
          p->detection_resamples == 300 && p->detection_gamma == 0.75);
    double v[16];
    normals(v, 8, 10, 4);    /* adam: the worse cell */
    normals(v + 8, 8, 0, 5); /* sgd: the better one */
    v[3] = INFINITY;         /* a diverged run, left out */
    tb_study_values vals = {.cells = 2, .seeds = 8, .v = v};
    tb_study_figures f;
    if (!CHECK_OK(tb_study_figures_compute(p, &vals, &f, &err), &err)) return;
    const tb_study_detection_fig *d = &f.detection;
    CHECK(d->better == 1 && d->worse == 0 && d->n_better == 8 && d->n_worse == 7);
    CHECK(d->median_better < 2 && d->median_worse > 8);
    CHECK(d->difference.resamples == 300 && d->difference.pab == 1.0);
    CHECK(d->control_better.pab <= 0.1 && d->control_worse.pab <= 0.1);
    CHECK(d->control_better.single > 0.3 && d->control_better.single < 0.7);
    CHECK(d->outcome == TB_STUDY_REPRODUCED);
    CHECK(tb_study_outcome_of(NULL, &f, NULL, NULL) == TB_STUDY_REPRODUCED);
    tb_study_figures_free(&f);
    v[8] = 20; /* sgd: three runs far worse, the pair no longer always found */
    v[9] = 20;
    v[10] = 20;
    p->detection_max_fn = 0.0;
    if (!CHECK_OK(tb_study_figures_compute(p, &vals, &f, &err), &err)) return;
    CHECK(f.detection.difference.pab < 1.0 && f.detection.outcome == TB_STUDY_NOT_REPRODUCED);
    tb_study_figures_free(&f);
    tb_study_plan_free(p);
}

static void test_refused(void)
{
    static const struct {
        const char *fig, *needle;
    } cases[] = {
        {"{\"type\": \"detection\", \"k\": 0}", "d.json:5:41: figures[0].k: 0 is not a whole number"},
        {"{\"type\": \"detection\", \"gamma\": 1}", "figures[0].gamma: 1 is not in (0.5, 1)"},
        {"{\"type\": \"detection\", \"gamma\": 0.5}", "figures[0].gamma: 0.5 is not in (0.5, 1)"},
        {"{\"type\": \"detection\", \"n\": 4, \"k\": 5}", "figures[0].k: 5 is more than n = 4"},
        {"{\"type\": \"detection\", \"alpha\": 0.1}", "figures[0]"},
        {"{\"type\": \"detection\", \"max_false_positive\": 0.1}", "give both"},
        {"{\"type\": \"detection\", \"max_false_positive\": 0.1, \"max_false_negative\": 2}",
         "figures[0].max_false_negative: 2 is not in [0, 1]"},
    };
    char text[2048];
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        snprintf(text, sizeof text, plan_text, two, cases[i].fig);
        tb_study_plan *p = NULL;
        tb_error err = {0};
        if (!CHECK_FAILS(tb_study_plan_parse(text, "d.json", &p, &err), TB_ERR_INVALID, &err,
                         cases[i].needle))
            printf("  case %zu\n", i);
        tb_study_plan_free(p);
    }
    /* three cells: not the pair the figure compares */
    snprintf(text, sizeof text, plan_text, "\"adam\", \"sgd\", \"adamw\"", "\"detection\"");
    tb_study_plan *p = NULL;
    tb_error err = {0};
    CHECK_FAILS(tb_study_plan_parse(text, "d.json", &p, &err), TB_ERR_INVALID, &err,
                "figures[0]: the detection figure compares two cells");
    tb_study_plan_free(p);
}

int main(void)
{
    test_rates();
    test_figure();
    test_refused();
    return tb_test_finish("test_study_detection");
}
