/* test_python_compare.c: `trainbench compare` with a submission file on one side. The numpy
 * AdamW example against the built-in adamw: P(A>B) agrees with the pairs' values, the JSON
 * names the file and its submission, and each pair's value of the file's side is what
 * `train -a FILE` gives at that pair's seeds (the same path); a file whose update makes NaN
 * weights loses its pairs as a diverged run; a missing file, a file without update_params, a
 * search without a search space are refused before training (exit 2) and an exception stops
 * the comparison naming the file and the step. Skipped (77) in a build without Python. */
#include "testutil.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef TB_WITH_PYTHON
int main(void)
{
    printf("test_python_compare: skipped: this build has no Python (TB_WITH_PYTHON off)\n");
    return 77;
}
#else

static char out[1 << 16], dir[128];

static int run(const char *args) { return tb_test_run_cli(args, out, sizeof out); }
static bool has(const char *s) { return strstr(out, s) != NULL; }

static double json_number(const char *key)
{
    const char *p = strstr(out, key);
    return p ? strtod(p + strlen(key), NULL) : NAN;
}

/* The numbers of the JSON array after key ("a_values":[...]); how many (at most cap). */
static int json_array(const char *key, double *v, int cap)
{
    const char *p = strstr(out, key);
    if (!p) return 0;
    p += strlen(key);
    int n = 0;
    while (n < cap && *p != ']') {
        char *end;
        v[n] = strtod(p, &end);
        if (end == p) return n;
        n++;
        p = *end == ',' ? end + 1 : end;
    }
    return n;
}

#define NUMPY TB_SOURCE_DIR "/examples/adamw_numpy.py"
#define LENGTH "-w fmnist_mlp --steps 8 --eval-examples 300 "

/* `train -a alg` at pair `pair`'s seeds (compare's seed 0), its final validation loss. */
static double train_at_pair(const char *alg, const char *hp, int pair)
{
    char args[1024];
    int n = snprintf(args, sizeof args, "train -q --json " LENGTH "-a %s %s", alg, hp);
    for (int s = 0; s < TB_STREAM_COUNT; s++)
        n += snprintf(args + n, sizeof args - (size_t)n, " --seed-%s %llu",
                      tb_stream_name((tb_stream)s),
                      (unsigned long long)tb_study_seed(0, (tb_stream)s, pair + 1));
    if (run(args) != 0) return NAN;
    const char *v = strstr(out, "\"validation\":");
    return v ? strtod(strstr(v, "\"loss\":") + 7, NULL) : NAN;
}

static void test_pairs(void)
{
    CHECK(run("compare -q --json -m validation_loss " LENGTH "--pairs 2 -A " NUMPY
              " --hp-a learning_rate=2e-3 -B adamw") == 0);
    printf("%s", out);
    CHECK(has("\"a\":\"" NUMPY "\"") && has("\"a_submission\":\"adamw_numpy\"") &&
          has("\"b\":\"adamw\"") && has("\"b_submission\":null"));
    double a[4], b[4];
    CHECK(json_array("\"a_values\":[", a, 4) == 2 && json_array("\"b_values\":[", b, 4) == 2);
    /* P(A>B) from the pairs (lower is better; a tie counts a half) */
    double wins = 0, ties = 0;
    for (int i = 0; i < 2; i++) {
        wins += a[i] < b[i];
        ties += a[i] == b[i];
    }
    CHECK(json_number("\"wins\":") == wins && json_number("\"ties\":") == ties &&
          json_number("\"losses\":") == 2 - wins - ties);
    CHECK(fabs(json_number("\"p_a_better\":") - (wins + ties / 2) / 2) < 1e-4);
    CHECK(has("\"verdict\":\"not_significant\"") && has("P(" NUMPY ">adamw)"));
    CHECK(has("\"best_a\":{\"learning_rate\":0.002}") && json_number("\"runs\":") == 4);
    /* each side's runs as `train -a` makes them, at the pair's seeds */
    for (int i = 0; i < 2; i++) {
        double ta = train_at_pair(NUMPY, "--hp learning_rate=2e-3", i);
        printf("  pair %d: %s %.6g (compare), %.6g (train -a)\n", i, NUMPY, a[i], ta);
        CHECK(fabs(a[i] - ta) <= 1e-5 * fabs(ta));
    }
    double tb = train_at_pair("adamw", "", 0);
    printf("  pair 0: adamw %.6g (compare), %.6g (train -a)\n", b[0], tb);
    CHECK(fabs(b[0] - tb) <= 1e-5 * fabs(tb));
    CHECK(a[0] != a[1]); /* the pairs' seeds differ */
}

/* A submission file of dir whose update_params body is `body` (after the loss and gradients);
 * *path gets its name. */
static void write_file(char *path, size_t cap, const char *name, const char *defs,
                       const char *body)
{
    snprintf(path, cap, "%s/%s", dir, name);
    char text[2048];
    snprintf(text, sizeof text,
             "%s"
             "def get_batch_size(workload_name):\n    return None\n"
             "def init_optimizer_state(workload, params, model_state, hp, rng):\n"
             "    return {}\n"
             "%s",
             defs, body ? body : "");
    tb_test_write_text(path, text);
}

#define UPDATE "def update_params(workload, params, types, model_state, hp, batch,\n" \
               "                  loss_type, state, eval_results, global_step, rng):\n" \
               "    workload.loss_and_grad(batch)\n"

static void test_bad_files(void)
{
    char path[256], args[1024];
    /* missing */
    snprintf(path, sizeof path, "%s/nosuch.py", dir);
    snprintf(args, sizeof args, "compare -q " LENGTH "--pairs 2 -A %s -B adamw", path);
    CHECK(run(args) == 2 && has("compare: ") && has(path));
    printf("missing: %s", out);
    /* no update_params */
    write_file(path, sizeof path, "noupdate.py", "", NULL);
    snprintf(args, sizeof args, "compare -q " LENGTH "--pairs 2 -A adamw -B %s", path);
    CHECK(run(args) == 2 && has(path) && has("update_params"));
    printf("no update_params: %s", out);
    /* a search on a file without TUNING_SEARCH_SPACE, before any training */
    write_file(path, sizeof path, "nospace.py", "",
               UPDATE "    params.flat[:] -= 0.01 * params.flat_grads\n"
                      "    return state, params, model_state\n");
    snprintf(args, sizeof args, "compare " LENGTH "--pairs 2 --search 2 -A %s -B adamw", path);
    CHECK(run(args) == 2 && has("TUNING_SEARCH_SPACE") && has("--space-a") && !has("[1/"));
    /* an exception stops the comparison, naming the file, the function and the step */
    write_file(path, sizeof path, "raises.py", "",
               UPDATE "    if global_step == 2:\n        raise ValueError('no third step')\n"
                      "    return state, params, model_state\n");
    snprintf(args, sizeof args, "compare -q " LENGTH "--pairs 2 -A adamw -B %s", path);
    CHECK(run(args) == 1 && has(path) && has("update_params at step 3") &&
          has("ValueError: no third step"));
    printf("exception: %s", out);
    /* NaN weights: each run diverges and loses its pair */
    write_file(path, sizeof path, "nan.py", "",
               UPDATE "    params.flat[:] = float('nan')\n"
                      "    return state, params, model_state\n");
    snprintf(args, sizeof args, "compare -q --json " LENGTH "--pairs 2 -A %s -B adamw", path);
    CHECK(run(args) == 0 && has("\"failed_a\":2") && has("\"failed_b\":0") &&
          has("\"wins\":0") && has("\"losses\":2"));
    printf("NaN weights: %s", out);
    /* variance still runs the registry's optimizers only */
    CHECK(run("variance -a " NUMPY " --steps 2") == 2 && has("is a submission file") &&
          has("trainbench compare -A"));
}

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/tb_test_python_compare_%d", (int)getpid());
    mkdir(dir, 0700);
    test_pairs();
    test_bad_files();
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) printf("could not remove %s\n", dir);
    return tb_test_finish("test_python_compare");
}
#endif
