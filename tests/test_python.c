/* test_python.c: Python submissions. examples/adamw_numpy.py trains fmnist_mlp along the
 * built-in adamw's trajectory (the same losses at the same steps, to a relative 1e-5; the
 * update is the same float32 operations); an exception, a crash (os.abort), a hang, a missing
 * import, a container returned in place of the updated one, NaN weights, a function of the
 * wrong signature and writes past the arrays' ends through numpy (an index, resize, a longer
 * ndarray, frombuffer or reshape over the buffer: each raises) are each a failed trial with the reason while the other trials finish; a file that lacks a required function, or does
 * not parse, is refused naming it; the torch.optim adapter (examples/adamw_torch.py) follows
 * adamw too (to 1e-3) where torch is importable and is skipped, saying so, where it is not. Skipped (77) in a build
 * without Python. */
#include "testutil.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef TB_WITH_PYTHON
int main(void)
{
    printf("test_python: skipped: this build has no Python (TB_WITH_PYTHON off)\n");
    return 77;
}
#else

static char dir[128];

/* A submission file in the test's directory: the functions of a plain SGD step, with `body`
 * run in update_params before it (at global_step 0, the first step) and `top` at the top. */
static void write_sub(char *path, size_t cap, const char *name, const char *top,
                      const char *body)
{
    snprintf(path, cap, "%s/%s.py", dir, name);
    char text[4096];
    snprintf(text, sizeof text,
             "import os, time\n%s\n"
             "def get_batch_size(workload_name):\n    return 64\n"
             "def init_optimizer_state(workload, params, model_state, hp, rng):\n"
             "    return {}\n"
             "def update_params(workload, params, types, model_state, hp, batch, loss_type,\n"
             "                  state, eval_results, global_step, rng):\n"
             "    workload.loss_and_grad(batch)\n"
             "    if global_step == 0:\n        %s\n"
             "    params.flat[:] -= 0.05 * params.flat_grads\n"
             "    return state, params, model_state\n",
             top, body);
    tb_test_write_text(path, text);
}

static tb_trial_record *find(tb_trial_record *t, int n, const char *submission)
{
    for (int i = 0; i < n; i++)
        if (strcmp(t[i].submission, submission) == 0) return &t[i];
    return NULL;
}

/* The train and validation losses of a and b at the steps both evaluated at agree to a
 * relative tol; returns how many steps were compared. */
static int compare_evals(tb_store *store, int64_t a, int64_t b, double tol)
{
    tb_eval_record *ea, *eb;
    int na, nb, same = 0;
    tb_error err = {0};
    CHECK_OK(tb_store_evals(store, a, &ea, &na, &err), &err);
    CHECK_OK(tb_store_evals(store, b, &eb, &nb, &err), &err);
    for (int i = 0; i < na; i++)
        for (int j = 0; j < nb; j++) {
            if (ea[i].step != eb[j].step) continue;
            same++;
            double dt = fabs(ea[i].train_loss - eb[j].train_loss) / fabs(ea[i].train_loss);
            double dv = fabs(ea[i].validation_loss - eb[j].validation_loss) /
                        fabs(ea[i].validation_loss);
            printf("  step %lld: train loss %.9g vs %.9g, validation %.9g vs %.9g\n",
                   (long long)ea[i].step, ea[i].train_loss, eb[j].train_loss,
                   ea[i].validation_loss, eb[j].validation_loss);
            CHECK(dt <= tol && dv <= tol);
        }
    free(ea);
    free(eb);
    return same;
}

static void test_trajectory(void)
{
    char db[256];
    snprintf(db, sizeof db, "%s/trajectory.db", dir);
    const char *subs[2] = {"adamw", TB_SOURCE_DIR "/examples/adamw_numpy.py"};
    tb_bench_spec s = tb_test_bench_spec(subs, 2, 4.0, 200);
    s.trial.eval_every_steps = 1; /* a busy machine may take few steps in the budget */
    s.run_to_budget = true;
    tb_bench_summary sum;
    tb_error err = {0};
    CHECK_OK(tb_bench_run(db, &s, NULL, NULL, &sum, &err), &err);
    CHECK(sum.failed == 0);
    tb_store *store;
    CHECK_OK(tb_store_open(db, &store, &err), &err);
    tb_trial_record *t;
    int n;
    CHECK_OK(tb_store_trials(store, "t", &t, &n, &err), &err);
    tb_trial_record *builtin = find(t, n, "adamw"), *numpy = find(t, n, "adamw_numpy");
    CHECK(builtin && numpy);
    if (builtin && numpy) {
        /* the same Halton point: the numpy file's space is search_spaces/adamw.json */
        CHECK(tb_hparams_get(&numpy->hparams, "learning_rate", 0) ==
              tb_hparams_get(&builtin->hparams, "learning_rate", 1));
        printf("adamw (%lld steps) vs adamw_numpy (%lld steps):\n", (long long)builtin->steps,
               (long long)numpy->steps);
        CHECK(compare_evals(store, builtin->id, numpy->id, 1e-5) >= 1);
    }
    free(t);
    tb_store_close(store);
}

static void test_failures(void)
{
    char exc[256], abrt[256], hang[256], imp[256], rebind[256], nan[256], sig[256], oob[256];
    write_sub(exc, sizeof exc, "raises", "", "raise ZeroDivisionError('step two')");
    write_sub(abrt, sizeof abrt, "aborts", "", "os.abort()");
    write_sub(hang, sizeof hang, "hangs", "", "time.sleep(1e6)");
    write_sub(imp, sizeof imp, "imports", "import no_such_module_here", "pass");
    write_sub(rebind, sizeof rebind, "rebinds", "", "return state, dict(params), model_state");
    write_sub(nan, sizeof nan, "nans", "", "params.flat[:] = float('nan')");
    /* writes past the arrays' ends through numpy's own API: each one raises */
    write_sub(oob, sizeof oob, "bounds",
              "import numpy as np\n"
              "def escape(params):\n"
              "    w = params.flat\n"
              "    a = params[next(iter(params))]\n"
              "    tries = [lambda: w.__setitem__(w.size, 1.0),\n"
              "             lambda: w.resize(w.size + 16),\n"
              "             lambda: np.ndarray(w.size + 16, np.float32, buffer=w).fill(1.0),\n"
              "             lambda: np.frombuffer(w, np.float32, count=w.size + 16).fill(1.0),\n"
              "             lambda: w.reshape(w.size + 16).fill(1.0),\n"
              "             lambda: a.flat.__setitem__(a.size, 1.0)]\n"
              "    refused = 0\n"
              "    for t in tries:\n"
              "        try:\n"
              "            t()\n"
              "        except (IndexError, ValueError, TypeError):\n"
              "            refused += 1\n"
              "    raise RuntimeError('out-of-bounds writes refused: %d of %d' % (refused, "
              "len(tries)))\n",
              "escape(params)");
    snprintf(sig, sizeof sig, "%s/signature.py", dir);
    tb_test_write_text(sig, "def get_batch_size(workload_name):\n    return 64\n"
                            "def init_optimizer_state(workload, params, model_state, hp, rng):\n"
                            "    return {}\n"
                            "def update_params(workload, params):\n    return None\n");
    char db[256];
    snprintf(db, sizeof db, "%s/failures.db", dir);
    const char *subs[8] = {exc, abrt, imp, rebind, nan, sig, oob, "sgd"};
    tb_bench_spec s = tb_test_bench_spec(subs, 8, 1.0, 200);
    s.ruleset = TB_RULESET_SELF;
    tb_bench_summary sum;
    tb_error err = {0};
    CHECK_OK(tb_bench_run(db, &s, NULL, NULL, &sum, &err), &err);
    CHECK(sum.ran == 8 && sum.failed == 7);
    /* the hang alone, under a hang limit of 2 s (a slow sanitizer build on a busy machine
     * can take that long over a step of the others) */
    const char *hung[1] = {hang};
    tb_bench_spec h = tb_test_bench_spec(hung, 1, 1.0, 200);
    h.name = "h";
    h.ruleset = TB_RULESET_SELF;
    h.trial.hang_s = 2;
    CHECK_OK(tb_bench_run(db, &h, NULL, NULL, &sum, &err), &err);
    CHECK(sum.ran == 1 && sum.failed == 1);
    tb_store *store;
    CHECK_OK(tb_store_open(db, &store, &err), &err);
    tb_trial_record *t, *th;
    int n, nh;
    CHECK_OK(tb_store_trials(store, "t", &t, &n, &err), &err);
    CHECK_OK(tb_store_trials(store, "h", &th, &nh, &err), &err);
    static const char *const want[][2] = {
        {"raises", "update_params at step 1: Python: ZeroDivisionError: step two (at "},
        {"aborts", "killed by signal 6"},
        {"imports", "ModuleNotFoundError: No module named 'no_such_module_here'"},
        {"rebinds", "returned other parameters than the container it was given"},
        {"nans", "diverged: "},
        {"signature", "TypeError: update_params() takes 2 positional arguments but 11"},
        {"bounds", "RuntimeError: out-of-bounds writes refused: 6 of 6"},
        {"hangs", "hung: the trial process completed no step for 2 s"},
    };
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
        tb_trial_record *r = find(t, n, want[i][0]);
        if (!r) r = find(th, nh, want[i][0]);
        CHECK(r && r->status == TB_TRIAL_FAILED && strstr(r->reason, want[i][1]));
        if (r) printf("%s: %s\n", want[i][0], r->reason);
    }
    tb_trial_record *sgd = find(t, n, "sgd");
    CHECK(sgd && sgd->status == TB_TRIAL_DONE && sgd->steps > 0);
    free(th);
    free(t);
    tb_store_close(store);
}

static void test_refused(void)
{
    char path[256];
    snprintf(path, sizeof path, "%s/noupdate.py", dir);
    tb_test_write_text(path, "def get_batch_size(w):\n    return 8\n"
                             "def init_optimizer_state(w, p, m, h, r):\n    return None\n");
    tb_submission_ref *ref = NULL;
    tb_error err = {0};
    CHECK_FAILS(tb_submission_load(path, NULL, &ref, &err), TB_ERR_INVALID, &err,
                "does not define update_params");
    snprintf(path, sizeof path, "%s/syntax.py", dir);
    tb_test_write_text(path, "def get_batch_size(w)\n    return 8\n");
    CHECK_FAILS(tb_submission_load(path, NULL, &ref, &err), TB_ERR_INVALID, &err,
                "SyntaxError");
    CHECK_FAILS(tb_submission_load("no_such_file.py", NULL, &ref, &err), TB_ERR_INVALID, &err,
                "does not exist");
    /* empty; invalid UTF-8; a directory and a FIFO (refused before anything opens them) */
    snprintf(path, sizeof path, "%s/empty.py", dir);
    tb_test_write_text(path, "");
    CHECK_FAILS(tb_submission_load(path, NULL, &ref, &err), TB_ERR_INVALID, &err,
                "does not define get_batch_size");
    snprintf(path, sizeof path, "%s/latin1.py", dir);
    tb_test_write_text(path, "x = '\xe9t\xe9'\n");
    CHECK_FAILS(tb_submission_load(path, NULL, &ref, &err), TB_ERR_INVALID, &err,
                "SyntaxError");
    snprintf(path, sizeof path, "%s/adir.py", dir);
    mkdir(path, 0700);
    CHECK_FAILS(tb_submission_load(path, NULL, &ref, &err), TB_ERR_INVALID, &err,
                "not a regular file");
    snprintf(path, sizeof path, "%s/fifo.py", dir);
    CHECK(mkfifo(path, 0600) == 0);
    CHECK_FAILS(tb_submission_load(path, NULL, &ref, &err), TB_ERR_INVALID, &err,
                "not a regular file");
    printf("refused: %s\n", err.message);
    /* the example loads, with its name and its search space */
    CHECK_OK(tb_submission_load(TB_SOURCE_DIR "/examples/adamw_numpy.py", NULL, &ref, &err),
             &err);
    CHECK(ref && strcmp(tb_submission_ref_name(ref), "adamw_numpy") == 0 &&
          strstr(tb_submission_ref_search_space(ref), "learning_rate"));
    tb_submission_unload(ref);
}

/* The torch.optim adapter, where the embedded interpreter can import torch: torch.optim.AdamW
 * on the engine's buffers follows the built-in adamw (to a relative 1e-3: torch divides by
 * sqrt(v) / sqrt(1 - beta2^t) + eps, adamw by sqrt(v / (1 - beta2^t)) + eps). */
static void test_torch(void)
{
    char db[256];
    snprintf(db, sizeof db, "%s/torch.db", dir);
    const char *subs[2] = {"adamw", TB_SOURCE_DIR "/examples/adamw_torch.py"};
    tb_bench_spec s = tb_test_bench_spec(subs, 2, 3.0, 200);
    s.trial.eval_every_steps = 1;
    s.run_to_budget = true;
    tb_bench_summary sum;
    tb_error err = {0};
    CHECK_OK(tb_bench_run(db, &s, NULL, NULL, &sum, &err), &err);
    tb_store *store;
    CHECK_OK(tb_store_open(db, &store, &err), &err);
    tb_trial_record *t;
    int n;
    CHECK_OK(tb_store_trials(store, "t", &t, &n, &err), &err);
    tb_trial_record *builtin = find(t, n, "adamw"), *torch = find(t, n, "adamw_torch");
    CHECK(builtin && torch);
    if (torch && strstr(torch->reason, "No module named 'torch'")) {
        printf("torch adapter: skipped: the embedded interpreter cannot import torch (%s)\n",
               torch->reason);
    } else if (builtin && torch) {
        printf("torch adapter: %s in %lld steps; adamw (%lld steps) vs adamw_torch:\n",
               torch->reason, (long long)torch->steps, (long long)builtin->steps);
        CHECK(torch->status == TB_TRIAL_DONE);
        CHECK(compare_evals(store, builtin->id, torch->id, 1e-3) >= 1);
    }
    free(t);
    tb_store_close(store);
}

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/tb_test_python_%d", (int)getpid());
    mkdir(dir, 0700);
    test_refused();
    test_trajectory();
    test_failures();
    test_torch();
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) printf("could not remove %s\n", dir);
    return tb_test_finish("test_python");
}
#endif
