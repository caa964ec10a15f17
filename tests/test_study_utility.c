/* test_study_utility.c: the "space" axis and the search-space utility figure of a study file
 * (docs/STUDIES.md), without training: each bad file refused at load with its line and column,
 * then the figure computed on made-up searches of a known function, where the scores must rank
 * the spaces as the searches do (and, with the searches' values turned over, must not). */
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "study/study_impl.h"
#include "trainbench/study_plan.h"

/* Three candidate spaces of Adam's learning rate (log, except where a case changes it). */
static const char spaces[] =
    "{\"name\": \"u\", \"claim\": \"c\", \"source\": \"s\",\n"
    " \"settings\": {\"workload\": \"fmnist_mlp\", \"algorithm\": \"adam\", \"steps\": 10},\n"
    " \"axes\": {\"space\": [\"narrow\", \"wide\", \"shifted\"]},\n"
    " \"overrides\": [\n"
    "  {\"when\": {\"space\": \"narrow\"}, \"tune\": {\"space\": {\"learning_rate\": {\"min\": 5e-3, "
    "\"max\": 2e-2, \"scaling\": \"log\"}}, \"trials\": 6, \"search\": \"per_run\"}},\n"
    "  {\"when\": {\"space\": \"wide\"}, \"tune\": {\"space\": {\"learning_rate\": {\"min\": 1e-4, "
    "\"max\": 1, \"scaling\": \"log\"}}, \"trials\": 6, \"search\": \"per_run\"}},\n"
    "  {\"when\": {\"space\": \"shifted\"}, \"tune\": {\"space\": {\"learning_rate\": {\"min\": 0.1, "
    "\"max\": 1, \"scaling\": \"log\"}}, \"trials\": 6, \"search\": \"per_run\"}}],\n"
    " \"seeds\": 5, \"metric\": \"validation_error\",\n"
    " \"figures\": [{\"type\": \"utility\", \"budgets\": [1, 2, 6], \"min_tau\": 0.7}]}";

static const char *variant(const char *from, const char *to)
{
    static char buf[4096];
    const char *at = strstr(spaces, from);
    if (!at) return NULL;
    snprintf(buf, sizeof buf, "%.*s%s%s", (int)(at - spaces), spaces, to, at + strlen(from));
    return buf;
}

static void test_refused(void)
{
    static const struct {
        const char *from, *to, *needle;
    } cases[] = {
        {"\"narrow\", \"wide\"", "\"Narrow\", \"wide\"",
         "u.json:3:21: axes.space[0]: must be a name of lower-case letters"},
        {"\"budgets\": [1, 2, 6]", "\"budgets\": [1, 2, 7]",
         "u.json:9:14: figures[0]: cell space=narrow: budget 7 is more than its 6 trials"},
        {"\"budgets\": [1, 2, 6]", "\"budgets\": [2, 2]",
         "u.json:9:49: figures[0].budgets[1]: 2 is not more than the budget before it"},
        {"\"budgets\": [1, 2, 6]", "\"budgets\": []", "figures[0].budgets: missing"},
        {"\"budgets\": [1, 2, 6]", "\"budgets\": [0]", "figures[0].budgets[0]: 0 is not a whole"},
        {"\"min_tau\": 0.7", "\"min_tau\": 2", "u.json:9:67: figures[0].min_tau: 2 is not in [-1, 1]"},
        {"\"min_tau\": 0.7", "\"tau\": 0.7", "figures[0].tau: unknown key"},
        {"{\"type\": \"utility\", \"budgets\": [1, 2, 6], \"min_tau\": 0.7}", "\"utility\"",
         "figures[0]: a utility figure names its budgets"},
        {"\"narrow\", \"wide\", \"shifted\"]", "\"narrow\", \"wide\"]",
         "overrides[2].when.space: 'shifted' is not one of the axis's values"},
        {"\"metric\": \"validation_error\"", "\"metric\": \"time_to_target\"",
         "figures[0]: the utility figure cannot use time_to_target"},
        {"\"trials\": 6, \"search\": \"per_run\"}},\n  {\"when\": {\"space\": \"wide\"}",
         "\"trials\": 6}},\n  {\"when\": {\"space\": \"wide\"}",
         "figures[0]: cell space=narrow: the utility figure compares repeated searches"},
        {"{\"learning_rate\": {\"min\": 0.1, \"max\": 1, \"scaling\": \"log\"}}",
         "[{\"learning_rate\": 0.1}, {\"learning_rate\": 0.2}, {\"learning_rate\": 0.3}, "
         "{\"learning_rate\": 0.4}, {\"learning_rate\": 0.5}, {\"learning_rate\": 0.6}]",
         "figures[0]: cell space=shifted: the utility figure draws points from spaces of ranges"},
        {"{\"learning_rate\": {\"min\": 0.1, \"max\": 1, \"scaling\": \"log\"}}",
         "{\"beta1\": {\"min\": 0.8, \"max\": 0.99}}",
         "space=shifted's space differs from the first cell's"},
        {"\"algorithm\": \"adam\", \"steps\": 10}", "\"steps\": 10}",
         "figures[0]: the utility figure ranks the spaces alone: axis 'algorithm' has 2 values"},
        {"\"overrides\": [\n  {\"when\": {\"space\": \"narrow\"}",
         "\"overrides\": [\n  {\"when\": {\"space\": \"narrow\"}, \"hparams\": {\"beta1\": 0.9}}, "
         "{\"when\": {\"space\": \"narrow\"}",
         NULL}, /* still valid: an override with hparams alone, the tune from the next */
        /* the bad tune blocks, each at its line and column */
        {"\"trials\": 6, \"search\": \"per_run\"}},\n  {\"when\": {\"space\": \"wide\"}",
         "\"trials\": 0, \"search\": \"per_run\"}},\n  {\"when\": {\"space\": \"wide\"}",
         "u.json:5:126: overrides[0].tune.trials: 0 is not a whole number"},
        {"\"max\": 2e-2, \"scaling\": \"log\"}}, \"trials\": 6,",
         "\"max\": 2e-2, \"scaling\": \"log\"}}, \"trials\": 6, \"sampler\": \"tpe\",",
         "u.json:5:140: overrides[0].tune.sampler: unknown sampler 'tpe'"},
        {"{\"learning_rate\": {\"min\": 5e-3, \"max\": 2e-2, \"scaling\": \"log\"}}", "{}",
         "u.json:5:51: overrides[0].tune.space: inline: no hyperparameters"},
        {"{\"learning_rate\": {\"min\": 5e-3, \"max\": 2e-2, \"scaling\": \"log\"}}",
         "{\"learning_rate\": {\"min\": 5e-3, \"max\": 2e-4, \"scaling\": \"log\"}}",
         "u.json:5:51: overrides[0].tune.space: inline: 'learning_rate': min 0.005 is above max"},
        {"{\"learning_rate\": {\"min\": 5e-3, \"max\": 2e-2, \"scaling\": \"log\"}}", "7",
         "u.json:5:51: overrides[0].tune.space: must be a search space"},
        {"\"max\": 2e-2, \"scaling\": \"log\"}}, \"trials\": 6,",
         "\"max\": 2e-2, \"scaling\": \"log\"}}, \"trials\": 6, \"budget\": {\"seconds\": 1e5},",
         "overrides[0].tune.budget: cell space=narrow: 100000 s is past fmnist_mlp's time budget"},
    };
    tb_error err = {0};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const char *text = variant(cases[i].from, cases[i].to);
        if (!CHECK(text != NULL)) {
            printf("  utility case %zu: '%s' not in the file\n", i, cases[i].from);
            continue;
        }
        char fixed[4096];
        if (i == 13) { /* an algorithm axis beside the space axis */
            const char *at = strstr(text, "\"axes\": {");
            snprintf(fixed, sizeof fixed, "%.*s\"axes\": {\"algorithm\": [\"adam\", \"nadam\"], %s",
                     (int)(at - text), text, at + strlen("\"axes\": {"));
            text = fixed;
        }
        tb_study_plan *p = NULL;
        if (!cases[i].needle) {
            CHECK_OK(tb_study_plan_parse(text, "u.json", &p, &err), &err);
            tb_study_plan_free(p);
            continue;
        }
        if (!CHECK_FAILS(tb_study_plan_parse(text, "u.json", &p, &err), TB_ERR_INVALID, &err,
                         cases[i].needle))
            printf("  utility case %zu\n", i);
        CHECK(p == NULL);
    }
    /* a space axis whose cells do not all tune (and no figure) */
    static const char shifted[] =
        "  {\"when\": {\"space\": \"shifted\"}, \"tune\": {\"space\": {\"learning_rate\": "
        "{\"min\": 0.1, \"max\": 1, \"scaling\": \"log\"}}, \"trials\": 6, \"search\": "
        "\"per_run\"}}],\n";
    const char *at = strstr(spaces, shifted), *figs = strstr(spaces, ",\n \"figures\"");
    if (CHECK(at != NULL && figs != NULL)) {
        char text[4096];
        snprintf(text, sizeof text, "%.*s  {\"when\": {\"space\": \"shifted\"}, \"hparams\": "
                 "{\"beta1\": 0.9}}],\n%.*s}", (int)(at - spaces), spaces,
                 (int)(figs - at - strlen(shifted)), at + strlen(shifted));
        tb_study_plan *p = NULL;
        CHECK_FAILS(tb_study_plan_parse(text, "u.json", &p, &err), TB_ERR_INVALID, &err,
                    "axes.space: cell space=shifted does not tune: a space axis needs every cell");
    }
}

/* A space file beside the study that is not JSON, or names nothing: refused at the line and
 * column of the tune's "space", naming the file and the cause, before any run. */
static void test_space_files(void)
{
    char dir[] = "/tmp/tb_study_utility_XXXXXX";
    if (!CHECK(mkdtemp(dir) != NULL)) return;
    static const struct {
        const char *content, *needle;
    } cases[] = {
        {"{\"learning_rate\": {\"min\": 1e-4,", "bad.json: malformed JSON at line 1, column 32"},
        {"[]", "bad.json: the list of points is empty"},
        {"{\"learning_rate\": {\"min\": 1e-4, \"max\": 0.1, \"scaling\": \"cubic\"}}",
         "bad.json: 'learning_rate': unknown scaling 'cubic'"},
    };
    char space[256], study[256];
    snprintf(space, sizeof space, "%s/bad.json", dir);
    snprintf(study, sizeof study, "%s/u.json", dir);
    const char *text = variant("{\"learning_rate\": {\"min\": 5e-3, \"max\": 2e-2, \"scaling\": "
                               "\"log\"}}", "\"bad.json\"");
    tb_error err = {0};
    for (size_t i = 0; text && i < sizeof cases / sizeof *cases; i++) {
        FILE *f = fopen(space, "w");
        if (!CHECK(f != NULL)) break;
        fputs(cases[i].content, f);
        fclose(f);
        tb_study_plan *p = NULL;
        if (!CHECK_FAILS(tb_study_plan_parse(text, study, &p, &err), TB_ERR_INVALID, &err,
                         "u.json:5:51: overrides[0].tune.space: ") ||
            !CHECK(strstr(err.message, cases[i].needle) != NULL))
            printf("  space file case %zu: %s\n", i, err.message);
    }
    unlink(space);
    rmdir(dir);
}

/* f(lr) = (log10 lr + 2)^2, the best at 1e-2, inside the narrow space only. */
static double bowl(double lr) { return (log10(lr) + 2) * (log10(lr) + 2); }

/* Searches of 6 Halton trials per run and cell (each run its own seed) with values sign * f. */
static void fill(const tb_study_plan *p, tb_study_values *v, double sign)
{
    for (int c = 0; c < v->cells; c++) {
        const tb_study_tune *t = tb_study_plan_cell_tune(p, c);
        tb_search_space *space = NULL;
        tb_error err = {0};
        if (!CHECK_OK(tb_search_space_parse(p->space_json[t->space], "s", &space, &err), &err))
            return;
        for (int r = 0; r < v->seeds; r++) {
            const size_t row = ((size_t)c * (size_t)v->seeds + (size_t)r) * 6;
            CHECK_OK(tb_study_search_points(space, 6, 100 + (uint64_t)r, v->trial_points + row,
                                            &err), &err);
            for (int k = 0; k < 6; k++)
                v->trial_v[row + (size_t)k] =
                    (r == 0 ? 1 : sign) *
                    bowl(tb_hparams_get(&v->trial_points[row + (size_t)k], "learning_rate", 1));
        }
        tb_search_space_destroy(space);
    }
}

static void test_figure(void)
{
    tb_study_plan *p = NULL;
    tb_error err = {0};
    if (!CHECK_OK(tb_study_plan_parse(spaces, "u.json", &p, &err), &err)) return;
    CHECK(p->fig_utility && p->n_utility_budgets == 3 && p->utility_budgets[2] == 6);
    CHECK_NEAR(p->utility_min_tau, 0.7, 0);
    static double v[3 * 5], trial_v[3 * 5 * 6];
    static tb_hparams points[3 * 5 * 6];
    tb_study_values vals = {.cells = 3, .seeds = 5, .v = v, .max_trials = 6, .trial_v = trial_v,
                            .trial_points = points};
    fill(p, &vals, 1);
    tb_study_figures f;
    if (!CHECK_OK(tb_study_figures_compute(p, &vals, &f, &err), &err)) return;
    const tb_study_utility_fig *u = &f.utility;
    CHECK(u->n_budgets == 3 && u->fit_points == 18 && u->fit_imputed == 0 && u->searches == 4);
    /* at b = 1 the expected value of a uniform draw: near 0 (narrow), about 1.3 (wide: the mean
     * of (t + 2)^2 for t uniform on [-4, 0]), about 2.3 (shifted: t on [-1, 0]) */
    CHECK(u->score[0 * 3] < 0.2 && fabs(u->score[1 * 3] - 4.0 / 3) < 0.4 &&
          fabs(u->score[2 * 3] - 7.0 / 3) < 0.4);
    /* at b = 1 the 4 searches' single points put wide (2.11) behind shifted (1.94): tau 1/3;
     * from b = 2 on the orders agree */
    CHECK_NEAR(u->tau[0], 1.0 / 3, 1e-12);
    CHECK_NEAR(u->rho[0], 0.5, 1e-12);
    CHECK_NEAR(u->mean_tau, (1.0 / 3 + 2) / 3, 1e-12);
    for (int b = 0; b < 3; b++) {
        CHECK(b == 0 || (fabs(u->tau[b] - 1) < 1e-12 && fabs(u->rho[b] - 1) < 1e-12));
        for (int c = 0; c < 3; c++) /* the best cannot get worse with more trials */
            CHECK(b == 0 || u->reached[c * 3 + b] <= u->reached[c * 3 + b - 1]);
    }
    CHECK(u->outcome == TB_STUDY_REPRODUCED);
    tb_study_figure none = {0};
    CHECK(tb_study_outcome_of(&none, &f, NULL, NULL) == TB_STUDY_REPRODUCED);
    tb_study_figures_free(&f);

    fill(p, &vals, -1); /* the searches after the pilot find the opposite order */
    if (!CHECK_OK(tb_study_figures_compute(p, &vals, &f, &err), &err)) return;
    CHECK_NEAR(f.utility.tau[2], -1, 1e-12);
    CHECK(f.utility.mean_tau < 0 && f.utility.outcome == TB_STUDY_NOT_REPRODUCED);
    tb_study_figures_free(&f);

    fill(p, &vals, 1); /* every later search of two spaces diverged: tied last, tau still there */
    for (int c = 1; c < 3; c++)
        for (int k = 6; k < 5 * 6; k++) trial_v[c * 5 * 6 + k] = INFINITY;
    if (!CHECK_OK(tb_study_figures_compute(p, &vals, &f, &err), &err)) return;
    CHECK(isinf(f.utility.reached[1 * 3]) && isfinite(f.utility.tau[0]));
    tb_study_figures_free(&f);
    for (int k = 6; k < 5 * 6; k++) trial_v[k] = INFINITY; /* and the third: all tied */
    if (!CHECK_OK(tb_study_figures_compute(p, &vals, &f, &err), &err)) return;
    CHECK(isnan(f.utility.tau[0]) && f.utility.outcome == TB_STUDY_INCONCLUSIVE);
    tb_study_figures_free(&f);
    tb_study_plan_free(p);
}

int main(void)
{
    test_refused();
    test_space_files();
    test_figure();
    return tb_test_finish("test_study_utility");
}
