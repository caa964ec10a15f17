/* test_study_echo.c: what the timed data-echoing study (studies/data_echoing_time.json) is
 * built of: the "echo" and "upstream_slowdown" axes and the "target" and "eval_every_steps"
 * settings (and their bad input, named by file, key and cause), the delay a slowdown states,
 * the step time it is a multiple of, the fresh examples a run reads to its target, the echoing
 * figure's checks on made-up values, the store's new columns, and a tiny real study. */
#include "testutil.h"

#include <math.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "trainbench/study_plan.h"

static const char valid[] =
    "{\"name\": \"e\", \"claim\": \"c\", \"source\": \"s\",\n"
    " \"settings\": {\"workload\": \"fmnist_mlp_narrow\", \"algorithm\": \"adam\",\n"
    "              \"batch_size\": 32, \"eval_examples\": 200, \"target\": 0.6,\n"
    "              \"eval_every_steps\": 5},\n"
    " \"axes\": {\"upstream_slowdown\": [1, 3], \"echo\": [\"none\", \"batch:2\",\n"
    "          \"example_after_augment:1.5\"]},\n"
    " \"seeds\": 2, \"metric\": \"time_to_target\",\n"
    " \"figures\": [{\"type\": \"echoing\", \"expect\": \"helps_when_slow\"}]}";

/* valid with `from` replaced by `to` (one occurrence), parsed: the status, err set. */
static tb_status parse_edited(const char *from, const char *to, tb_error *err)
{
    char text[sizeof valid + 256];
    const char *at = strstr(valid, from);
    if (!at) return TB_ERR_INTERNAL;
    snprintf(text, sizeof text, "%.*s%s%s", (int)(at - valid), valid, to, at + strlen(from));
    tb_study_plan *p = NULL;
    tb_status st = tb_study_plan_parse(text, "e.json", &p, err);
    tb_study_plan_free(p);
    return st;
}

static void test_parse(void)
{
    tb_study_plan *p = NULL;
    tb_error err = {0};
    if (!CHECK_OK(tb_study_plan_parse(valid, "e.json", &p, &err), &err)) return;
    CHECK(p->n_axes == 2 && p->axes[0].kind == TB_AXIS_SLOWDOWN &&
          p->axes[1].kind == TB_AXIS_ECHO_MODE && tb_study_plan_cells(p) == 6);
    CHECK(p->fig_echoing && p->fig_echoing_judged);
    CHECK(tb_study_plan_cell_slowdown(p, 0) == 1 && tb_study_plan_cell_slowdown(p, 4) == 3);
    tb_run_config c;
    CHECK_OK(tb_study_plan_run_config(p, 4, 0, &c, &err), &err); /* slowdown 3, batch:2 */
    CHECK(c.data.pipeline.echo == TB_ECHO_BATCH && c.data.pipeline.echo_factor == 2);
    CHECK(c.eval.target == 0.6 && c.eval.every_steps == 5 && c.eval.stop_at_target);
    CHECK(c.data.pipeline.upstream_delay_s == 0); /* set when the run trains */
    CHECK_OK(tb_study_plan_run_config(p, 5, 0, &c, &err), &err);
    CHECK(c.data.pipeline.echo == TB_ECHO_EXAMPLE_AFTER_AUGMENT &&
          c.data.pipeline.echo_factor == 1.5);
    CHECK_OK(tb_study_plan_run_config(p, 3, 0, &c, &err), &err);
    CHECK(c.data.pipeline.echo == TB_ECHO_NONE);
    tb_study_plan_free(p);

    /* bad input: the file, the key and the cause */
    CHECK_FAILS(parse_edited("[1, 3]", "[0, 3]", &err), TB_ERR_INVALID, &err,
                "axes.upstream_slowdown[0]: upstream slowdown 0 is not in (0, 1000]");
    CHECK(strstr(err.message, "e.json:") == err.message);
    CHECK_FAILS(parse_edited("[1, 3]", "[1, -2]", &err), TB_ERR_INVALID, &err,
                "axes.upstream_slowdown[1]: upstream slowdown -2 is not in (0, 1000]");
    CHECK_FAILS(parse_edited("[1, 3]", "[1, \"4x\"]", &err), TB_ERR_INVALID, &err,
                "axes.upstream_slowdown[1]");
    CHECK_FAILS(parse_edited("\"batch:2\"", "\"batch:0.5\"", &err), TB_ERR_INVALID, &err,
                "axes.echo[1]: 'batch:0.5': echo factor 0.5 is not in [1, 100]");
    CHECK_FAILS(parse_edited("\"batch:2\"", "\"batch\"", &err), TB_ERR_INVALID, &err,
                "axes.echo[1]: 'batch' is not \"none\" or KIND:FACTOR");
    CHECK_FAILS(parse_edited("\"batch:2\"", "\"warp:2\"", &err), TB_ERR_INVALID, &err,
                "axes.echo[1]: unknown echo kind 'warp'");
    CHECK_FAILS(parse_edited("\"batch:2\"", "\"batch:two\"", &err), TB_ERR_INVALID, &err,
                "the echo factor after ':' is not a number");
    CHECK_FAILS(parse_edited("\"batch:2\"", "\"none:2\"", &err), TB_ERR_INVALID, &err,
                "write no echoing as \"none\"");
    CHECK_FAILS(parse_edited("\"batch:2\"", "\"none\"", &err), TB_ERR_INVALID, &err,
                "axes.echo[1]: 'none' is listed twice");
    CHECK_FAILS(parse_edited("\"target\": 0.6", "\"target\": 0", &err), TB_ERR_INVALID, &err,
                "settings.target: 0 is not a positive validation target");
    CHECK_FAILS(parse_edited("\"target\": 0.6", "\"target\": -1", &err), TB_ERR_INVALID, &err,
                "settings.target: -1 is not a positive");
    CHECK_FAILS(parse_edited("\"eval_every_steps\": 5", "\"eval_every_steps\": 0", &err),
                TB_ERR_INVALID, &err, "settings.eval_every_steps");
    CHECK_FAILS(parse_edited("\"seeds\": 2", "\"seeds\": 2, \"axes2\": 1", &err), TB_ERR_INVALID,
                &err, "axes2");
    CHECK_FAILS(parse_edited("\"echo\": [", "\"echo_factor\": [2], \"echo\": [", &err),
                TB_ERR_INVALID, &err, "give it or \"echo_factor\", not both");
    CHECK_FAILS(parse_edited("\"target\": 0.6", "\"target\": 0.6, \"echo\": \"batch\"", &err),
                TB_ERR_INVALID, &err, "settings.echo: an \"echo\" axis sets each cell's kind");
    CHECK_FAILS(parse_edited("\"time_to_target\"", "\"validation_loss\"", &err), TB_ERR_INVALID,
                &err, "figures[0]: the echoing figure needs the metric time_to_target");
    CHECK_FAILS(parse_edited("\"none\", \"batch:2\"", "\"batch:3\", \"batch:2\"", &err),
                TB_ERR_INVALID, &err, "figures[0]: the echoing figure needs \"none\"");
    CHECK_FAILS(parse_edited("\"helps_when_slow\"", "\"helps\"", &err), TB_ERR_INVALID, &err,
                "figures[0].expect: 'helps' is not helps_when_slow or none");
    CHECK_FAILS(parse_edited("\"upstream_slowdown\": [1, 3], ", "", &err), TB_ERR_INVALID, &err,
                "figures[0]: the echoing figure needs the axes \"echo\"");
    /* the metric fresh_to_target parses, and stops at the target as time_to_target does */
    tb_study_metric m;
    CHECK_OK(tb_study_metric_parse("fresh_to_target", &m, &err), &err);
    CHECK(m == TB_METRIC_FRESH_TO_TARGET && tb_study_metric_to_target(m) &&
          !tb_study_metric_timed(m));
    tb_train_result r = {.reached_target = true, .fresh_to_target = 640};
    CHECK(tb_study_metric_value(m, &r) == 640);
    r.reached_target = false;
    CHECK(isinf(tb_study_metric_value(m, &r)));
}

static void test_delay(void)
{
    tb_error err = {0};
    double d = 0;
    CHECK_OK(tb_upstream_delay_for(4, 0.012, 128, &d, &err), &err);
    CHECK_NEAR(d, 4 * 0.012 / 128, 1e-15);
    CHECK_FAILS(tb_upstream_delay_for(0, 0.012, 128, &d, &err), TB_ERR_INVALID, &err,
                "upstream slowdown 0 is not in (0, 1000]");
    CHECK_FAILS(tb_upstream_delay_for(-1, 0.012, 128, &d, &err), TB_ERR_INVALID, &err,
                "upstream slowdown -1");
    CHECK_FAILS(tb_upstream_delay_for(2, NAN, 128, &d, &err), TB_ERR_INVALID, &err,
                "must be positive");
    CHECK_FAILS(tb_upstream_delay_for(2, 0.01, 0, &d, &err), TB_ERR_INVALID, &err,
                "must be positive");
    CHECK_FAILS(tb_upstream_delay_for(1000, 20, 1, &d, &err), TB_ERR_INVALID, &err,
                "past the pipeline's 10 s");
    tb_echo_kind k;
    CHECK_OK(tb_study_echo_parse("example:4", &k, &d, &err), &err);
    CHECK(k == TB_ECHO_EXAMPLE_BEFORE_AUGMENT && d == 4);
    CHECK_OK(tb_study_echo_parse("none", &k, &d, &err), &err);
    CHECK(k == TB_ECHO_NONE && d == 1);
    CHECK_FAILS(tb_study_echo_parse(":2", &k, &d, &err), TB_ERR_INVALID, &err,
                "no echo kind before the ':'");
}

/* A run with batch echoing of factor 2 reads each fresh batch once for two steps: by its
 * target it has read 32 fresh examples per odd step; the step time of the same run is
 * positive, and a bad measurement plan is refused. */
static void test_run_to_target(void)
{
    tb_run_config c = tb_run_config_default();
    c.model.workload = "fmnist_mlp_narrow";
    c.model.algorithm = "adam";
    c.model.backend.threads = 1;
    c.data.batch_size = 32;
    c.data.pipeline.echo = TB_ECHO_BATCH;
    c.data.pipeline.echo_factor = 2;
    c.length.epochs = 0;
    c.length.max_steps = 300;
    c.eval.during = 0;
    c.eval.every_steps = 3;
    c.eval.examples = 200;
    c.eval.target = 0.6;
    c.eval.stop_at_target = true;
    tb_train_result r;
    tb_error err = {0};
    if (!CHECK_OK(tb_train(&c, NULL, &r, &err), &err)) return;
    CHECK(r.reached_target && r.steps_to_target > 0 && r.steps_to_target % 3 == 0);
    CHECK(r.fresh_to_target == 32 * ((r.steps_to_target + 1) / 2));
    CHECK(r.steps == r.steps_to_target && r.fresh_examples == r.fresh_to_target);
    c.eval.target = -1;
    CHECK_FAILS(tb_train(&c, NULL, &r, &err), TB_ERR_INVALID, &err,
                "the validation target must be a positive number");
    c.eval.target = 0.6;
    double step_s = 0;
    const tb_step_time_plan how = {2, 3, 3};
    CHECK_OK(tb_run_measure_step_s(&c, &how, &step_s, &err), &err);
    CHECK(step_s > 0 && isfinite(step_s));
    const tb_step_time_plan bad = {2, 0, 3};
    CHECK_FAILS(tb_run_measure_step_s(&c, &bad, &step_s, &err), TB_ERR_INVALID, &err,
                "steps 0 (>= 1)");
}

/* Made-up values: 2 slowdowns x 3 echo cells, 6 runs. */
static void test_figure(void)
{
    tb_study_plan *p = NULL;
    tb_error err = {0};
    if (!CHECK_OK(tb_study_plan_parse(valid, "e.json", &p, &err), &err)) return;
    CHECK_OK(tb_study_plan_set_seeds(p, 6, &err), &err);
    enum { cells = 6, seeds = 6 };
    double v[cells * seeds], fresh[cells * seeds], delay[cells * seeds];
    /* cells: slowdown 1 (none, batch:2, after:1.5), slowdown 3 (the same) */
    const double time[cells] = {10, 12, 11, 30, 18, 40}, reads[cells] = {900, 600, 700,
                                                                          900, 600, 800};
    for (int c = 0; c < cells; c++)
        for (int i = 0; i < seeds; i++) {
            v[c * seeds + i] = time[c] + 0.1 * i;
            fresh[c * seeds + i] = reads[c] + i;
            delay[c * seeds + i] = c < 3 ? 1e-4 : 3e-4;
        }
    v[5 * seeds + 2] = INFINITY; /* a miss */
    tb_study_values vals = {.cells = cells, .seeds = seeds, .v = v, .fresh = fresh,
                            .delay_s = delay};
    tb_study_figure fig;
    tb_study_figures f;
    if (!CHECK_OK(tb_study_figure_compute(p, &vals, &fig, &err), &err)) return;
    if (!CHECK_OK(tb_study_figures_compute(p, &vals, &f, &err), &err)) return;
    CHECK(f.n_echo_rows == 2);
    const tb_study_echo_row *fast = &f.echo_rows[0], *slow = &f.echo_rows[1];
    CHECK(fast->control && !slow->control && fast->slowdown == 1 && slow->slowdown == 3);
    CHECK(fast->n_echo == 2 && fast->cell_base == 0 && slow->cell_base == 3);
    CHECK_NEAR(slow->base_time, 30.25, 1e-12);
    CHECK_NEAR(slow->delay_s, 3e-4, 1e-15);
    /* the control: both echo cells slower in all 6 pairs (B better): reproduced */
    CHECK(fast->echo[0].time_pab.verdict == TB_VERDICT_B_BETTER &&
          fast->outcome == TB_STUDY_REPRODUCED);
    /* slow: batch:2 sooner and fewer fresh in all 6 pairs; after:1.5 slower */
    CHECK(slow->echo[0].time_pab.verdict == TB_VERDICT_A_BETTER &&
          slow->echo[0].fresh_pab.verdict == TB_VERDICT_A_BETTER && slow->best == 0);
    CHECK(slow->echo[1].time_pab.verdict == TB_VERDICT_B_BETTER && isinf(slow->echo[1].time) == 0);
    CHECK(slow->outcome == TB_STUDY_REPRODUCED);
    /* compensated: 18 > 10 at slowdown 3, so only slowdown 1 (where batch:2's 12 > 10 too) */
    CHECK(tb_study_echo_compensated(&f, 0) == 0);
    int judged = 0, yes = 0;
    CHECK(tb_study_outcome_of(&fig, &f, &judged, &yes) == TB_STUDY_REPRODUCED && judged == 2 &&
          yes == 2);
    tb_study_figures_free(&f);
    /* echoing at the fast upstream that is sooner: the control is not reproduced; and at the
     * slow one no echo cell sooner: not reproduced either; compensation by 8 <= 10 */
    for (int i = 0; i < seeds; i++) {
        v[1 * seeds + i] = 5 + 0.1 * i;
        v[4 * seeds + i] = 35 + 0.1 * i;
        v[5 * seeds + i] = 8 + 0.1 * i;
        fresh[5 * seeds + i] = 950;
    }
    if (!CHECK_OK(tb_study_figures_compute(p, &vals, &f, &err), &err)) return;
    CHECK(f.echo_rows[0].outcome == TB_STUDY_NOT_REPRODUCED);
    CHECK(f.echo_rows[1].echo[1].time_pab.verdict == TB_VERDICT_A_BETTER &&
          f.echo_rows[1].echo[1].fresh_pab.verdict == TB_VERDICT_B_BETTER);
    CHECK(f.echo_rows[1].outcome == TB_STUDY_INCONCLUSIVE); /* sooner, but more fresh reads */
    CHECK(tb_study_echo_compensated(&f, 0) == 3);
    tb_study_figures_free(&f);
    tb_study_figure_free(&fig);
    tb_study_plan_free(p);
}

/* The store keeps a run's steps and fresh examples to its target and its upstream delay; a
 * study table from before them gets the columns, its runs read back with them unknown. */
static void test_store(const char *dir)
{
    char db[300];
    snprintf(db, sizeof db, "%s/old.db", dir);
    sqlite3 *h = NULL;
    tb_store *s = NULL;
    tb_error err = {0};
    CHECK_OK(tb_store_open(db, &s, &err), &err);
    tb_study_run_record rec;
    memset(&rec, 0, sizeof rec);
    snprintf(rec.study, sizeof rec.study, "e");
    snprintf(rec.key, sizeof rec.key, "k1");
    rec.result.steps = 40;
    rec.result.reached_target = true;
    rec.result.time_to_target_s = 1.5;
    rec.result.steps_to_target = 40;
    rec.result.fresh_to_target = 640;
    rec.upstream_delay_s = 2.5e-4;
    CHECK_OK(tb_store_put_study_run(s, &rec, "test", &err), &err);
    tb_study_run_record back;
    bool found = false;
    CHECK_OK(tb_store_get_study_run(s, "k1", &back, &found, &err), &err);
    CHECK(found && back.result.steps_to_target == 40 && back.result.fresh_to_target == 640 &&
          back.upstream_delay_s == 2.5e-4);
    tb_store_close(s);
    /* an older table: drop the columns by rebuilding it without them */
    CHECK(sqlite3_open(db, &h) == SQLITE_OK);
    CHECK(sqlite3_exec(h, "ALTER TABLE study_runs DROP COLUMN steps_to_target;"
                          "ALTER TABLE study_runs DROP COLUMN fresh_to_target;"
                          "ALTER TABLE study_runs DROP COLUMN upstream_delay_s;",
                       NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(h);
    CHECK_OK(tb_store_open(db, &s, &err), &err);
    CHECK_OK(tb_store_get_study_run(s, "k1", &back, &found, &err), &err);
    CHECK(found && back.result.fresh_to_target == -1 && isnan(back.upstream_delay_s) &&
          back.result.time_to_target_s == 1.5);
    CHECK(isnan(tb_study_metric_value(TB_METRIC_FRESH_TO_TARGET, &back.result)));
    tb_store_close(s);
    tb_test_remove_store(db);
}

/* A tiny real study: 2 slowdowns x (none, batch:2), 2 runs each, to a loose target. */
static void test_tiny_run(const char *dir)
{
    static const char tiny[] =
        "{\"name\": \"e\", \"claim\": \"c\", \"source\": \"s\",\n"
        " \"settings\": {\"workload\": \"fmnist_mlp_narrow\", \"algorithm\": \"adam\",\n"
        "              \"batch_size\": 32, \"eval_examples\": 200, \"target\": 0.6,\n"
        "              \"eval_every_steps\": 4},\n"
        " \"axes\": {\"upstream_slowdown\": [1, 2], \"echo\": [\"none\", \"batch:2\"]},\n"
        " \"seeds\": 2, \"metric\": \"time_to_target\",\n"
        " \"figures\": [{\"type\": \"echoing\", \"expect\": \"helps_when_slow\"}]}";
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
    if (CHECK_OK(tb_study_execute(p, &o, &v, &err), &err)) {
        CHECK(v.trained == 8 && v.reused == 0);
        for (int i = 0; i < 8; i++) {
            CHECK(isfinite(v.v[i]) && v.v[i] > 0 && isfinite(v.fresh[i]) && v.fresh[i] > 0);
            CHECK(v.delay_s[i] > 0 && v.delay_s[i] < 1);
        }
        /* cells 2, 3 (slowdown 2) state twice the delay of cells 0, 1 at the same run index */
        CHECK_NEAR(v.delay_s[2 * 2], 2 * v.delay_s[0], 1e-12 * v.delay_s[0]);
        CHECK(v.delay_s[1 * 2] == v.delay_s[0]);
        tb_study_figure fig;
        tb_study_figures f;
        if (CHECK_OK(tb_study_figure_compute(p, &v, &fig, &err), &err) &&
            CHECK_OK(tb_study_figures_compute(p, &v, &f, &err), &err)) {
            CHECK(f.n_echo_rows == 2 && f.echo_rows[0].control);
            int judged = 0;
            /* 2 pairs decide nothing: every check inconclusive */
            CHECK(tb_study_outcome_of(&fig, &f, &judged, NULL) == TB_STUDY_INCONCLUSIVE &&
                  judged == 2);
            tb_study_figures_free(&f);
            tb_study_figure_free(&fig);
        }
        double first = v.v[0];
        tb_study_values_free(&v);
        /* a rerun reads every run from the store, with its delay */
        if (CHECK_OK(tb_study_execute(p, &o, &v, &err), &err)) {
            CHECK(v.trained == 0 && v.reused == 8 && v.v[0] == first && v.delay_s[0] > 0);
            tb_study_values_free(&v);
        }
    }
    tb_store_close(s);
    tb_study_plan_free(p);
    tb_test_remove_store(db);
}

int main(void)
{
    char dir[] = "/tmp/tb_study_echo_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    test_parse();
    test_delay();
    test_figure();
    test_store(dir);
    test_run_to_target();
    test_tiny_run(dir);
    rmdir(dir);
    return tb_test_finish("test_study_echo");
}
