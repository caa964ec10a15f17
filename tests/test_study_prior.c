/* test_study_prior.c: the "sampler" axis, the gp_prior sampler (a GP pre-trained on the
 * study's searches of its other workloads) and the regret figure (docs/STUDIES.md), without
 * training: bad files refused at load with their line and column, the prior fitted only to the
 * other workloads' searches, a search with a prior, and the regret figure on made-up searches
 * whose regrets and trials to the target are worked by hand. */
#include "testutil.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "study/study_impl.h"
#include "trainbench/study_plan.h"

static const char plan_text[] =
    "{\"name\": \"p\", \"claim\": \"c\", \"source\": \"s\",\n"
    " \"settings\": {\"algorithm\": \"adam\", \"steps\": 10},\n"
    " \"tune\": {\"space\": {\"learning_rate\": {\"min\": 1e-4, \"max\": 0.3, \"scaling\": \"log\"}},\n"
    "          \"trials\": 4, \"search\": \"per_run\"},\n"
    " \"axes\": {\"workload\": [\"fmnist_mlp\", \"fmnist_mlp_narrow\"],\n"
    "          \"sampler\": [\"halton\", \"gp_prior\"]},\n"
    " \"seeds\": 3, \"metric\": \"validation_error\",\n"
    " \"figures\": [{\"type\": \"regret\", \"min_ratio\": 2}]}";

static const char *variant(const char *from, const char *to)
{
    static char buf[4096];
    const char *at = strstr(plan_text, from);
    if (!at) return NULL;
    snprintf(buf, sizeof buf, "%.*s%s%s", (int)(at - plan_text), plan_text, to,
             at + strlen(from));
    return buf;
}

static void test_refused(void)
{
    static const struct {
        const char *from, *to, *needle;
    } cases[] = {
        {"\"gp_prior\"]", "\"tpe\"]",
         "p.json:6:33: axes.sampler[1]: must be \"halton\", \"gp\" or \"gp_prior\""},
        {"\"search\": \"per_run\"}", "\"search\": \"per_run\", \"sampler\": \"gp_priors\"}",
         "p.json:4:56: tune.sampler: unknown sampler 'gp_priors' (expected halton, gp or gp_prior)"},
        {"[\"fmnist_mlp\", \"fmnist_mlp_narrow\"]", "[\"fmnist_mlp\"]",
         "tune.space: cell workload=fmnist_mlp sampler=gp_prior: the gp_prior sampler pre-trains "
         "on other workloads' searches of the same space, and no cell"},
        {"\"halton\", \"gp_prior\"", "\"gp\", \"gp_prior\"",
         "p.json:8:14: figures[0]: the regret figure needs an axis \"sampler\" with \"halton\""},
        {"\"min_ratio\": 2", "\"min_ratio\": 0.5",
         "p.json:8:46: figures[0].min_ratio: 0.5 is not in [1, 1000]"},
        {"\"min_ratio\": 2", "\"ratio\": 2", "figures[0].ratio: unknown key"},
        {"\"search\": \"per_run\"", "\"search\": \"once\"",
         "figures[0]: cell workload=fmnist_mlp sampler=halton: the regret figure compares "
         "repeated searches"},
        {"\"metric\": \"validation_error\"", "\"metric\": \"time_to_target\"",
         "the regret figure cannot use time_to_target"},
        {"{\"learning_rate\": {\"min\": 1e-4, \"max\": 0.3, \"scaling\": \"log\"}}",
         "[{\"learning_rate\": 0.1}, {\"learning_rate\": 0.2}, {\"learning_rate\": 0.3}, "
         "{\"learning_rate\": 0.4}]",
         "tune.space: cell workload=fmnist_mlp sampler=gp_prior: the gp_prior sampler needs a "
         "space of ranges"},
        {" \"seeds\": 3,", " \"overrides\": [{\"when\": {\"sampler\": \"halton\"}, \"tune\": "
         "{\"space\": {\"learning_rate\": {\"min\": 1e-4, \"max\": 0.3, \"scaling\": \"log\"}}, "
         "\"trials\": 5, \"search\": \"per_run\"}}],\n \"seeds\": 3,",
         "figures[0]: cell workload=fmnist_mlp sampler=gp_prior: 4 trials, another cell 5"},
    };
    tb_error err = {0};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const char *text = variant(cases[i].from, cases[i].to);
        if (!CHECK(text != NULL)) {
            printf("  prior case %zu: '%s' not in the file\n", i, cases[i].from);
            continue;
        }
        tb_study_plan *p = NULL;
        if (!CHECK_FAILS(tb_study_plan_parse(text, "p.json", &p, &err), TB_ERR_INVALID, &err,
                         cases[i].needle))
            printf("  prior case %zu\n", i);
        CHECK(p == NULL);
    }
}

/* Searches of 4 trials per cell and run: learning rates from the run's Halton points, values
 * f(lr) = (log10 lr + 2.5)^2 + shift (shift per workload). */
static void fill(const tb_study_plan *p, tb_study_values *v, const double *shift)
{
    tb_search_space *space = NULL;
    tb_error err = {0};
    if (!CHECK_OK(tb_search_space_parse(p->space_json[p->tune.space], "s", &space, &err), &err))
        return;
    for (int c = 0; c < v->cells; c++)
        for (int r = 0; r < v->seeds; r++) {
            const size_t row = ((size_t)c * (size_t)v->seeds + (size_t)r) * 4;
            CHECK_OK(tb_study_search_points(space, 4, 7 + (uint64_t)r, v->trial_points + row,
                                            &err), &err);
            for (int k = 0; k < 4; k++) {
                double t = log10(tb_hparams_get(&v->trial_points[row + (size_t)k],
                                                "learning_rate", 1));
                v->trial_v[row + (size_t)k] = (t + 2.5) * (t + 2.5) + shift[c / 2];
            }
        }
    tb_search_space_destroy(space);
}

static tb_status no_trial(void *user, const tb_run_config *cfg, int trial, double *select,
                          double *report, tb_error *err)
{
    (void)user, (void)cfg, (void)trial, (void)err;
    *select = *report = 0.5;
    return TB_OK;
}

static void test_prior(void)
{
    tb_study_plan *p = NULL;
    tb_error err = {0};
    if (!CHECK_OK(tb_study_plan_parse(plan_text, "p.json", &p, &err), &err)) return;
    CHECK(tb_study_plan_cell_sampler(p, 0) == TB_STUDY_SAMPLER_HALTON &&
          tb_study_plan_cell_sampler(p, 1) == TB_STUDY_SAMPLER_GP_PRIOR);
    /* cell 1 (fmnist_mlp, gp_prior) learns from cell 2 (narrow, halton) only */
    CHECK(!tb_study_prior_source(p, 1, 0) && tb_study_prior_source(p, 1, 2) &&
          !tb_study_prior_source(p, 1, 3));
    static double v[4 * 3], trial_v[4 * 3 * 4];
    static tb_hparams points[4 * 3 * 4];
    for (size_t i = 0; i < sizeof trial_v / sizeof *trial_v; i++) trial_v[i] = NAN;
    tb_study_values vals = {.cells = 4, .seeds = 3, .v = v, .max_trials = 4, .trial_v = trial_v,
                            .trial_points = points};
    tb_gp_params prior;
    /* nothing searched on the other workload yet: nothing to pre-train on */
    CHECK_FAILS(tb_study_prior_fit(p, &vals, 1, &prior, &err), TB_ERR_MISSING, &err,
                "0 finished trials on the other workloads");
    const double shift[2] = {0, 10};
    fill(p, &vals, shift);
    for (int k = 0; k < 3 * 4; k++) trial_v[0 * 12 + k] = NAN; /* its own workload's: unused */
    if (CHECK_OK(tb_study_prior_fit(p, &vals, 1, &prior, &err), &err)) {
        CHECK(prior.dims == 1);
        /* the narrow workload's values lie in [10, 10 + 6.4]: the mean lies near them */
        CHECK(prior.mean > 8 && prior.mean < 20 && prior.amplitude > 0);
    }
    /* a search with the prior: its first point Halton's, then BO's */
    tb_search_space *space = NULL;
    CHECK_OK(tb_search_space_parse(p->space_json[p->tune.space], "s", &space, &err), &err);
    tb_run_config base;
    CHECK_OK(tb_study_plan_trial_config(p, 1, 1, NULL, &base, &err), &err);
    tb_study_search s = {space, 4, TB_STUDY_SAMPLER_GP_PRIOR, 42, no_trial, NULL, NULL};
    tb_study_search_result r;
    CHECK_FAILS(tb_study_search_run(&s, &base, &r, &err), TB_ERR_INVALID, &err,
                "the gp_prior sampler and a prior go together");
    s.prior = &prior;
    tb_hparams halton[4];
    CHECK_OK(tb_study_search_points(space, 4, 42, halton, &err), &err);
    if (CHECK_OK(tb_study_search_run(&s, &base, &r, &err), &err)) {
        CHECK(r.points[0].values[0] == halton[0].values[0]);
        CHECK(r.points[1].values[0] != halton[1].values[0]);
        tb_study_search_result_free(&r);
    }
    tb_search_space_destroy(space);
    tb_study_plan_free(p);
}

static void test_regret(void)
{
    tb_study_plan *p = NULL;
    tb_error err = {0};
    if (!CHECK_OK(tb_study_plan_parse(plan_text, "p.json", &p, &err), &err)) return;
    static double v[4 * 3], trial_v[4 * 3 * 4];
    static tb_hparams points[4 * 3 * 4];
    tb_study_values vals = {.cells = 4, .seeds = 3, .v = v, .max_trials = 4, .trial_v = trial_v,
                            .trial_points = points};
    /* workload 1: halton's searches 5 4 3 2 (all three runs), gp_prior's 3 2 2 1: best known 1,
     * halton's regret 4 3 2 1, target 1, reached by halton after 4 and by the prior after 2
     * (regret 2 1 1 0): ratio 2. Workload 2: the prior never gets below halton's last. */
    static const double w1h[4] = {5, 4, 3, 2}, w1p[4] = {3, 2, 2, 1};
    static const double w2h[4] = {4, 3, 3, 1}, w2p[4] = {4, 4, 2, 2};
    const double *rows[4] = {w1h, w1p, w2h, w2p};
    for (int c = 0; c < 4; c++)
        for (int r = 0; r < 3; r++)
            for (int k = 0; k < 4; k++)
                trial_v[(c * 3 + r) * 4 + k] = rows[c][k] + (r == 2 ? 9 : 0);
    tb_study_figures f;
    if (!CHECK_OK(tb_study_figures_compute(p, &vals, &f, &err), &err)) return;
    const tb_study_regret_fig *g = &f.regret;
    CHECK(g->cells == 4 && g->trials == 4);
    CHECK(g->best_known[0] == 1 && g->best_known[1] == 1 && g->best_known[3] == 1);
    for (int b = 0; b < 4; b++) /* the median over runs 5 4 3 2, 5 4 3 2 and 14 13 12 11 */
        CHECK_NEAR(g->regret[0 * 4 + b], 4 - b, 1e-12);
    CHECK_NEAR(g->regret[1 * 4 + 1], 1, 1e-12);
    CHECK(g->target[1] == 1 && g->to_target[0] == 4 && g->to_target[1] == 2);
    CHECK_NEAR(g->ratio[1], 2, 1e-12);
    CHECK(g->outcome[0] == TB_STUDY_NOT_JUDGED && g->outcome[1] == TB_STUDY_REPRODUCED);
    CHECK(g->target[3] == 0 && g->to_target[3] == 0 && isnan(g->ratio[3]));
    CHECK(g->outcome[3] == TB_STUDY_NOT_REPRODUCED);
    tb_study_figure none = {0};
    int judged = 0, yes = 0;
    CHECK(tb_study_outcome_of(&none, &f, &judged, &yes) == TB_STUDY_NOT_REPRODUCED &&
          judged == 2 && yes == 1);
    tb_study_figures_free(&f);
    for (int k = 0; k < 3 * 4; k++) trial_v[2 * 12 + k] = INFINITY; /* halton all diverged */
    if (!CHECK_OK(tb_study_figures_compute(p, &vals, &f, &err), &err)) return;
    CHECK(f.regret.outcome[3] == TB_STUDY_INCONCLUSIVE);
    tb_study_figures_free(&f);
    tb_study_plan_free(p);
}

int main(void)
{
    test_refused();
    test_prior();
    test_regret();
    return tb_test_finish("test_study_prior");
}
