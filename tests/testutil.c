/* testutil.c: the test harness and the gradient checker. */
#include "testutil.h"

#include <sqlite3.h>

#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

tb_test_state *tb_test_state_get(void)
{
    static tb_test_state state;
    return &state;
}

bool tb_test_check(bool ok, const char *expr, const char *file, int line)
{
    tb_test_state *s = tb_test_state_get();
    if (ok) {
        s->passed++;
    } else {
        s->failed++;
        fprintf(stderr, "%s:%d: check failed: %s\n", file, line, expr);
    }
    return ok;
}

bool tb_test_check_near(double a, double b, double tol, const char *ea, const char *eb,
                        const char *file, int line)
{
    bool ok = fabs(a - b) <= tol;
    if (!ok)
        fprintf(stderr, "%s:%d: %s = %.9g, %s = %.9g, differ by %.3g > %.3g\n", file, line, ea, a,
                eb, b, fabs(a - b), tol);
    return tb_test_check(ok, "near", file, line);
}

bool tb_test_check_ok(tb_status st, const tb_error *err, const char *expr, const char *file,
                      int line)
{
    if (st != TB_OK)
        fprintf(stderr, "%s:%d: %s returned %s: %s\n", file, line, expr, tb_status_name(st),
                err ? err->message : "");
    return tb_test_check(st == TB_OK, expr, file, line);
}

bool tb_test_check_fails(tb_status st, tb_status want, const tb_error *err, const char *needle,
                         const char *expr, const char *file, int line)
{
    bool ok = st == want && (!needle || (err && strstr(err->message, needle)));
    if (!ok)
        fprintf(stderr, "%s:%d: %s returned %s (\"%s\"); wanted %s with \"%s\"\n", file, line,
                expr, tb_status_name(st), err ? err->message : "", tb_status_name(want),
                needle ? needle : "");
    return tb_test_check(ok, expr, file, line);
}

int tb_test_finish(const char *name)
{
    tb_test_state *s = tb_test_state_get();
    printf("%s: %d passed, %d failed\n", name, s->passed, s->failed);
    return s->failed == 0 && s->passed > 0 ? 0 : 1;
}

tb_backend *tb_test_backend(void)
{
    tb_backend_config cfg = {.device = TB_DEVICE_CPU, .threads = 2};
    tb_backend *be = NULL;
    tb_error err = {0};
    if (tb_backend_create(&cfg, &be, &err) != TB_OK) {
        fprintf(stderr, "cannot create the CPU backend: %s\n", err.message);
        exit(1);
    }
    return be;
}

tb_var *tb_test_var(tb_backend *be, int ndim, const int64_t *shape, tb_rng *rng, float lo,
                    float hi, bool requires_grad)
{
    tb_var *v = calloc(1, sizeof *v);
    tb_error err = {0};
    if (!v || tb_tensor_alloc(be, TB_F32, ndim, shape, &v->value, &err) != TB_OK ||
        tb_tensor_alloc(be, TB_F32, ndim, shape, &v->grad, &err) != TB_OK) {
        fprintf(stderr, "tb_test_var: %s\n", err.message);
        exit(1);
    }
    v->requires_grad = requires_grad;
    if (!requires_grad) tb_tensor_free(&v->grad);
    if (rng) {
        int64_t n = tb_tensor_numel(&v->value);
        float *host = malloc((size_t)(n ? n : 1) * sizeof(float));
        tb_rng_fill_uniform(rng, host, n, lo, hi);
        tb_tensor_upload(&v->value, host, NULL);
        free(host);
    }
    return v;
}

tb_var *tb_test_ivar(tb_backend *be, int ndim, const int64_t *shape, const int32_t *values)
{
    tb_var *v = calloc(1, sizeof *v);
    tb_error err = {0};
    if (!v || tb_tensor_alloc(be, TB_I32, ndim, shape, &v->value, &err) != TB_OK) {
        fprintf(stderr, "tb_test_ivar: %s\n", err.message);
        exit(1);
    }
    tb_tensor_upload(&v->value, values, NULL);
    v->grad = v->value;
    v->grad.data = NULL;
    return v;
}

void tb_test_var_free(tb_var *v)
{
    if (!v) return;
    tb_tensor_free(&v->value);
    if (v->grad.data) tb_tensor_free(&v->grad);
    free(v);
}

tb_var *tb_test_reduce(tb_tape *tape, tb_var *out)
{
    if (!out) return NULL;
    tb_var *target = tb_tape_new_var(tape, TB_F32, out->value.ndim, out->value.shape, false);
    if (!target) return NULL;
    int64_t n = tb_tensor_numel(&out->value);
    float *host = malloc((size_t)(n ? n : 1) * sizeof(float));
    tb_rng rng = tb_rng_make(12345, (uint64_t)n);
    tb_rng_fill_uniform(&rng, host, n, -2.0f, 2.0f);
    tb_tensor_upload(&target->value, host, NULL);
    free(host);
    return tb_op_mse(tape, out, target);
}

static double eval_loss(tb_tape *tape, tb_test_loss_fn fn, void *ctx, tb_var *const *inputs,
                        bool *ok)
{
    tb_tape_reset(tape);
    tb_tape_set_grad_enabled(tape, false);
    tb_var *loss = fn(tape, inputs, ctx);
    tb_tape_set_grad_enabled(tape, true);
    if (!loss) {
        fprintf(stderr, "gradcheck: forward failed: %s\n", tb_tape_error(tape)->message);
        *ok = false;
        return 0;
    }
    float v;
    tb_tensor_download(&loss->value, &v, NULL);
    return v;
}

bool tb_gradcheck(const char *name, tb_backend *be, tb_test_loss_fn fn, void *ctx,
                  tb_var *const *inputs, int n_inputs, double h, double atol, double rtol,
                  int max_checks)
{
    tb_tape *tape = NULL;
    tb_error err = {0};
    if (tb_tape_create(be, &tape, &err) != TB_OK) return CHECK(false);
    /* zero the gradients through a host buffer */
    for (int i = 0; i < n_inputs; i++) {
        if (!inputs[i]->requires_grad) continue;
        size_t bytes = tb_tensor_bytes(&inputs[i]->value);
        void *zeros = calloc(1, bytes ? bytes : 1);
        tb_backend_upload(be, inputs[i]->grad.data, zeros, bytes);
        free(zeros);
    }
    tb_var *loss = fn(tape, inputs, ctx);
    bool all_ok = true;
    if (!loss || tb_tape_backward(tape, loss) != TB_OK) {
        fprintf(stderr, "%s: forward/backward failed: %s\n", name, tb_tape_error(tape)->message);
        tb_tape_destroy(tape);
        return CHECK(false);
    }
    for (int i = 0; i < n_inputs; i++) {
        tb_var *v = inputs[i];
        if (!v->requires_grad) continue;
        int64_t n = tb_tensor_numel(&v->value);
        float *x = malloc((size_t)n * sizeof(float)), *g = malloc((size_t)n * sizeof(float));
        tb_tensor_download(&v->value, x, NULL);
        tb_tensor_download(&v->grad, g, NULL);
        int checks = n < max_checks ? (int)n : max_checks;
        tb_rng pick = tb_rng_make(777, (uint64_t)i);
        bool ok = true;
        double worst = 0;
        for (int c = 0; c < checks && ok; c++) {
            int64_t j = checks == n ? c : (int64_t)tb_rng_below(&pick, (uint64_t)n);
            float orig = x[j];
            float plus = orig + (float)h, minus = orig - (float)h;
            tb_backend_upload(be, (float *)v->value.data + j, &plus, sizeof plus);
            double lp = eval_loss(tape, fn, ctx, inputs, &ok);
            tb_backend_upload(be, (float *)v->value.data + j, &minus, sizeof minus);
            double lm = eval_loss(tape, fn, ctx, inputs, &ok);
            tb_backend_upload(be, (float *)v->value.data + j, &orig, sizeof orig);
            double numeric = (lp - lm) / ((double)plus - (double)minus);
            double analytic = g[j];
            double diff = fabs(numeric - analytic);
            double bound = atol + rtol * fmax(fabs(numeric), fabs(analytic));
            if (diff > worst) worst = diff;
            if (diff > bound) {
                fprintf(stderr, "%s: input %d element %lld: analytic %.6g, numeric %.6g\n", name,
                        i, (long long)j, analytic, numeric);
                ok = false;
            }
        }
        all_ok &= tb_test_check(ok, name, __FILE__, __LINE__);
        free(x);
        free(g);
    }
    tb_tape_destroy(tape);
    return all_ok;
}

float *tb_test_host_copy(const tb_var *v)
{
    int64_t n = tb_tensor_numel(&v->value);
    float *h = malloc((size_t)(n ? n : 1) * sizeof(float));
    if (!h) exit(1);
    tb_tensor_download(&v->value, h, NULL);
    return h;
}

tb_tape *tb_test_tape(tb_backend *be)
{
    tb_tape *t = NULL;
    tb_error err = {0};
    if (tb_tape_create(be, &t, &err) != TB_OK) {
        fprintf(stderr, "tape: %s\n", err.message);
        exit(1);
    }
    return t;
}

tb_params *tb_test_params_wb(tb_backend *be, const float *w, const float *b, const float *gw,
                             const float *gb)
{
    tb_params *p;
    tb_params_create(be, &p, NULL);
    int64_t s3 = 3, s2 = 2;
    tb_var *vw = tb_params_add(p, "w", TB_PARAM_WEIGHT, 1, &s3, NULL);
    tb_var *vb = tb_params_add(p, "b", TB_PARAM_BIAS, 1, &s2, NULL);
    tb_params_finalize(p, NULL);
    memcpy(vw->value.data, w, 3 * sizeof(float));
    memcpy(vb->value.data, b, 2 * sizeof(float));
    if (gw) memcpy(vw->grad.data, gw, 3 * sizeof(float));
    if (gb) memcpy(vb->grad.data, gb, 2 * sizeof(float));
    return p;
}

/* Runs `launcher TB_BINARY args`, its output into out. */
static int run_command(const char *launcher, const char *args, char *out, size_t cap)
{
    const char *bin = getenv("TB_BINARY");
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "%s%s %s 2>&1", launcher, bin ? bin : "./trainbench", args);
    FILE *p = popen(cmd, "r");
    if (!p) return -1;
    size_t n = fread(out, 1, cap - 1, p);
    out[n] = '\0';
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int tb_test_run_cli(const char *args, char *out, size_t cap)
{
    return run_command("", args, out, cap);
}

int tb_test_run_mpi(int np, const char *args, char *out, size_t cap)
{
    const char *mpiexec = getenv("TB_MPIEXEC");
    char launcher[512];
    snprintf(launcher, sizeof launcher, "%s --oversubscribe --allow-run-as-root -np %d ",
             mpiexec ? mpiexec : "mpiexec", np);
    return run_command(launcher, args, out, cap);
}

int64_t tb_test_query_int(const char *db, const char *sql)
{
    sqlite3 *h = NULL;
    sqlite3_stmt *q = NULL;
    int64_t v = -1;
    if (sqlite3_open(db, &h) == SQLITE_OK &&
        sqlite3_prepare_v2(h, sql, -1, &q, NULL) == SQLITE_OK && sqlite3_step(q) == SQLITE_ROW)
        v = sqlite3_column_int64(q, 0);
    sqlite3_finalize(q);
    sqlite3_close(h);
    return v;
}

double tb_test_json_number(const char *text, const char *key)
{
    char k[64];
    snprintf(k, sizeof k, "\"%s\":", key);
    const char *p = strstr(text, k);
    return p ? strtod(p + strlen(k), NULL) : NAN;
}

int tb_test_dist_main(const char *name, void (*one)(tb_dist *), void (*ranks)(tb_dist *))
{
    tb_dist *d = NULL;
    tb_error err = {0};
    if (!CHECK_OK(tb_dist_init(&d, &err), &err)) return tb_test_finish(name);
    if (tb_dist_size(d) == 1) one(d);
    else ranks(d);
    CHECK_OK(tb_dist_finalize(d, &err), &err);
    return tb_test_finish(name);
}

int tb_test_count(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)) != NULL; p++) n++;
    return n;
}

void tb_test_write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (!f) return;
    fputs(text, f);
    fclose(f);
}

bool tb_test_output_has(const char *out, const char *needle)
{
    bool ok = strstr(out, needle) != NULL;
    if (!ok) fprintf(stderr, "output lacks \"%s\":\n%s\n", needle, out);
    return ok;
}

tb_backend *tb_test_cuda_backend(const char *name, int *exit_code)
{
    tb_backend_config cfg = {.device = TB_DEVICE_CUDA, .device_index = 0};
    tb_backend *be = NULL;
    tb_error err = {0};
    tb_status st = tb_backend_create(&cfg, &be, &err);
    if (st == TB_OK) return be;
    if (st == TB_ERR_NO_DEVICE && strstr(err.message, "no CUDA device") != NULL) {
        const char *why = err.message;
        if (strncmp(why, "no CUDA device: ", 16) == 0) why += 16;
        printf("%s: skipped: no CUDA device (%s)\n", name, why);
        *exit_code = TB_TEST_SKIP;
        return NULL;
    }
    fprintf(stderr, "%s: cannot create the CUDA backend (%s): %s\n", name, tb_status_name(st),
            err.message);
    *exit_code = 1;
    return NULL;
}

tb_bench_spec tb_test_bench_spec(const char *const *subs, int n, double budget_s,
                                 int64_t examples)
{
    tb_bench_spec s = tb_bench_spec_default();
    static const char *wl[1] = {"fmnist_mlp"};
    s.name = "t";
    s.submissions = subs;
    s.n_submissions = n;
    s.workloads = wl;
    s.n_workloads = 1;
    s.studies = 1;
    s.trials = 1;
    s.budget_s = budget_s;
    s.eval_period_s = budget_s / 2;
    s.quick_targets = true;
    s.search_space_dir = TB_SOURCE_DIR "/search_spaces";
    s.trial.threads = 2;
    s.trial.eval_train_examples = examples;
    s.trial.eval_validation_examples = examples;
    s.trial.eval_test_examples = examples;
    s.calibration_s = -1; /* no calibration windows (test_time_basis takes them) */
    return s;
}

int tb_test_bench_in_child(const char *db, const tb_bench_spec *s)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        tb_bench_summary sum;
        tb_error err = {0};
        _exit(tb_bench_run(db, s, NULL, NULL, &sum, &err) == TB_OK ? 0 : 1);
    }
    return (int)pid;
}

int tb_test_count_trials(const char *db, const char *bench, tb_trial_status want,
                         int *with_evals)
{
    tb_store *store;
    tb_error err = {0};
    if (with_evals) *with_evals = 0;
    if (tb_store_open_readonly(db, &store, &err) != TB_OK) return -1;
    tb_trial_record *t = NULL;
    int n = 0, k = 0;
    tb_store_trials(store, bench, &t, &n, &err);
    for (int i = 0; i < n; i++) {
        if (t[i].status != want) continue;
        k++;
        tb_eval_record *ev = NULL;
        int ne = 0;
        tb_store_evals(store, t[i].id, &ev, &ne, &err);
        if (with_evals && ne > 0) (*with_evals)++;
        free(ev);
    }
    free(t);
    tb_store_close(store);
    return k;
}

void tb_test_sleep_s(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    nanosleep(&ts, NULL);
}

bool tb_test_child_exited(int pid, int *wst, bool *exited)
{
    if (*exited) return true;
    *exited = waitpid(pid, wst, WNOHANG) == pid;
    return *exited;
}

int tb_test_child_of(int pid)
{
    char path[96];
    snprintf(path, sizeof path, "/proc/%d/task/%d/children", pid, pid);
    FILE *f = fopen(path, "r");
    long c = 0;
    if (f && fscanf(f, "%ld", &c) != 1) c = 0;
    if (f) fclose(f);
    return (int)c;
}

void tb_test_remove_store(const char *path)
{
    static const char *const suffixes[] = {"", "-wal", "-shm", "-lock"};
    for (size_t i = 0; i < sizeof suffixes / sizeof *suffixes; i++) {
        char p[1100];
        snprintf(p, sizeof p, "%s%s", path, suffixes[i]);
        unlink(p);
    }
}

int64_t tb_test_add_trial(tb_store *store, const char *bench, const char *submission,
                          const char *workload, int study, int trial, const tb_hparams *hp,
                          tb_trial_status want, double err_rate, double ttt)
{
    tb_error err = {0};
    tb_trial_record t;
    memset(&t, 0, sizeof t);
    snprintf(t.benchmark, sizeof t.benchmark, "%s", bench);
    snprintf(t.submission, sizeof t.submission, "%s", submission);
    snprintf(t.submission_spec, sizeof t.submission_spec, "%s", submission);
    snprintf(t.workload, sizeof t.workload, "%s", workload);
    snprintf(t.ruleset, sizeof t.ruleset, "external");
    snprintf(t.metric, sizeof t.metric, "error_rate");
    t.study = study;
    t.trial = trial;
    if (hp) t.hparams = *hp;
    t.target = 0.2;
    t.budget_s = 10;
    t.eval_period_s = 1;
    t.stop_at_target = true;
    CHECK_OK(tb_store_plan_trial(store, &t, &err), &err);
    if (want == TB_TRIAL_PLANNED) return t.id;
    tb_eval_record e = {.validation_error = err_rate, .validation_loss = 1.0};
    CHECK_OK(tb_store_trial_start(store, t.id, "test", "{}", &err), &err);
    CHECK_OK(tb_store_add_eval(store, t.id, &e, &err), &err);
    CHECK_OK(tb_store_trial_finish(store, t.id, want, want == TB_TRIAL_FAILED ? "diverged" : "",
                                   ttt >= 0, ttt, 10, 100, &err), &err);
    return t.id;
}

void tb_test_read_trials(const char *db, const char *bench, tb_trial_record **t, int *n)
{
    tb_store *store;
    tb_error err = {0};
    *t = NULL;
    *n = 0;
    if (!CHECK_OK(tb_store_open_readonly(db, &store, &err), &err)) return;
    CHECK_OK(tb_store_trials(store, bench, t, n, &err), &err);
    tb_store_close(store);
}

int tb_test_evals_at_steps(const char *db, int64_t id, int every, tb_eval_record *out, int cap)
{
    tb_store *store;
    tb_error err = {0};
    if (!CHECK_OK(tb_store_open_readonly(db, &store, &err), &err)) return 0;
    tb_eval_record *e = NULL;
    int ne = 0, k = 0;
    CHECK_OK(tb_store_evals(store, id, &e, &ne, &err), &err);
    for (int i = 0; i < ne && k < cap; i++)
        if (e[i].step % every == 0) out[k++] = e[i];
    free(e);
    tb_store_close(store);
    return k;
}
