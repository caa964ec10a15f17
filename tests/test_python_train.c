/* test_python_train.c: `trainbench train -a FILE.py`. examples/adamw_numpy.py trains
 * fmnist_mlp along `train -a adamw`'s trajectory at the same seed and hyperparameters (constant
 * learning rate: a submission schedules itself): the same validation losses at every
 * evaluation (the progress lines' 4 decimals), the same final validation and test figures
 * (the JSON's 6 digits), and the final training loss to a relative 1e-4; a Python exception in
 * update_params, or in the file's top level, is an error naming the file with a non-zero exit;
 * variance refuses a submission file, saying how to run it; --help says so. Skipped
 * (77) in a build without Python. */
#include "testutil.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef TB_WITH_PYTHON
int main(void)
{
    printf("test_python_train: skipped: this build has no Python (TB_WITH_PYTHON off)\n");
    return 77;
}
#else

static char out[1 << 16], dir[128];

static int run(const char *args) { return tb_test_run_cli(args, out, sizeof out); }
static bool has(const char *s) { return strstr(out, s) != NULL; }

#define TRAIN "train -w fmnist_mlp --steps 30 --evals 3 --schedule constant --seed 3 " \
              "--hp learning_rate=2e-3 --hp weight_decay=0.05 "

/* The losses of the progress lines' evaluations ("validation error_rate X  loss Y"), in
 * order; how many (at most cap). */
static int eval_losses(double *loss, int cap)
{
    int n = 0;
    for (const char *p = out; n < cap && (p = strstr(p, "  validation ")); p++) {
        const char *l = strstr(p, "  loss ");
        if (l && sscanf(l, "  loss %lf", &loss[n]) == 1) n++;
    }
    return n;
}

static double json_number(const char *key)
{
    const char *p = strstr(out, key);
    return p ? strtod(p + strlen(key), NULL) : -1;
}

/* The text of the JSON object after `key` (e.g. "\"validation\":"), braces included, into
 * buf ("" when absent). */
static void object_of(const char *key, char *buf, size_t cap)
{
    const char *p = strstr(out, key);
    size_t n = p ? strcspn(p, "}") + 1 : 0;
    snprintf(buf, cap, "%.*s", (int)n, p ? p : "");
}

/* One run a side, with --json: the progress lines (stderr) give the evaluations during the
 * run, the JSON the final figures. */
static void test_trajectory(void)
{
    double a[8], b[8];
    char va[256], vb[256], ta[256], tb[256];
    CHECK(run(TRAIN "--json -a adamw") == 0);
    int na = eval_losses(a, 8);
    object_of("\"validation\":", va, sizeof va);
    object_of("\"test\":", ta, sizeof ta);
    double la = json_number("\"final_train_loss\":"), ea = json_number("\"evaluations\":");
    CHECK(has("\"status\":\"ok\"") && has("\"learning_rate\":0.002"));
    CHECK(run(TRAIN "--json -a " TB_SOURCE_DIR "/examples/adamw_numpy.py") == 0);
    printf("%s", out);
    int nb = eval_losses(b, 8);
    object_of("\"validation\":", vb, sizeof vb);
    object_of("\"test\":", tb, sizeof tb);
    double lb = json_number("\"final_train_loss\":"), eb = json_number("\"evaluations\":");
    CHECK(na == 3 && nb == na); /* the evaluations during the run */
    for (int i = 0; i < na && i < nb; i++) {
        printf("  evaluation %d: validation loss %.4f (adamw) vs %.4f (numpy)\n", i, a[i], b[i]);
        CHECK(a[i] == b[i]);
    }
    /* the final validation and test figures (error rate, accuracy, loss to 6 digits) */
    CHECK(strstr(va, "\"loss\":") && strcmp(va, vb) == 0 && strstr(ta, "\"loss\":") &&
          strcmp(ta, tb) == 0);
    CHECK(has("\"algorithm\":\"" TB_SOURCE_DIR "/examples/adamw_numpy.py\"") &&
          has("\"steps\":30,"));
    printf("  final training loss %.6g (adamw) vs %.6g (numpy); %g and %g evaluations\n", la,
           lb, ea, eb);
    CHECK(la > 0 && fabs(la - lb) <= 1e-4 * la && ea == 4 && eb == ea);
    CHECK(has("\"status\":\"ok\"") && has("\"learning_rate\":0.002"));
}

static void test_exceptions(void)
{
    char path[256], args[512];
    snprintf(path, sizeof path, "%s/raises.py", dir);
    tb_test_write_text(path,
                       "def get_batch_size(workload_name):\n    return 32\n"
                       "def init_optimizer_state(workload, params, model_state, hp, rng):\n"
                       "    return {}\n"
                       "def update_params(workload, params, types, model_state, hp, batch,\n"
                       "                  loss_type, state, eval_results, global_step, rng):\n"
                       "    workload.loss_and_grad(batch)\n"
                       "    if global_step == 2:\n"
                       "        raise ValueError('no third step')\n"
                       "    params.flat[:] -= 0.01 * params.flat_grads\n"
                       "    return state, params, model_state\n");
    snprintf(args, sizeof args, "train -q -w fmnist_mlp --steps 5 -a %s", path);
    int rc = run(args);
    printf("%s", out);
    CHECK(rc != 0 && has(path) && has("update_params at step 3") && has("ValueError") &&
          has("no third step"));
    snprintf(path, sizeof path, "%s/top.py", dir);
    tb_test_write_text(path,
                       "raise RuntimeError('broken at import')\n"
                       "def get_batch_size(workload_name):\n    return 32\n"
                       "def init_optimizer_state(workload, params, model_state, hp, rng):\n"
                       "    return {}\n"
                       "def update_params(workload, params, types, model_state, hp, batch,\n"
                       "                  loss_type, state, eval_results, global_step, rng):\n"
                       "    return state, params, model_state\n");
    snprintf(args, sizeof args, "train -q -w fmnist_mlp --steps 5 -a %s", path);
    rc = run(args);
    printf("%s", out);
    CHECK(rc != 0 && has(path) && has("RuntimeError") && has("broken at import"));
}

static void test_help_and_refusals(void)
{
    CHECK(run("train --help") == 0 && has("or a submission file: a .py"));
    CHECK(run("variance -a " TB_SOURCE_DIR "/examples/adamw_numpy.py --steps 2") == 2 &&
          has("is a submission file") && has("trainbench train -a"));
}

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/tb_test_python_train_%d", (int)getpid());
    mkdir(dir, 0700);
    test_trajectory();
    test_exceptions();
    test_help_and_refusals();
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) printf("could not remove %s\n", dir);
    return tb_test_finish("test_python_train");
}
#endif
