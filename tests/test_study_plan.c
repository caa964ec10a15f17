/* test_study_plan.c: study files (docs/STUDIES.md) without training: a valid file gives its
 * grid, each malformed file a message naming the file and the key, every shipped study in
 * studies/ parses and validates; the figure's checks on made-up values. */
#include "testutil.h"

#include <dirent.h>
#include <sqlite3.h>
#include <unistd.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "study/study_impl.h"
#include "trainbench/study_plan.h"

static const char valid[] =
    "{\"name\": \"t\", \"claim\": \"c\", \"source\": \"s\",\n"
    " \"settings\": {\"workload\": \"fmnist_mlp\", \"steps\": 10, \"eval_examples\": 100},\n"
    " \"hparams\": {\"*\": {\"learning_rate\": 0.01}, \"adam\": {\"learning_rate\": 0.002}},\n"
    " \"overrides\": [{\"when\": {\"algorithm\": \"sgd\", \"batch_size\": 256},\n"
    "                 \"hparams\": {\"learning_rate\": 0.05}}],\n"
    " \"axes\": {\"algorithm\": [\"adam\", \"sgd\"], \"batch_size\": [64, 128, 256]},\n"
    " \"seeds\": 4, \"seed\": 7, \"metric\": \"validation_error\", \"table\": \"mean\",\n"
    " \"comparisons\": [{\"a\": {\"algorithm\": \"adam\"}, \"b\": {\"algorithm\": \"sgd\"},\n"
    "                  \"expect\": \"a_wins\", \"min_wins\": 0.75}]}";

static void test_valid(void)
{
    tb_study_plan *p = NULL;
    tb_error err = {0};
    if (!CHECK_OK(tb_study_plan_parse(valid, "v.json", &p, &err), &err)) return;
    CHECK(strcmp(p->name, "t") == 0 && p->seeds == 4 && p->seed == 7);
    CHECK(p->n_axes == 2 && p->axes[0].kind == TB_AXIS_ALGORITHM && p->axes[1].n == 3);
    CHECK(tb_study_plan_cells(p) == 6);
    CHECK(p->metric == TB_METRIC_VALIDATION_ERROR && p->statistic == TB_STAT_MEAN);
    CHECK(p->n_comparisons == 1 && p->comparisons[0].expect == TB_EXPECT_A_WINS);
    char label[128];
    tb_study_plan_cell_label(p, 5, label, sizeof label);
    CHECK(strcmp(label, "algorithm=sgd batch_size=256") == 0);
    tb_run_config c;
    /* cell 0: adam at 64 takes adam's rate over "*"'s; cell 5: the override */
    CHECK_OK(tb_study_plan_run_config(p, 0, 0, &c, &err), &err);
    CHECK(strcmp(c.model.algorithm, "adam") == 0 && c.data.batch_size == 64 && c.length.max_steps == 10);
    CHECK(tb_hparams_get(&c.model.hparams, "learning_rate", 0) == 0.002);
    uint64_t seed_run1 = c.seeds[TB_STREAM_INIT];
    CHECK_OK(tb_study_plan_run_config(p, 5, 0, &c, &err), &err);
    CHECK(tb_hparams_get(&c.model.hparams, "learning_rate", 0) == 0.05);
    CHECK(c.seeds[TB_STREAM_INIT] == seed_run1); /* cells are paired by run index */
    CHECK_OK(tb_study_plan_run_config(p, 4, 0, &c, &err), &err);
    CHECK(tb_hparams_get(&c.model.hparams, "learning_rate", 0) == 0.01);
    CHECK_OK(tb_study_plan_run_config(p, 0, 1, &c, &err), &err);
    CHECK(c.seeds[TB_STREAM_INIT] != seed_run1);
    CHECK_OK(tb_study_plan_scale(p, 0.25, &err), &err);
    CHECK(p->seeds == 4 && p->base.length.max_steps == 3); /* seeds kept; 2.5 steps round up */
    CHECK_FAILS(tb_study_plan_set_seeds(p, 1, &err), TB_ERR_INVALID, &err, "seeds: 1 is not");
    CHECK(p->seeds == 4);
    CHECK_OK(tb_study_plan_set_seeds(p, 9, &err), &err);
    CHECK(p->seeds == 9 && p->base.length.max_steps == 3);
    tb_study_plan_free(p);
}

/* Replaces the first `from` of valid by `to` (from must occur). */
static const char *variant(const char *from, const char *to)
{
    static char buf[4096];
    const char *at = strstr(valid, from);
    if (!at) return NULL;
    snprintf(buf, sizeof buf, "%.*s%s%s", (int)(at - valid), valid, to, at + strlen(from));
    return buf;
}

/* settings.seconds caps every run's timed training, tuning trials included unless their
 * budget says otherwise, and --scale scales it with the steps. */
static void test_seconds(void)
{
    const char *text = variant("\"steps\": 10", "\"steps\": 10, \"seconds\": 20");
    tb_study_plan *p = NULL;
    tb_error err = {0};
    if (!CHECK(text != NULL) || !CHECK_OK(tb_study_plan_parse(text, "s.json", &p, &err), &err))
        return;
    tb_run_config c;
    CHECK_OK(tb_study_plan_run_config(p, 3, 1, &c, &err), &err);
    CHECK(c.length.max_time_s == 20 && c.length.max_steps == 10);
    CHECK_OK(tb_study_plan_trial_config(p, 3, 0, NULL, &c, &err), &err);
    CHECK(c.length.max_time_s == 20);
    CHECK_OK(tb_study_plan_scale(p, 0.5, &err), &err);
    CHECK_OK(tb_study_plan_run_config(p, 0, 0, &c, &err), &err);
    CHECK(c.length.max_time_s == 10 && c.length.max_steps == 5);
    tb_study_plan_free(p);
    /* without it, no cap, scaled or not */
    if (!CHECK_OK(tb_study_plan_parse(valid, "v.json", &p, &err), &err)) return;
    CHECK_OK(tb_study_plan_scale(p, 2, &err), &err);
    CHECK_OK(tb_study_plan_run_config(p, 0, 0, &c, &err), &err);
    CHECK(c.length.max_time_s == 0);
    tb_study_plan_free(p);
}

static void test_malformed(void)
{
    static const struct {
        const char *from, *to, *needle;
    } cases[] = {
        {"\"name\": \"t\",", "\"name\": \"t\"", "m.json: not valid JSON (near line 1)"},
        {"\"claim\": \"c\", ", "", "m.json: claim: missing"},
        {"\"seed\": 7,", "\"seed\": 7, \"colour\": 1,", "colour: unknown key"},
        {"\"steps\": 10", "\"steps\": 10, \"epoch\": 1", "settings.epoch: unknown key"},
        {"\"steps\": 10", "\"steps\": 0", "settings.steps: 0 is not a whole number"},
        {"\"steps\": 10", "\"steps\": 10, \"full_batch\": 64",
         "cell: algorithm=adam batch_size=128: full batch (64 examples, every step all of them) "
         "cannot be combined with another batch size"},
        {"\"steps\": 10", "\"steps\": 10, \"epochs\": 1", "settings.epochs: give steps or"},
        {"\"steps\": 10", "\"steps\": 10, \"seconds\": 0",
         "m.json:2:65: settings.seconds: 0 is not in (0, 1e6]"},
        {"\"steps\": 10", "\"steps\": 10, \"seconds\": \"ten\"",
         "settings.seconds: must be a number"},
        {"\"workload\": \"fmnist_mlp\"", "\"workload\": \"mnist\"",
         "settings.workload: unknown workload 'mnist'"},
        {"[\"adam\", \"sgd\"]", "[\"adam\", \"sgdd\"]",
         "m.json:6:33: axes.algorithm[1]: unknown algorithm 'sgdd'"}, /* line and column */
        {"[\"adam\", \"sgd\"]", "[]", "axes.algorithm: is empty"},
        {"[64, 128, 256]", "[64, 64]", "axes.batch_size[1]: '64' is listed twice"},
        {"[64, 128, 256]", "[64, -1]", "axes.batch_size[1]: -1 is not a whole number"},
        {"\"seeds\": 4", "\"seeds\": 1", "seeds: 1 is not a whole number in [2, 1000]"},
        {"\"validation_error\"", "\"accuracy\"", "metric: unknown metric 'accuracy'"},
        {"\"table\": \"mean\"", "\"table\": \"max\"", "table: 'max' is not median or mean"},
        {"\"adam\": {\"learning_rate\"", "\"adamm\": {\"learning_rate\"",
         "hparams.adamm: unknown algorithm"},
        {"\"learning_rate\": 0.002", "\"learning_rate\": \"fast\"",
         "hparams.adam.learning_rate: must be a number"},
        {"\"learning_rate\": 0.002", "\"learning_rate\": -1",
         "cell: algorithm=adam batch_size=64: "},
        {"\"batch_size\": 256}", "\"batch_size\": 512}",
         "overrides[0].when.batch_size: '512' is not one of the axis's values"},
        {"{\"when\"", "{\"whn\"", "overrides[0].whn: unknown key"},
        {"\"b\": {\"algorithm\": \"sgd\"}", "\"b\": {\"algorithm\": \"adam\"}",
         "comparisons[0]: sides a and b are the same cells"},
        {"\"b\": {\"algorithm\": \"sgd\"}", "\"b\": {\"lr\": 1}",
         "comparisons[0].b.lr: not an axis of the study"},
        {"\"expect\": \"a_wins\", ", "\"expect\": \"a_winz\", ",
         "comparisons[0].expect: unknown expectation 'a_winz'"},
        {", \"min_wins\": 0.75", "", "comparisons[0].min_wins: missing"},
        {"\"min_wins\": 0.75", "\"min_wins\": 1.5", "comparisons[0].min_wins: 1.5 is not"},
        {"\"a_wins\", \"min_wins\": 0.75", "\"same_within\"", "comparisons[0].tolerance: missing"},
        {"\"a_wins\", \"min_wins\": 0.75", "\"same_within\", \"tolerance\": 1",
         "comparisons[0].tolerance: 1 is not a relative tolerance"},
        {"\"min_wins\": 0.75", "\"min_wins\": 0.75, \"tolerance\": 0.1",
         "comparisons[0].tolerance: only with"},
        {"\"axes\": {\"algorithm\"", "\"axes\": {\"damping\": [0.1], \"algorithm\"",
         "cell: damping=0.1 algorithm=adam batch_size=64: "},
        {"\"metric\": \"validation_error\"", "\"metric\": \"test_error\", \"metric\": \"x\"",
         "metric: given twice"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const char *text = variant(cases[i].from, cases[i].to);
        if (!CHECK(text != NULL)) {
            printf("  case %zu: '%s' not in the valid file\n", i, cases[i].from);
            continue;
        }
        tb_study_plan *p = NULL;
        tb_error err = {0};
        if (!CHECK_FAILS(tb_study_plan_parse(text, "m.json", &p, &err), TB_ERR_INVALID, &err,
                         cases[i].needle))
            printf("  case %zu\n", i);
        CHECK(p == NULL);
        if (cases[i].needle[0] != 'm') CHECK(strncmp(err.message, "m.json:", 7) == 0);
    }
    /* an error-rate metric on a workload that does not classify, refused before training */
    const char *ae = variant("\"workload\": \"fmnist_mlp\"", "\"workload\": \"fmnist_autoencoder\"");
    tb_study_plan *p = NULL;
    tb_error err = {0};
    CHECK_FAILS(tb_study_plan_parse(ae, "m.json", &p, &err), TB_ERR_INVALID, &err,
                "has no error rate");
    CHECK_FAILS(tb_study_plan_load("/nonexistent/s.json", &p, &err), TB_ERR_IO, &err,
                "cannot open study /nonexistent/s.json");
}

/* A tuned study: the study's tune, an override's for sgd at 256; each malformed block refused
 * with the file, line and column before any run. */
static const char tuned[] =
    "{\"name\": \"t\", \"claim\": \"c\", \"source\": \"s\",\n"
    " \"settings\": {\"workload\": \"fmnist_mlp\", \"steps\": 10, \"eval_examples\": 100},\n"
    " \"axes\": {\"algorithm\": [\"adam\", \"sgd\"], \"batch_size\": [64, 256]},\n"
    " \"seeds\": 2,\n"
    " \"tune\": {\"space\": {\"learning_rate\": {\"min\": 1e-4, \"max\": 1e-1, \"scaling\": \"log\"}},\n"
    "          \"trials\": 4, \"sampler\": \"halton\", \"budget\": {\"steps\": 5}},\n"
    " \"overrides\": [{\"when\": {\"algorithm\": \"sgd\", \"batch_size\": 256},\n"
    "   \"tune\": {\"space\": [{\"learning_rate\": 0.1}, {\"learning_rate\": 0.2}], \"trials\": 2,\n"
    "            \"search\": \"per_run\"}}]}";

static const char *tuned_variant(const char *from, const char *to)
{
    static char buf[4096];
    const char *at = strstr(tuned, from);
    if (!at) return NULL;
    snprintf(buf, sizeof buf, "%.*s%s%s", (int)(at - tuned), tuned, to, at + strlen(from));
    return buf;
}

static void test_tune(void)
{
    tb_study_plan *p = NULL;
    tb_error err = {0};
    if (!CHECK_OK(tb_study_plan_parse(tuned, "t.json", &p, &err), &err)) return;
    const tb_study_tune *t0 = tb_study_plan_cell_tune(p, 0), *t3 = tb_study_plan_cell_tune(p, 3);
    CHECK(t0 == &p->tune && t0->trials == 4 && t0->budget_steps == 5 && !t0->per_run);
    CHECK(t3 == &p->overrides[0].tune && t3->per_run && t3->trials == 2);
    CHECK(tb_study_plan_cell_tune(p, 2) == &p->tune); /* sgd at 64 */
    tb_hparams point = {0};
    tb_hparams_set(&point, "learning_rate", 0.03, NULL);
    tb_run_config c;
    CHECK_OK(tb_study_plan_trial_config(p, 0, 0, &point, &c, &err), &err);
    CHECK(c.length.max_steps == 5 && tb_hparams_get(&c.model.hparams, "learning_rate", 0) == 0.03);
    CHECK(c.seeds[TB_STREAM_HPARAM] == p->seed); /* index 0: the search made once */
    tb_run_config r;
    CHECK_OK(tb_study_plan_run_config(p, 0, 0, &r, &err), &err);
    CHECK(r.length.max_steps == 10 && r.seeds[TB_STREAM_INIT] != c.seeds[TB_STREAM_INIT]);
    CHECK_OK(tb_study_plan_scale(p, 2, &err), &err);
    CHECK(p->tune.budget_steps == 10);
    tb_study_plan_free(p);

    static const struct {
        const char *from, *to, *needle;
    } cases[] = {
        {"\"halton\"", "\"sobol\"", "m.json:6:35: tune.sampler: unknown sampler 'sobol'"},
        {"\"trials\": 4", "\"trials\": 0", "m.json:6:21: tune.trials: 0 is not a whole number"},
        {"{\"learning_rate\": {\"min\": 1e-4, \"max\": 1e-1, \"scaling\": \"log\"}}", "{}",
         "m.json:5:20: tune.space: "},
        {"\"max\": 1e-1", "\"max\": 1e-5", "tune.space: "},
        {"\"space\": {\"learning_rate\"", "\"space\": 3, \"x\": {\"learning_rate\"",
         "tune.x: unknown key"},
        {"\"min\": 1e-4, \"max\": 1e-1", "\"min\": 1e-4, \"max\": 1e13",
         "tune.space: cell algorithm=adam batch_size=64: adam: learning_rate"},
        {"{\"learning_rate\": {\"min\"", "{\"learning_rat\": {\"min\"",
         "tune.space: cell algorithm=adam batch_size=64: "},
        {"{\"steps\": 5}", "{\"seconds\": 100000}", "tune.budget: cell algorithm=adam "
         "batch_size=64: 100000 s is past fmnist_mlp's time budget"},
        {"{\"steps\": 5}", "{\"steps\": 5, \"epochs\": 1}", "tune.budget: must be one of"},
        {"{\"steps\": 5}", "{\"steps\": 0}", "tune.budget.steps: 0 is not a whole number"},
        {"\"trials\": 2,", "\"trials\": 3,", "overrides[0].tune.trials: 3 trials, but the space "
         "lists 2 points"},
        {"\"search\": \"per_run\"", "\"search\": \"each\"",
         "m.json:9:23: overrides[0].tune.search: 'each' is not once or per_run"},
        {"\"trials\": 2,", "\"trials\": 2, \"sampler\": \"gp\",",
         "overrides[0].tune.space: cell algorithm=sgd batch_size=256: the gp sampler needs a "
         "space of ranges"},
        {"\"seeds\": 2,", "\"seeds\": 2, \"metric\": \"time_to_target\",",
         "m.json:6:55: tune.budget: cell algorithm=adam batch_size=64: a time_to_target run"},
        {"[{\"learning_rate\": 0.1}, {\"learning_rate\": 0.2}]", "\"no_such_space.json\"",
         "cannot open search space /nonexistent/no_such_space.json"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const char *text = tuned_variant(cases[i].from, cases[i].to);
        if (!CHECK(text != NULL)) {
            printf("  tune case %zu: '%s' not in the tuned file\n", i, cases[i].from);
            continue;
        }
        if (i == 13) { /* and an epochs budget: time_to_target runs end by time */
            static char b2[4096];
            const char *at = strstr(text, "{\"steps\": 5}");
            snprintf(b2, sizeof b2, "%.*s{\"epochs\": 1}%s", (int)(at - text), text, at + 12);
            text = b2;
        }
        tb_study_plan *q = NULL;
        const char *file = i == 14 ? "/nonexistent/m.json" : "m.json";
        if (!CHECK_FAILS(tb_study_plan_parse(text, file, &q, &err), TB_ERR_INVALID, &err,
                         cases[i].needle))
            printf("  tune case %zu\n", i);
        CHECK(q == NULL);
    }
}

/* A search's points come from its seed: the same seed the same points, another seed other
 * points (not the same set reordered), all inside the space. */
static void test_search_points(void)
{
    tb_search_space *space = NULL;
    tb_error err = {0};
    if (!CHECK_OK(tb_search_space_parse("{\"learning_rate\": {\"min\": 1e-4, \"max\": 1e-1, "
                                        "\"scaling\": \"log\"}, \"momentum\": {\"min\": 0.8, "
                                        "\"max\": 0.99}}", NULL, &space, &err), &err))
        return;
    tb_hparams a[5], b[5], c[5];
    CHECK_OK(tb_study_search_points(space, 5, 11, a, &err), &err);
    CHECK_OK(tb_study_search_points(space, 5, 11, b, &err), &err);
    CHECK_OK(tb_study_search_points(space, 5, 12, c, &err), &err);
    int same = 0, shared = 0;
    for (int i = 0; i < 5; i++) {
        same += memcmp(a[i].values, b[i].values, sizeof a[i].values[0] * 2) == 0;
        double lr = tb_hparams_get(&a[i], "learning_rate", 0);
        double m = tb_hparams_get(&a[i], "momentum", 0);
        CHECK(lr >= 1e-4 && lr <= 1e-1 && m >= 0.8 && m <= 0.99);
        for (int j = 0; j < 5; j++)
            shared += tb_hparams_get(&a[i], "learning_rate", 0) ==
                      tb_hparams_get(&c[j], "learning_rate", 0);
    }
    CHECK(same == 5 && shared == 0);
    tb_search_space_destroy(space);
}

/* The timed metrics: their values from a run's result, their direction in the figure, and
 * the examples they need kept in the store (also in a store written before they existed). */
static void test_timed_metrics(void)
{
    tb_train_result r = {0};
    r.steps = 10;
    r.examples = 640;
    r.train_time_s = 2.0;
    CHECK_NEAR(tb_study_metric_value(TB_METRIC_TIME_PER_STEP, &r), 0.2, 1e-12);
    CHECK_NEAR(tb_study_metric_value(TB_METRIC_EXAMPLES_PER_SECOND, &r), 320, 1e-9);
    CHECK(tb_study_metric_higher_is_better(TB_METRIC_EXAMPLES_PER_SECOND) &&
          !tb_study_metric_higher_is_better(TB_METRIC_TIME_PER_STEP));
    CHECK(tb_study_selection_metric(TB_METRIC_TIME_PER_STEP) == TB_METRIC_VALIDATION);
    r.steps = 0;
    CHECK(isnan(tb_study_metric_value(TB_METRIC_TIME_PER_STEP, &r)));

    tb_study_plan *p = NULL;
    tb_error err = {0};
    char buf[4096]; /* the valid file, metric examples_per_second, expecting adam better */
    snprintf(buf, sizeof buf, "%s",
             variant("\"expect\": \"a_wins\", \"min_wins\": 0.75", "\"expect\": \"a_better\""));
    char *m = strstr(buf, "validation_error");
    if (!CHECK(m != NULL)) return;
    char rest[4096];
    snprintf(rest, sizeof rest, "%s", m + strlen("validation_error"));
    snprintf(m, sizeof buf - (size_t)(m - buf), "examples_per_second%s", rest);
    if (!CHECK_OK(tb_study_plan_parse(buf, "x.json", &p, &err), &err)) return;
    CHECK(p->metric == TB_METRIC_EXAMPLES_PER_SECOND);
    p->seeds = 6;
    double v[6 * 6];
    tb_study_values vals = {.cells = 6, .seeds = 6, .v = v};
    for (int cell = 0; cell < 6; cell++) /* adam (cells 0-2) faster: higher is better */
        for (int i = 0; i < 6; i++) v[cell * 6 + i] = (cell < 3 ? 900 : 500) + i;
    v[3 * 6] = -INFINITY; /* a diverged run: the worst */
    tb_study_figure f;
    if (CHECK_OK(tb_study_figure_compute(p, &vals, &f, &err), &err)) {
        CHECK(f.pairs[0].pab.verdict == TB_VERDICT_A_BETTER && f.pairs[0].pab.wins == 6);
        CHECK(f.cells[3].lost == 1 && f.outcome == TB_STUDY_REPRODUCED);
        tb_study_figure_free(&f);
    }
    tb_study_plan_free(p);

    char path[] = "/tmp/tb_study_plan_XXXXXX";
    if (!CHECK(mkdtemp(path) != NULL)) return;
    char db[128];
    snprintf(db, sizeof db, "%s/r.db", path);
    tb_store *store = NULL;
    if (!CHECK_OK(tb_store_open(db, &store, &err), &err)) return;
    tb_store_close(store);
    sqlite3 *h = NULL; /* a study_runs table as written before the examples column */
    CHECK(sqlite3_open(db, &h) == SQLITE_OK &&
          sqlite3_exec(h, "CREATE TABLE study_runs(key TEXT PRIMARY KEY, study TEXT NOT NULL,"
                          " created TEXT NOT NULL DEFAULT (datetime('now')), code_version TEXT "
                          "NOT NULL, diverged INTEGER NOT NULL, reason TEXT NOT NULL, steps "
                          "INTEGER NOT NULL, train_time_s REAL, validation_loss REAL, "
                          "validation_error REAL, validation_metric REAL, test_loss REAL, "
                          "test_error REAL, test_metric REAL, reached INTEGER NOT NULL, "
                          "time_to_target_s REAL); INSERT INTO study_runs VALUES('old', 's', "
                          "'now', 'v', 0, '', 5, 1.0, 0.5, 0.1, 0.1, 0.5, 0.1, 0.1, 0, NULL);",
                          NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(h);
    if (!CHECK_OK(tb_store_open(db, &store, &err), &err)) return;
    static tb_study_run_record rec, back;
    bool found = false;
    CHECK_OK(tb_store_get_study_run(store, "old", &back, &found, &err), &err);
    CHECK(found && back.result.steps == 5 && back.result.examples == 0);
    CHECK(isnan(tb_study_metric_value(TB_METRIC_EXAMPLES_PER_SECOND, &back.result)));
    snprintf(rec.key, sizeof rec.key, "new");
    snprintf(rec.study, sizeof rec.study, "s");
    rec.result = r;
    rec.result.steps = 10;
    CHECK_OK(tb_store_put_study_run(store, &rec, "v", &err), &err);
    CHECK_OK(tb_store_get_study_run(store, "new", &back, &found, &err), &err);
    CHECK(found && back.result.examples == 640);
    CHECK_NEAR(tb_study_metric_value(TB_METRIC_EXAMPLES_PER_SECOND, &back.result), 320, 1e-9);
    tb_store_close(store);
    tb_test_remove_store(db);
    rmdir(path);
}

/* The figures beyond the table: refused where they do not fit; computed on made-up values. */
static void test_figures(void)
{
    static const struct {
        const char *to, *needle;
    } cases[] = {
        {"[\"histogram\"]", "m.json:10:14: figures[0]: unknown figure 'histogram'"},
        {"[\"curve\"]", "figures[0]: a curve shows the best tuning trial so far: no cell tunes"},
        {"[\"rank\", \"rank\"]", "figures[1]: 'rank' is listed twice"},
        {"[\"variance\"]", "figures[0]: a variance figure names its sources"},
        {"[{\"type\": \"variance\"}]", "figures[0].sources: missing"},
        {"[{\"type\": \"variance\", \"sources\": [\"hparam\"]}]",
         "figures[0].sources[0]: cell algorithm=adam batch_size=64: source hparam does not vary"},
        {"[\"estimators\"]", "figures[0]: the estimators figure needs an axis \"search\""},
        {"[{\"type\": \"variance\", \"sources\": [\"dropout\"]}]",
         "figures[0].sources[0]: cell algorithm=adam batch_size=64: source dropout does not vary"},
        {"[{\"type\": \"variance\", \"sources\": [\"init\", \"init\"]}]",
         "figures[0].sources[1]: 'init' is listed twice"},
    };
    char text[4096];
    tb_error err = {0};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        snprintf(text, sizeof text, "%.*s,\n \"figures\": %s}", (int)(strlen(valid) - 1), valid,
                 cases[i].to);
        tb_study_plan *p = NULL;
        if (!CHECK_FAILS(tb_study_plan_parse(text, "m.json", &p, &err), TB_ERR_INVALID, &err,
                         cases[i].needle))
            printf("  figure case %zu\n", i);
    }
    /* time_to_target has no std of misses */
    const char *ttt = variant("\"validation_error\"", "\"time_to_target\"");
    snprintf(text, sizeof text, "%.*s,\n \"figures\": [{\"type\": \"variance\", \"sources\": "
             "[\"init\"]}]}", (int)(strlen(ttt) - 1), ttt);
    tb_study_plan *p = NULL;
    CHECK_FAILS(tb_study_plan_parse(text, "m.json", &p, &err), TB_ERR_INVALID, &err,
                "a variance figure cannot use time_to_target");

    snprintf(text, sizeof text, "%.*s,\n \"figures\": [{\"type\": \"variance\", \"sources\": "
             "[\"init\", \"split\"]}, \"rank\"]}", (int)(strlen(valid) - 1), valid);
    if (!CHECK_OK(tb_study_plan_parse(text, "f.json", &p, &err), &err)) return;
    CHECK(p->fig_variance && p->fig_rank && !p->fig_curve && p->n_fig_sources == 2);
    double v[6 * 4], sv[2 * 6 * 4];
    for (int cell = 0; cell < 6; cell++)
        for (int r = 0; r < 4; r++) {
            v[cell * 4 + r] = cell + 0.1 * r;           /* cell 0 the best in every run */
            sv[cell * 4 + r] = cell + 0.01 * r;         /* init: a tenth of all's spread */
            sv[(6 + cell) * 4 + r] = cell + 0.05 * r;   /* split: half */
        }
    v[5 * 4 + 1] = INFINITY; /* diverged: left out of the std, last in the rank */
    v[1 * 4 + 3] = v[0 * 4 + 3]; /* a tie for first in run 4 */
    tb_study_values vals = {.cells = 6, .seeds = 4, .v = v, .source_v = sv};
    tb_study_figures f;
    if (!CHECK_OK(tb_study_figures_compute(p, &vals, &f, &err), &err)) return;
    CHECK(f.variance[0].n_groups == 3 && strcmp(f.variance[0].rows[2].name, "all") == 0);
    CHECK_NEAR(f.variance[0].rows[0].std_share, 0.1, 1e-9);
    CHECK_NEAR(f.variance[0].rows[1].std_share, 0.5, 1e-9);
    CHECK(f.variance[5].lost[2] == 1 && f.variance[5].rows[2].n == 3);
    CHECK_NEAR(f.rank[0].mean_rank, (1 + 1 + 1 + 1.5) / 4, 1e-12);
    CHECK(f.rank[0].firsts == 4 && f.rank[1].firsts == 1);
    CHECK_NEAR(f.rank[5].mean_rank, 6, 1e-12);
    tb_study_figures_free(&f);
    tb_study_plan_free(p);
}

/* The checks of the figure on made-up values (no training). */
static void test_figure(void)
{
    tb_study_plan *p = NULL;
    tb_error err = {0};
    const char *text = variant("\"expect\": \"a_wins\", \"min_wins\": 0.75", "\"expect\": "
                               "\"a_better\"");
    if (!CHECK_OK(tb_study_plan_parse(text, "f.json", &p, &err), &err)) return;
    p->seeds = 6;
    double v[6 * 6];
    tb_study_values vals = {.cells = 6, .seeds = 6, .v = v};
    for (int cell = 0; cell < 6; cell++)
        for (int r = 0; r < 6; r++) /* adam (cells 0-2) lower than sgd, except at 256 */
            v[cell * 6 + r] = cell < 3 ? 0.1 + 0.01 * r : (cell == 5 ? 0.05 : 0.5 + 0.01 * r);
    v[1 * 6 + 2] = INFINITY; /* a diverged run: lost in the table, loses its pair */
    tb_study_figure f;
    if (!CHECK_OK(tb_study_figure_compute(p, &vals, &f, &err), &err)) return;
    CHECK(f.n_cells == 6 && f.cells[1].n == 5 && f.cells[1].lost == 1);
    CHECK_NEAR(f.cells[0].center, 0.125, 1e-12); /* the mean */
    CHECK(f.n_pairs == 3 && f.pairs[0].cell_a == 0 && f.pairs[0].cell_b == 3);
    CHECK(f.pairs[0].outcome == TB_STUDY_REPRODUCED);      /* 6 of 6 */
    CHECK(f.pairs[1].outcome == TB_STUDY_INCONCLUSIVE);    /* 5 of 6: not significant */
    CHECK(f.pairs[2].outcome == TB_STUDY_NOT_REPRODUCED);  /* sgd better at 256 */
    CHECK(f.outcome == TB_STUDY_NOT_REPRODUCED);
    tb_study_figure_free(&f);
    tb_study_plan_free(p);
}

/* same_within: every pair within the relative tolerance, whatever the order of the pairs
 * (P(A>B) = 0.5 here: not significant, yet the same computation). */
static void test_same_within(void)
{
    tb_study_plan *p = NULL;
    tb_error err = {0};
    const char *text = variant("\"expect\": \"a_wins\", \"min_wins\": 0.75", "\"expect\": "
                               "\"same_within\", \"tolerance\": 0.001");
    if (!CHECK_OK(tb_study_plan_parse(text, "s.json", &p, &err), &err)) return;
    CHECK(p->comparisons[0].expect == TB_EXPECT_SAME_WITHIN);
    CHECK(p->comparisons[0].tolerance == 0.001);
    p->seeds = 6;
    double v[6 * 6];
    tb_study_values vals = {.cells = 6, .seeds = 6, .v = v};
    for (int cell = 0; cell < 6; cell++) /* sgd = adam +-0.05% alternately, except at 128 */
        for (int r = 0; r < 6; r++)
            v[cell * 6 + r] = (1.0 + 0.1 * r) * (cell < 3 ? 1 : 1 + (r % 2 ? 5e-4 : -5e-4));
    v[4 * 6 + 3] *= 1.01;                    /* one pair 1% apart at batch 128 */
    v[2 * 6 + 1] = v[5 * 6 + 1] = INFINITY;  /* both sides diverged: the same */
    tb_study_figure f;
    if (!CHECK_OK(tb_study_figure_compute(p, &vals, &f, &err), &err)) return;
    CHECK(f.n_pairs == 3);
    CHECK(f.pairs[0].outcome == TB_STUDY_REPRODUCED && f.pairs[0].pab.verdict ==
          TB_VERDICT_NOT_SIGNIFICANT);
    CHECK_NEAR(f.pairs[0].max_rel_gap, 5e-4, 1e-6);
    CHECK(f.pairs[1].outcome == TB_STUDY_NOT_REPRODUCED && f.pairs[1].max_rel_gap > 0.009);
    CHECK(f.pairs[2].outcome == TB_STUDY_REPRODUCED);
    CHECK(f.outcome == TB_STUDY_NOT_REPRODUCED);
    tb_study_figure_free(&f);
    v[5 * 6 + 1] = 2.0;                      /* one side diverged, the other not */
    if (!CHECK_OK(tb_study_figure_compute(p, &vals, &f, &err), &err)) return;
    CHECK(isinf(f.pairs[2].max_rel_gap) && f.pairs[2].outcome == TB_STUDY_NOT_REPRODUCED);
    tb_study_figure_free(&f);
    tb_study_plan_free(p);
}

static int is_json(const struct dirent *d)
{
    size_t n = strlen(d->d_name);
    return n > 5 && strcmp(d->d_name + n - 5, ".json") == 0;
}

/* Two estimators side by side: the search axis, the estimators figure, hparam varied alone. */
static const char searched[] =
    "{\"name\": \"e\", \"claim\": \"c\", \"source\": \"s\",\n"
    " \"settings\": {\"workload\": \"fmnist_mlp\", \"algorithm\": \"adam\", \"steps\": 10,\n"
    "              \"split\": \"bootstrap\", \"augment\": true},\n"
    " \"tune\": {\"space\": {\"learning_rate\": {\"min\": 1e-4, \"max\": 1e-2}}, \"trials\": 3},\n"
    " \"axes\": {\"search\": [\"once\", \"per_run\"]}, \"seeds\": 4,\n"
    " \"metric\": \"validation_loss\",\n"
    " \"figures\": [{\"type\": \"variance\", \"sources\": [\"hparam\", \"split\", \"augment\"]},\n"
    "             {\"type\": \"estimators\", \"expect\": \"close\"}]}";

static const char *searched_variant(const char *from, const char *to)
{
    static char buf[4096];
    const char *at = strstr(searched, from);
    if (!at) return NULL;
    snprintf(buf, sizeof buf, "%.*s%s%s", (int)(at - searched), searched, to, at + strlen(from));
    return buf;
}

static void test_estimators(void)
{
    static const struct {
        const char *from, *to, *needle;
    } cases[] = {
        {"\"per_run\"]", "\"each\"]", "e.json:5:30: axes.search[1]: must be \"once\" or \"per_run\""},
        {"\"tune\"", "\"tunes\"", "e.json:4:11: tunes: unknown key"},
        {" \"tune\": {", " \"overrides\": [{\"when\": {\"search\": \"once\"}, \"tune\": {",
         NULL},
        {"\"close\"", "\"near\"", "figures[1].expect: 'near' is not close or none"},
        {"\"once\", \"per_run\"", "\"once\"", "figures[1]: the estimators figure needs an axis"},
        {"\"split\": \"bootstrap\"", "\"split\": \"random\"", "settings.split: "},
        {"\"augment\": true", "\"augment\": 1", "settings.augment: must be true or false"},
    };
    tb_error err = {0};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const char *text = searched_variant(cases[i].from, cases[i].to);
        char fixed[4096];
        if (!cases[i].needle) { /* a tune for the once cells only: per_run cells tune nothing */
            const char *end = strstr(text, "\"trials\": 3}");
            snprintf(fixed, sizeof fixed, "%.*s\"trials\": 3}}]%s", (int)(end - text), text,
                     end + strlen("\"trials\": 3}"));
            text = fixed;
        }
        tb_study_plan *p = NULL;
        if (!CHECK_FAILS(tb_study_plan_parse(text, "e.json", &p, &err), TB_ERR_INVALID, &err,
                         cases[i].needle ? cases[i].needle
                                         : "cell search=per_run does not tune: a search axis"))
            printf("  estimators case %zu\n", i);
    }
    tb_study_plan *p = NULL;
    if (!CHECK_OK(tb_study_plan_parse(searched, "e.json", &p, &err), &err)) return;
    CHECK(!tb_study_plan_cell_per_run(p, 0) && tb_study_plan_cell_per_run(p, 1));
    CHECK(p->fig_estimators && p->fig_estimators_judged && p->n_fig_sources == 3);
    CHECK(p->base.data.source.split_kind == TB_SPLITS_BOOTSTRAP && p->base.data.pipeline.augment);
    /* once: 1.0 .. 1.3; ideal: the same spread 0.05 higher; then an ideal 10 times as wide */
    double v[2 * 4], sv[3 * 2 * 4];
    for (int r = 0; r < 4; r++) {
        v[r] = 1 + 0.1 * r;
        v[4 + r] = 1.05 + 0.1 * r;
        for (int k = 0; k < 3; k++) {
            sv[(k * 2 + 0) * 4 + r] = 1 + 0.01 * (k + 1) * r;
            sv[(k * 2 + 1) * 4 + r] = NAN; /* a per_run cell has no source runs */
        }
    }
    tb_study_values vals = {.cells = 2, .seeds = 4, .v = v, .source_v = sv};
    tb_study_figures f;
    if (!CHECK_OK(tb_study_figures_compute(p, &vals, &f, &err), &err)) return;
    CHECK(f.variance[0].n_groups == 4 && f.variance[1].n_groups == 0);
    CHECK_NEAR(f.variance[0].rows[0].std_share, 0.1, 1e-9); /* hparam alone */
    CHECK(f.n_estimators == 1 && f.estimators[0].cell_once == 0 && f.estimators[0].cell_ideal == 1);
    const tb_study_estimator_row *r = &f.estimators[0];
    CHECK_NEAR(r->mean_once, 1.15, 1e-12);
    CHECK_NEAR(r->mean_error, -0.05, 1e-12);
    CHECK_NEAR(r->std_ratio, 1, 1e-9);
    CHECK(r->trainings_once == 3 + 4 && r->trainings_ideal == 4 * (3 + 1));
    CHECK_NEAR(r->compute_ratio, 16.0 / 7.0, 1e-12);
    CHECK(r->outcome == TB_STUDY_REPRODUCED && r->std_ci_once.lo < r->std_once);
    tb_study_figure none = {0};
    int judged = 0, yes = 0;
    CHECK(tb_study_outcome_of(&none, &f, &judged, &yes) == TB_STUDY_REPRODUCED && judged == 1 &&
          yes == 1);
    tb_study_figures_free(&f);
    for (int r2 = 0; r2 < 4; r2++) v[4 + r2] = 1.05 + 1.0 * r2; /* the ideal 10 times as wide */
    if (!CHECK_OK(tb_study_figures_compute(p, &vals, &f, &err), &err)) return;
    CHECK(f.estimators[0].outcome == TB_STUDY_NOT_REPRODUCED);
    CHECK(tb_study_outcome_of(&none, &f, &judged, &yes) == TB_STUDY_NOT_REPRODUCED && yes == 0);
    tb_study_figures_free(&f);
    v[0] = v[1] = v[2] = INFINITY; /* one finished run of four: no std to judge */
    p->fig_variance = false;       /* (whose "all" group would refuse it) */
    if (!CHECK_OK(tb_study_figures_compute(p, &vals, &f, &err), &err)) return;
    CHECK(f.estimators[0].outcome == TB_STUDY_INCONCLUSIVE && f.estimators[0].n_once == 1);
    tb_study_figures_free(&f);
    tb_study_plan_free(p);
}

static void test_shipped(void)
{
    struct dirent **names = NULL;
    int n = scandir(TB_SOURCE_DIR "/studies", &names, is_json, alphasort);
    CHECK(n >= 3);
    for (int i = 0; i < n; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/studies/%s", TB_SOURCE_DIR, names[i]->d_name);
        tb_study_plan *p = NULL;
        tb_error err = {0};
        if (CHECK_OK(tb_study_plan_load(path, &p, &err), &err)) {
            char want[256];
            snprintf(want, sizeof want, "%s.json", p->name); /* the file is named after it */
            CHECK(strcmp(want, names[i]->d_name) == 0);
            /* a claim stated as a check: judged comparisons, estimators, utility, regret,
             * echoing, detection or stability */
            CHECK((p->n_comparisons > 0 && p->comparisons[0].expect != TB_EXPECT_NONE) ||
                  p->fig_estimators_judged || (p->fig_utility && !isnan(p->utility_min_tau)) ||
                  (p->fig_regret && !isnan(p->regret_min_ratio)) || p->fig_echoing_judged ||
                  (p->fig_detection && !isnan(p->detection_max_fp)) ||
                  (p->fig_stability && p->stability_judged));
        }
        tb_study_plan_free(p);
        free(names[i]);
    }
    free(names);
}

int main(void)
{
    test_valid();
    test_malformed();
    test_seconds();
    test_figure();
    test_same_within();
    test_tune();
    test_search_points();
    test_timed_metrics();
    test_figures();
    test_estimators();
    test_shipped();
    return tb_test_finish("test_study_plan");
}
