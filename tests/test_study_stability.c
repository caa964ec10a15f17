/* test_study_stability.c: the edge-of-stability figure (docs/STUDIES.md): the median ratio
 * over the tail of each run on hand-made measurements, the thresholds of a plan's cells (38/eta
 * for Adam, 2/eta for gradient descent), the verdicts, the store's sharpness table (kept,
 * replaced, created in an older store), bad figures refused at load, and a tiny real study
 * whose measurements are recorded and read back. */
#include "testutil.h"

#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "study/study_impl.h"
#include "trainbench/study_plan.h"

/* A curve whose measurement i has ratio r[i] at threshold t (step 10 (i + 1)). */
static tb_study_sharpness_curve curve_of(const double *r, int n, double t)
{
    tb_study_sharpness_curve c = {false, n, calloc((size_t)n, sizeof(tb_study_sharpness_point))};
    for (int i = 0; i < n; i++)
        c.points[i] = (tb_study_sharpness_point){10 * (i + 1), r[i] * t / 2, r[i] * t, t};
    return c;
}

static void test_row(void)
{
    const double r1[] = {0.2, 0.5, 1.1, 0.9}, r2[] = {0.3, 1.0, 1.2}, r3[] = {5, 6};
    tb_study_sharpness_curve c[4] = {curve_of(r1, 4, 38000), curve_of(r2, 3, 38000),
                                     curve_of(r3, 2, 38000), {0}};
    c[2].diverged = true; /* left out, counted */
    tb_error err = {0};
    tb_study_stability_row row;
    /* tail 0.5: the last 2 of 4 and ceil(1.5) = 2 of 3: {0.9, 1.1, 1.0, 1.2} */
    if (CHECK_OK(tb_study_stability_row_of(c, 4, 38000, 0.5, 0.1, &row, &err), &err)) {
        CHECK(row.runs == 2 && row.lost == 1 && row.n == 4);
        CHECK_NEAR(row.median, 1.05, 1e-12);
        CHECK_NEAR(row.lo, 0.9, 1e-12);
        CHECK_NEAR(row.hi, 1.2, 1e-12);
        CHECK(row.threshold == 38000 && row.outcome == TB_STUDY_REPRODUCED);
    }
    CHECK_OK(tb_study_stability_row_of(c, 4, 38000, 0.5, 0.04, &row, &err), &err);
    CHECK(row.outcome == TB_STUDY_NOT_REPRODUCED);
    CHECK_OK(tb_study_stability_row_of(c, 4, 38000, 0.5, NAN, &row, &err), &err);
    CHECK(row.outcome == TB_STUDY_NOT_JUDGED);
    /* tail 1: every measurement, 7 of them, median 0.9; a tiny tail keeps the last one */
    CHECK_OK(tb_study_stability_row_of(c, 2, 38000, 1, 0.2, &row, &err), &err);
    CHECK(row.n == 7 && fabs(row.median - 0.9) < 1e-12 && fabs(row.lo - 0.2) < 1e-12);
    CHECK_OK(tb_study_stability_row_of(c, 2, 38000, 0.01, 0.2, &row, &err), &err);
    CHECK(row.n == 2 && fabs(row.median - 1.05) < 1e-12);
    /* a measurement without a finite threshold has no ratio */
    c[0].points[3].threshold = INFINITY;
    CHECK(isnan(tb_study_sharpness_ratio(&c[0].points[3])));
    CHECK_OK(tb_study_stability_row_of(c, 1, 38000, 0.5, 0.2, &row, &err), &err);
    CHECK(row.n == 1 && fabs(row.median - 1.1) < 1e-12);
    /* nothing measured: inconclusive */
    CHECK_OK(tb_study_stability_row_of(c + 2, 2, 20, 0.5, 0.2, &row, &err), &err);
    CHECK(row.n == 0 && isnan(row.median) && row.outcome == TB_STUDY_INCONCLUSIVE);
    CHECK_FAILS(tb_study_stability_row_of(c, 2, 20, 0, 0.2, &row, &err), TB_ERR_INVALID, &err,
                "tail 0 is not in (0, 1]");
    CHECK_FAILS(tb_study_stability_row_of(c, 2, 20, 1.5, 0.2, &row, &err), TB_ERR_INVALID, &err,
                "tail 1.5");
    for (int i = 0; i < 3; i++) free(c[i].points);
}

static void test_thresholds(void)
{
    tb_hparams hp = {0};
    tb_error err = {0};
    double t = 0;
    tb_hparams_set(&hp, "learning_rate", 1e-3, NULL);
    tb_hparams_set(&hp, "beta1", 0.9, NULL);
    CHECK_OK(tb_optimizer_stability_threshold_of("adam", &hp, &t, &err), &err);
    CHECK_NEAR(t, 38000, 1e-8);
    hp = (tb_hparams){0};
    tb_hparams_set(&hp, "learning_rate", 0.1, NULL);
    tb_hparams_set(&hp, "momentum", 0, NULL);
    tb_hparams_set(&hp, "nesterov", 0, NULL);
    CHECK_OK(tb_optimizer_stability_threshold_of("sgd", &hp, &t, &err), &err);
    CHECK_NEAR(t, 20, 1e-12);
    CHECK_FAILS(tb_optimizer_stability_threshold_of("lamb", NULL, &t, &err), TB_ERR_UNSUPPORTED,
                &err, "lamb has no diagonal preconditioner");
    CHECK_FAILS(tb_optimizer_stability_threshold_of("adamm", NULL, &t, &err), TB_ERR_INVALID,
                &err, "unknown algorithm 'adamm'");
}

static const char plan_text[] =
    "{\"name\": \"eos\", \"claim\": \"c\", \"source\": \"s\",\n"
    " \"settings\": {\"workload\": \"fmnist_mlp_tanh\", \"steps\": 6, \"full_batch\": 32,\n"
    "              \"schedule\": \"constant\", \"eval_examples\": 100%s},\n"
    " \"hparams\": {\"*\": {\"weight_decay\": 0}, \"adam\": {\"beta1\": 0.9},\n"
    "             \"sgd\": {\"momentum\": 0, \"nesterov\": 0}},\n"
    " \"axes\": {\"algorithm\": [%s], \"learning_rate\": [0.001, 0.01]},\n"
    " \"seeds\": 2, \"metric\": \"validation_loss\",\n"
    " \"figures\": [%s]}";

static const char every[] = ", \"sharpness_every\": 2, \"sharpness_iters\": 3";

static void test_figure(void)
{
    char text[2048];
    snprintf(text, sizeof text, plan_text, every, "\"adam\", \"sgd\"",
             "{\"type\": \"stability\", \"tail\": 0.5, \"expect\": \"at_threshold\", "
             "\"tolerance\": 0.25}");
    tb_study_plan *p = NULL;
    tb_error err = {0};
    if (!CHECK_OK(tb_study_plan_parse(text, "eos.json", &p, &err), &err)) return;
    CHECK(p->fig_stability && p->stability_judged && p->stability_tail == 0.5 &&
          p->stability_tolerance == 0.25 && p->base.diag.sharpness_every == 2 &&
          p->base.diag.sharpness_iters == 3);
    /* cells: adam 1e-3, adam 1e-2, sgd 1e-3, sgd 1e-2; two runs each */
    const double thr[4] = {38000, 3800, 2000, 200};
    const double ratios[4][3] = {{0.5, 1.0, 1.1}, {0.3, 0.4, 0.5}, {0.8, 0.95, 1.0}, {1, 1, 1}};
    tb_study_sharpness_curve curves[8];
    for (int c = 0; c < 4; c++)
        for (int r = 0; r < 2; r++) curves[c * 2 + r] = curve_of(ratios[c], 3, thr[c]);
    curves[7].diverged = true;
    curves[6].diverged = true; /* sgd 1e-2: both runs diverged */
    double v[8] = {1, 1, 1, 1, 1, 1, INFINITY, INFINITY};
    tb_study_values vals = {.cells = 4, .seeds = 2, .v = v, .sharpness = curves};
    tb_study_figures f;
    if (CHECK_OK(tb_study_figures_compute(p, &vals, &f, &err), &err)) {
        CHECK(f.n_stability == 4);
        for (int c = 0; c < 4; c++) CHECK_NEAR(f.stability[c].threshold, thr[c], 1e-9 * thr[c]);
        CHECK(f.stability[0].outcome == TB_STUDY_REPRODUCED);    /* {1.0, 1.1} x 2: 1.05 */
        CHECK_NEAR(f.stability[0].median, 1.05, 1e-12);
        CHECK(f.stability[1].outcome == TB_STUDY_NOT_REPRODUCED); /* 0.45 */
        CHECK(f.stability[2].outcome == TB_STUDY_REPRODUCED);    /* 0.975 */
        CHECK(f.stability[3].outcome == TB_STUDY_INCONCLUSIVE && f.stability[3].lost == 2);
        int judged = 0, yes = 0;
        CHECK(tb_study_outcome_of(NULL, &f, &judged, &yes) == TB_STUDY_NOT_REPRODUCED &&
              judged == 4 && yes == 2);
        tb_study_figures_free(&f);
    }
    /* no measurements in the values: refused, not read */
    vals.sharpness = NULL;
    CHECK_FAILS(tb_study_figures_compute(p, &vals, &f, &err), TB_ERR_INVALID, &err,
                "no sharpness measurements");
    for (int i = 0; i < 8; i++) free(curves[i].points);
    tb_study_plan_free(p);
}

static void test_refused(void)
{
    static const struct {
        const char *settings, *algos, *fig, *needle;
    } cases[] = {
        {"", "\"adam\"", "\"stability\"",
         "eos.json:8:14: figures[0]: the stability figure needs settings.sharpness_every"},
        {every, "\"adam\"", "{\"type\": \"stability\", \"tail\": 0}",
         "eos.json:8:44: figures[0].tail: 0 is not in (0, 1]"},
        {every, "\"adam\"", "{\"type\": \"stability\", \"tail\": 1.5}",
         "figures[0].tail: 1.5 is not in (0, 1]"},
        {every, "\"adam\"", "{\"type\": \"stability\", \"tolerance\": -1}",
         "figures[0].tolerance: -1 is not in (0, 1]"},
        {every, "\"adam\"", "{\"type\": \"stability\", \"expect\": \"close\"}",
         "figures[0].expect: 'close' is not at_threshold or none"},
        {every, "\"adam\"", "{\"type\": \"stability\", \"band\": 1}", "figures[0]"},
        {every, "\"adam\", \"ademamix\"", "\"stability\"",
         "figures[0]: cell algorithm=ademamix learning_rate=0.001: ademamix"},
        {", \"sharpness_iters\": 3", "\"adam\"", "\"rank\"",
         "settings.sharpness_iters: needs settings.sharpness_every"},
        {", \"sharpness_every\": 0", "\"adam\"", "\"rank\"", "settings.sharpness_every: 0"},
        {", \"sharpness_every\": 2, \"sharpness_iters\": 257", "\"adam\"", "\"rank\"",
         "settings.sharpness_iters: 257"},
    };
    char text[2048];
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        snprintf(text, sizeof text, plan_text, cases[i].settings, cases[i].algos, cases[i].fig);
        tb_study_plan *p = NULL;
        tb_error err = {0};
        if (!CHECK_FAILS(tb_study_plan_parse(text, "eos.json", &p, &err), TB_ERR_INVALID, &err,
                         cases[i].needle))
            printf("  case %zu\n", i);
        tb_study_plan_free(p);
    }
}

/* The store keeps a run's measurements by step, replaces them, and an older store (without
 * the table) gains it. */
static void test_store(const char *dir)
{
    char db[300];
    snprintf(db, sizeof db, "%s/s.db", dir);
    tb_store *s = NULL;
    tb_error err = {0};
    if (!CHECK_OK(tb_store_open(db, &s, &err), &err)) return;
    tb_study_run_record rec;
    memset(&rec, 0, sizeof rec);
    snprintf(rec.study, sizeof rec.study, "eos");
    snprintf(rec.key, sizeof rec.key, "k1");
    CHECK_OK(tb_store_put_study_run(s, &rec, "test", &err), &err); /* before the table */
    tb_store_close(s);
    sqlite3 *h = NULL;
    CHECK(sqlite3_open(db, &h) == SQLITE_OK);
    CHECK(sqlite3_exec(h, "SELECT count(*) FROM study_sharpness", NULL, NULL, NULL) !=
          SQLITE_OK); /* an older store: no such table yet */
    sqlite3_close(h);
    CHECK_OK(tb_store_open(db, &s, &err), &err);
    tb_study_sharpness_curve back;
    CHECK_OK(tb_store_get_study_sharpness(s, "k1", &back, &err), &err);
    CHECK(back.n == 0 && back.points == NULL);
    const double r[] = {0.25, 0.5, NAN};
    tb_study_sharpness_curve c = curve_of(r, 3, 20);
    CHECK_OK(tb_store_put_study_sharpness(s, "k1", &c, &err), &err);
    CHECK_OK(tb_store_get_study_sharpness(s, "k1", &back, &err), &err);
    CHECK(back.n == 3 && back.points[1].step == 20 && back.points[1].pre_max == 10 &&
          back.points[1].lambda_max == 5 && back.points[1].threshold == 20 &&
          isnan(back.points[2].pre_max));
    free(back.points);
    c.n = 1; /* replaced, not added to */
    CHECK_OK(tb_store_put_study_sharpness(s, "k1", &c, &err), &err);
    CHECK_OK(tb_store_get_study_sharpness(s, "k1", &back, &err), &err);
    CHECK(back.n == 1 && back.points[0].step == 10);
    free(back.points);
    CHECK_OK(tb_store_get_study_sharpness(s, "k2", &back, &err), &err);
    CHECK(back.n == 0);
    free(c.points);
    tb_store_close(s);
    tb_test_remove_store(db);
}

/* A tiny real study: full-batch Adam and gradient descent on 32 examples, 6 steps, measured
 * every 2: every run has its 3 measurements at steps 2, 4, 6, each with its threshold, and a
 * rerun reads them from the store. */
static void test_tiny_run(const char *dir)
{
    static const char tiny[] =
        "{\"name\": \"eos\", \"claim\": \"c\", \"source\": \"s\",\n"
        " \"settings\": {\"workload\": \"fmnist_mlp_tanh\", \"steps\": 6, \"full_batch\": 32,\n"
        "              \"schedule\": \"constant\", \"eval_examples\": 100,\n"
        "              \"sharpness_every\": 2, \"sharpness_iters\": 3},\n"
        " \"hparams\": {\"*\": {\"weight_decay\": 0}, \"adam\": {\"beta1\": 0.9},\n"
        "             \"sgd\": {\"momentum\": 0, \"nesterov\": 0}},\n"
        " \"axes\": {\"algorithm\": [\"adam\", \"sgd\"], \"learning_rate\": [0.01]},\n"
        " \"seeds\": 2, \"figures\": [\"stability\"]}";
    tb_study_plan *p = NULL;
    tb_error err = {0};
    if (!CHECK_OK(tb_study_plan_parse(tiny, "tiny.json", &p, &err), &err)) return;
    char db[300];
    snprintf(db, sizeof db, "%s/tiny.db", dir);
    tb_store *s = NULL;
    CHECK_OK(tb_store_open(db, &s, &err), &err);
    tb_study_exec_options o = {.store = s};
    o.backend.threads = 1;
    tb_study_values v;
    const double thr[2] = {3800, 200};
    if (CHECK_OK(tb_study_execute(p, &o, &v, &err), &err)) {
        CHECK(v.trained == 4 && v.sharpness != NULL);
        for (int i = 0; v.sharpness && i < 4; i++) {
            const tb_study_sharpness_curve *c = &v.sharpness[i];
            CHECK(c->n == 3 && !c->diverged);
            for (int k = 0; k < c->n; k++) {
                CHECK(c->points[k].step == 2 * (k + 1));
                CHECK(fabs(c->points[k].threshold - thr[i / 2]) <= 1e-9 * thr[i / 2]);
                CHECK(c->points[k].lambda_max > 0 && isfinite(c->points[k].pre_max));
            }
            if (i >= 2) CHECK(c->points[0].pre_max == c->points[0].lambda_max); /* P = 1 */
        }
        tb_study_figures f;
        if (CHECK_OK(tb_study_figures_compute(p, &v, &f, &err), &err)) {
            CHECK(f.stability[0].n == 2 * 2 && f.stability[0].runs == 2); /* ceil(0.5 x 3) */
            CHECK(isfinite(f.stability[0].median) && f.stability[0].median > 0);
            tb_study_figures_free(&f);
        }
        const double first = v.sharpness[3].points[2].lambda_max;
        tb_study_values_free(&v);
        if (CHECK_OK(tb_study_execute(p, &o, &v, &err), &err)) {
            CHECK(v.trained == 0 && v.reused == 4 && v.sharpness[3].n == 3 &&
                  v.sharpness[3].points[2].lambda_max == first);
            tb_study_values_free(&v);
        }
    }
    tb_store_close(s);
    tb_study_plan_free(p);
    tb_test_remove_store(db);
}

int main(void)
{
    char dir[] = "/tmp/tb_study_stability_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    test_row();
    test_thresholds();
    test_figure();
    test_refused();
    test_store(dir);
    test_tiny_run(dir);
    rmdir(dir);
    return tb_test_finish("test_study_stability");
}
