/* test_algoperf_spaces.c: AlgoPerf's own baseline search spaces (tests/algoperf/, copied
 * unedited: tests/algoperf/README.md) planned through the path `bench -s ALGO --space FILE`
 * takes (tb_submission_ref_set_search_space_file, tb_bench_plan_points), and every planned
 * point turned into what the built-in baseline runs (tb_baseline_config_make) meaning what
 * AlgoPerf's baselines mean: beta1 or momentum = 1 - one_minus_beta1 inside the file's
 * range, the warmup floor(warmup_factor x step hint) steps (or warmup_steps), cosine decay to 0
 * or linear decay to end_factor over decay_steps_factor of the steps after warmup, dropout and
 * label smoothing left to the workload; a list runs min(points, trials) in file order with a
 * note; bad names and values refused naming the file and the field; a small benchmark with
 * the prize-qualification list finishes. */
#include "testutil.h"

#include "bench/bench_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ALGOPERF_DIR TB_SOURCE_DIR "/tests/algoperf/"
#define TS "reference_algorithms/target_setting_algorithms/"
#define PB "reference_algorithms/paper_baselines/"
#define HINT 1000

typedef struct fixture {
    const char *path; /* under tests/algoperf/ */
    const char *algorithm;
} fixture;

static const fixture fixtures[] = {
    {"prize_qualification_baselines/external_tuning/tuning_search_space.json", "nadamw"},
    {PB "adamw/tuning_search_space.json", "adamw"},
    {PB "adamw/tuning_search_space_no_beta1.json", "adamw"},
    {PB "nadamw/tuning_search_space.json", "nadamw"},
    {PB "nadamw/tuning_search_space_no_beta1.json", "nadamw"},
    {PB "momentum/tuning_search_space.json", "momentum"},
    {PB "momentum/tuning_search_space_no_beta1.json", "momentum"},
    {PB "nesterov/tuning_search_space.json", "nesterov"},
    {PB "nesterov/tuning_search_space_no_beta1.json", "nesterov"},
    {PB "lamb/tuning_search_space.json", "lamb"},
    {PB "lamb/tuning_search_space_no_beta1.json", "lamb"},
    {PB "shampoo/tuning_search_space.json", "shampoo"},
    {PB "shampoo/tuning_search_space_no_beta1.json", "shampoo"},
    {TS "criteo1tb/tuning_search_space.json", "nadamw"},
    {TS "fastmri/tuning_search_space.json", "nesterov"},
    {TS "imagenet_resnet/tuning_search_space.json", "momentum"},
    {TS "imagenet_vit/tuning_search_space.json", "nadamw"},
    {TS "librispeech_conformer/tuning_search_space.json", "adamw"},
    {TS "librispeech_deepspeech/tuning_search_space.json", "nadamw"},
    {TS "ogbg/tuning_search_space.json", "nesterov"},
    {TS "wmt/tuning_search_space.json", "nadamw"},
};
#define N_FIXTURES ((int)(sizeof fixtures / sizeof *fixtures))

/* The spec `bench -s algorithm --space path --studies 2 --trials trials` plans with. */
static tb_bench_spec spec_for(const char *const *subs, const char *path, int trials)
{
    tb_bench_spec s = tb_test_bench_spec(subs, 1, 1, 100);
    s.studies = 2;
    s.trials = trials;
    s.search_space_file = path;
    return s;
}

/* Plans algorithm's points from the file at path as bench does; false with err on failure. */
static bool plan(const char *algorithm, const char *path, int trials, tb_hparams **points,
                 int *per_study, tb_search_space **space, char *note, size_t cap,
                 tb_error *err)
{
    const char *subs[1] = {algorithm};
    tb_bench_spec s = spec_for(subs, path, trials);
    tb_submission_ref *ref = NULL;
    tb_status st = tb_submission_load(algorithm, s.search_space_dir, &ref, err);
    if (st == TB_OK) st = tb_submission_ref_set_search_space_file(ref, path, err);
    if (st == TB_OK) st = tb_bench_plan_points(&s, ref, points, per_study, space, note, cap, err);
    tb_submission_unload(ref);
    return st == TB_OK;
}

/* Whether v is a value dimension `name` of the parsed file can take. */
static bool in_space(const tb_search_space *space, const char *name, double v)
{
    if (tb_search_space_list_size(space) > 0) return true; /* a list's values are its own */
    tb_search_dim d;
    for (int i = 0; tb_search_space_dim(space, i, &d); i++) {
        if (strcmp(d.name, name) != 0) continue;
        if (d.scaling != TB_SCALING_DISCRETE) return v >= d.min && v <= d.max;
        for (int k = 0; k < d.n_feasible; k++)
            if (d.feasible[k] == v) return true;
        return false;
    }
    return false;
}

/* One planned point against what it must mean in algorithm's baseline. */
static void check_point(const char *file, const char *algorithm, const tb_search_space *space,
                        const tb_hparams *p)
{
    tb_error err = {0};
    tb_baseline_config cfg;
    if (!CHECK_OK(tb_baseline_config_make(algorithm, p, HINT, &cfg, &err), &err)) {
        fprintf(stderr, "  in %s\n", file);
        return;
    }
    tb_hparams full;
    CHECK_OK(tb_hparams_resolve(algorithm, &cfg.opt, &full, NULL, &err), &err);
    bool momentum_only = !tb_hparams_has(&full, "beta1");
    const char *first = momentum_only ? "momentum" : "beta1";
    for (int i = 0; i < p->count; i++) {
        const char *n = p->names[i];
        double v = p->values[i];
        CHECK(in_space(space, n, v));
        if (strcmp(n, "one_minus_beta1") == 0)
            CHECK(fabs(tb_hparams_get(&full, first, -1) - (1.0 - v)) <= 1e-15);
        else if (strcmp(n, "beta1") == 0)
            CHECK(tb_hparams_get(&full, first, -1) == v);
        else if (strcmp(n, "beta2") == 0 && !tb_hparams_has(&full, "beta2")) /* never read */
            CHECK(!tb_hparams_has(&cfg.opt, "beta2"));
        else if (strcmp(n, "warmup_factor") == 0)
            CHECK(cfg.schedule.warmup_steps == (int64_t)(v * HINT) && cfg.warmup_fraction == v);
        else if (strcmp(n, "warmup_steps") == 0)
            CHECK(cfg.schedule.warmup_steps == (int64_t)v);
        else if (strcmp(n, "dropout_rate") == 0 || strcmp(n, "label_smoothing") == 0)
            CHECK(!tb_hparams_has(&cfg.opt, n) && v >= 0 && v < 1);
        else if (strcmp(n, "decay_steps_factor") != 0 && strcmp(n, "end_factor") != 0)
            CHECK(tb_hparams_get(&full, n, NAN) == v); /* learning_rate, weight_decay, ... */
    }
    CHECK(tb_hparams_get(&full, first, -1) >= 0 && tb_hparams_get(&full, first, -1) < 1);
    /* the schedule the names select, by its factors */
    const tb_schedule *s = &cfg.schedule;
    int64_t w = s->warmup_steps;
    bool ok = true;
    if (w >= HINT) { /* a target-setting warmup past this hint: one step of decay after it */
        double end = tb_hparams_get(p, "end_factor", 0);
        ok &= CHECK(s->total_steps == w + 1 && tb_schedule_factor(s, w) == 1.0 &&
                    fabs(tb_schedule_factor(s, w + 1) - end) < 1e-12);
    } else if (tb_hparams_has(p, "decay_steps_factor") || tb_hparams_has(p, "end_factor")) {
        double end = tb_hparams_get(p, "end_factor", 0);
        int64_t decay = (int64_t)((double)(HINT - w) * tb_hparams_get(p, "decay_steps_factor", 1));
        ok &= CHECK(s->kind == TB_SCHEDULE_LINEAR_DECAY && s->total_steps == w + decay);
        ok &= CHECK(fabs(tb_schedule_factor(s, w + decay) - end) < 1e-12);
        ok &= CHECK(fabs(tb_schedule_factor(s, HINT) - end) < 1e-12); /* then holds it */
        ok &= CHECK(fabs(tb_schedule_factor(s, w + decay / 2) - (1 + end) / 2) <
                    2.0 / (double)decay);
    } else {
        ok &= CHECK(s->kind == TB_SCHEDULE_WARMUP_COSINE && s->total_steps == HINT);
        ok &= CHECK(tb_schedule_factor(s, HINT) == 0.0);
        ok &= CHECK(fabs(tb_schedule_factor(s, (w + HINT) / 2) - 0.5) < 0.01);
    }
    if (w > 0)
        ok &= CHECK(tb_schedule_factor(s, w) == 1.0 &&
                    tb_schedule_factor(s, 1) == 1.0 / (double)w);
    if (!ok)
        fprintf(stderr, "  %s: schedule %s, warmup %lld, total %lld, end %g\n", file,
                tb_schedule_name(s->kind), (long long)w, (long long)s->total_steps,
                s->end_factor);
}

/* Every fixture plans unedited and every point means what AlgoPerf means. */
static void test_every_file(void)
{
    for (int f = 0; f < N_FIXTURES; f++) {
        char path[512], note[512];
        snprintf(path, sizeof path, ALGOPERF_DIR "%s", fixtures[f].path);
        tb_hparams *points = NULL;
        tb_search_space *space = NULL;
        int per_study = 0;
        tb_error err = {0};
        bool ok = plan(fixtures[f].algorithm, path, 5, &points, &per_study, &space, note,
                       sizeof note, &err);
        if (!CHECK(ok)) {
            fprintf(stderr, "  %s (%s): %s\n", fixtures[f].path, fixtures[f].algorithm,
                    err.message);
            continue;
        }
        CHECK(per_study == 5 && note[0] == 0); /* ranges, and the list of 5 */
        for (int k = 0; k < 2 * per_study; k++)
            check_point(fixtures[f].path, fixtures[f].algorithm, space, &points[k]);
        free(points);
        tb_search_space_destroy(space);
    }
}

/* The prize-qualification list: min(points, trials) per study, every study the file's first
 * points in order, and a note when the list is the shorter. */
static void test_list(void)
{
    const char *path = ALGOPERF_DIR "prize_qualification_baselines/external_tuning/"
                                    "tuning_search_space.json";
    tb_search_space *file = NULL;
    tb_error err = {0};
    if (!CHECK_OK(tb_search_space_load(path, &file, &err), &err)) return;
    CHECK(tb_search_space_list_size(file) == 5);
    const int asks[2] = {3, 8};
    for (int a = 0; a < 2; a++) {
        tb_hparams *points = NULL;
        tb_search_space *space = NULL;
        int per_study = 0;
        char note[512];
        if (!CHECK(plan("nadamw", path, asks[a], &points, &per_study, &space, note, sizeof note,
                        &err)))
            continue;
        CHECK(per_study == (asks[a] < 5 ? asks[a] : 5));
        if (asks[a] > 5)
            CHECK(strstr(note, "lists 5 points") && strstr(note, "5 trials instead of 8"));
        else
            CHECK(note[0] == 0);
        for (int k = 0; k < 2 * per_study; k++) {
            tb_hparams want;
            CHECK(tb_search_space_list_point(file, k % per_study, &want));
            CHECK(memcmp(&want, &points[k], sizeof want) == 0);
        }
        /* the first point is the file's first, by value */
        CHECK(tb_hparams_get(&points[0], "learning_rate", 0) == 0.001308209823469072 &&
              tb_hparams_get(&points[0], "one_minus_beta1", 0) == 0.02686663061 &&
              tb_hparams_get(&points[0], "warmup_factor", 0) == 0.1);
        free(points);
        tb_search_space_destroy(space);
    }
    tb_search_space_destroy(file);
}

/* Writes text to a new file in dir; its path in path. */
static void write_file(const char *dir, const char *name, const char *text, char *path,
                       size_t cap)
{
    snprintf(path, cap, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

/* Bad names and values: refused naming the file, the field and, for a name, the accepted
 * ones. */
static void test_bad_input(const char *dir)
{
    static const struct {
        const char *algorithm, *text;
        const char *want[3];
    } cases[] = {
        {"adamw", "{\"learning_rat\": {\"min\": 1e-4, \"max\": 1e-2, \"scaling\": \"log\"}}",
         {"'learning_rat' is not a hyperparameter of adamw", "one_minus_beta1, ",
          "warmup_factor"}},
        {"adamw", "{\"one_minus_beta1\": {\"feasible_points\": [1.5]}}",
         {"dimension 'one_minus_beta1'", "1.5 makes beta1 = 1 - 1.5 = -0.5", "outside [0, 1)"}},
        {"momentum", "{\"one_minus_beta1\": {\"min\": 0.01, \"max\": 1.5}}",
         {"dimension 'one_minus_beta1'", "makes momentum = 1 - 1.5", "outside [0, 1)"}},
        {"nadamw", "[{\"learning_rate\": 0.001, \"one_minus_beta1\": 0}]",
         {"dimension 'one_minus_beta1'", "nadamw: one_minus_beta1 = 0 is outside (0, 1]", NULL}},
        {"adamw", "{\"warmup_factor\": {\"feasible_points\": [1]}}",
         {"dimension 'warmup_factor'", "outside [0, 1)", NULL}},
        {"nesterov", "{\"end_factor\": {\"feasible_points\": [2]}}",
         {"dimension 'end_factor'", "outside [0, 1]", NULL}},
        {"lamb", "{\"label_smoothing\": {\"feasible_points\": [1.0]}}",
         {"dimension 'label_smoothing'", "outside [0, 1)", NULL}},
        {"adagrad", "{\"one_minus_beta1\": {\"feasible_points\": [0.1]}}",
         {"'one_minus_beta1' is not a hyperparameter of adagrad", NULL, NULL}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char path[512], name[32], note[512];
        snprintf(name, sizeof name, "bad%zu.json", i);
        write_file(dir, name, cases[i].text, path, sizeof path);
        tb_hparams *points = NULL;
        tb_search_space *space = NULL;
        int per_study = 0;
        tb_error err = {0};
        CHECK(!plan(cases[i].algorithm, path, 2, &points, &per_study, &space, note, sizeof note,
                    &err));
        CHECK(err.status == TB_ERR_INVALID && strstr(err.message, path));
        for (int k = 0; k < 3; k++)
            if (cases[i].want[k] && !CHECK(strstr(err.message, cases[i].want[k])))
                fprintf(stderr, "  case %zu: wanted '%s' in: %s\n", i, cases[i].want[k],
                        err.message);
        CHECK(points == NULL && space == NULL);
    }
    /* two names of one value that disagree, caught when the baseline sets up */
    tb_hparams p = {0};
    tb_hparams_set(&p, "beta1", 0.9, NULL);
    tb_hparams_set(&p, "one_minus_beta1", 0.2, NULL);
    tb_baseline_config cfg;
    tb_error err = {0};
    CHECK_FAILS(tb_baseline_config_make("adamw", &p, HINT, &cfg, &err), TB_ERR_INVALID, &err,
                "beta1 = 0.9 and one_minus_beta1 = 0.2 name one value and disagree");
    tb_hparams q = {0};
    tb_hparams_set(&q, "warmup_factor", 0.05, NULL);
    tb_hparams_set(&q, "warmup_fraction", 0.1, NULL);
    CHECK_FAILS(tb_baseline_config_make("adamw", &q, HINT, &cfg, &err), TB_ERR_INVALID, &err,
                "disagree");
    /* a file that is not there, named */
    const char *missing = "/nonexistent/tuning_search_space.json";
    tb_hparams *points = NULL;
    tb_search_space *space = NULL;
    int per_study;
    char note[64];
    CHECK(!plan("adamw", missing, 1, &points, &per_study, &space, note, sizeof note, &err));
    CHECK(strstr(err.message, missing) != NULL);
}

/* A small benchmark with the prize-qualification list (nadamw, 2 trials a study of its 5
 * points) finishes, each trial at its point with beta1 = 1 - one_minus_beta1 in effect; and
 * the self-tuning preset runs its fixed configuration. */
static void test_bench_runs(const char *dir)
{
    char db[512];
    snprintf(db, sizeof db, "%s/bench.db", dir);
    const char *subs[1] = {"nadamw"};
    tb_bench_spec s = spec_for(subs, ALGOPERF_DIR "prize_qualification_baselines/"
                                                  "external_tuning/tuning_search_space.json", 2);
    s.studies = 1;
    s.budget_s = 0.6;
    s.eval_period_s = 0.3;
    tb_bench_summary sum;
    tb_error err = {0};
    if (!CHECK_OK(tb_bench_run(db, &s, NULL, NULL, &sum, &err), &err)) return;
    CHECK(sum.planned == 2 && sum.ran == 2 && sum.notes[0] == 0);
    tb_store *store;
    tb_trial_record *t = NULL;
    int n = 0;
    if (!CHECK_OK(tb_store_open_readonly(db, &store, &err), &err)) return;
    CHECK_OK(tb_store_trials(store, "t", &t, &n, &err), &err);
    CHECK(n == 2);
    for (int i = 0; i < n; i++) {
        if (!CHECK(t[i].status == TB_TRIAL_DONE)) fprintf(stderr, "  %s\n", t[i].reason);
        double omb1 = tb_hparams_get(&t[i].hparams, "one_minus_beta1", -1);
        CHECK(omb1 > 0 && t[i].steps > 0);
        CHECK(fabs(tb_hparams_get(&t[i].resolved_hparams, "beta1", -1) - (1 - omb1)) < 1e-12);
        CHECK(tb_hparams_get(&t[i].resolved_hparams, "warmup_fraction", -1) ==
              tb_hparams_get(&t[i].hparams, "warmup_factor", -2));
    }
    free(t);
    t = NULL;
    /* the self-tuning preset: one trial, AlgoPerf's configuration in effect */
    const char *preset[1] = {"nadamw_self_tuning"};
    tb_bench_spec ps = tb_test_bench_spec(preset, 1, 0.6, 100);
    ps.name = "self";
    ps.ruleset = TB_RULESET_SELF;
    if (CHECK_OK(tb_bench_run(db, &ps, NULL, NULL, &sum, &err), &err) &&
        CHECK_OK(tb_store_trials(store, "self", &t, &n, &err), &err) && CHECK(n == 1)) {
        CHECK(t[0].status == TB_TRIAL_DONE && t[0].hparams.count == 0);
        CHECK(tb_hparams_get(&t[0].resolved_hparams, "learning_rate", 0) == 0.0017486387539278373);
        CHECK(fabs(tb_hparams_get(&t[0].resolved_hparams, "beta1", 0) - (1 - 0.06733926164)) <
              1e-12);
        CHECK(tb_hparams_get(&t[0].resolved_hparams, "warmup_fraction", 0) == 0.02);
    }
    free(t);
    t = NULL;
    /* train's preset as a submission: Schedule-Free AdamW at its values, its own warmup of
     * floor(0.015 x step hint) steps, the baseline's learning rate constant */
    const char *sf[1] = {"algoperf_sf_adamw"};
    tb_bench_spec sfs = tb_test_bench_spec(sf, 1, 0.6, 100);
    sfs.name = "self_sf";
    sfs.ruleset = TB_RULESET_SELF;
    const int64_t hint = tb_workload_find_info(sfs.workloads[0])->step_hint;
    if (CHECK_OK(tb_bench_run(db, &sfs, NULL, NULL, &sum, &err), &err) &&
        CHECK_OK(tb_store_trials(store, "self_sf", &t, &n, &err), &err) && CHECK(n == 1)) {
        const tb_hparams *r = &t[0].resolved_hparams;
        CHECK(t[0].status == TB_TRIAL_DONE && t[0].hparams.count == 0);
        CHECK(tb_hparams_get(r, "learning_rate", 0) == 0.0025 &&
              tb_hparams_get(r, "beta1", 0) == 0.9 && tb_hparams_get(r, "r", 0) == 0.75);
        CHECK(tb_hparams_get(r, "warmup_steps", -1) == floor(0.015 * (double)hint));
        CHECK(tb_hparams_get(r, "warmup_fraction", -1) == 0);
    }
    free(t);
    t = NULL;
    /* dropout_rate and label_smoothing on a workload with neither are ignored, as AlgoPerf's
     * workloads do: the trial runs (it would fail if the workload were given them) */
    char path[512];
    write_file(dir, "ignored.json",
               "[{\"learning_rate\": 0.001, \"one_minus_beta1\": 0.1, \"dropout_rate\": 0.1, "
               "\"label_smoothing\": 0.2, \"warmup_factor\": 0.05}]", path, sizeof path);
    const char *adamw[1] = {"adamw"};
    static const char *ae[1] = {"fmnist_autoencoder"};
    tb_bench_spec as = spec_for(adamw, path, 1);
    as.name = "ignored";
    as.studies = 1;
    as.budget_s = 0.4;
    as.eval_period_s = 0.2;
    as.workloads = ae;
    if (CHECK_OK(tb_bench_run(db, &as, NULL, NULL, &sum, &err), &err) &&
        CHECK_OK(tb_store_trials(store, "ignored", &t, &n, &err), &err) && CHECK(n == 1)) {
        if (!CHECK(t[0].status == TB_TRIAL_DONE && t[0].steps > 0))
            fprintf(stderr, "  %s\n", t[0].reason);
        CHECK(tb_hparams_get(&t[0].resolved_hparams, "beta1", 0) == 0.9);
    }
    free(t);
    tb_store_close(store);
}

int main(void)
{
    char dir[] = "/tmp/tb_test_algoperf_XXXXXX";
    if (!mkdtemp(dir)) return 1;
    test_every_file();
    test_list();
    test_bad_input(dir);
    test_bench_runs(dir);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    return tb_test_finish("test_algoperf_spaces");
}
