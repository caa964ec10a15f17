/* test_cuda_graph.c: whole training steps captured as a CUDA graph and replayed, against the
 * same steps run eagerly on the same GPU (tb_step_runner, tb_train's cuda_graph).
 *
 * Tolerance: losses and parameters agree within 1e-5 relative + 1e-6 absolute. The replay runs
 * the same kernels in the same order on one stream, so the results are expected to be
 * bit-identical; the tolerance only leaves room for cuBLAS choosing another algorithm inside a
 * capture. What a wrong replay would look like, and what catches it:
 *   - a learning rate or Adam bias correction frozen at capture: the learning-rate factor
 *     changes every step, so the parameters drift apart;
 *   - a frozen dropout counter (the same mask every step) or a frozen batch: the losses differ,
 *     and the dropout streams' counters must match exactly;
 *   - memory the graph reads being reused by an evaluation: tb_train evaluates between replays
 *     (fmnist_cnn with batch norm, kjv_transformer with embeddings and attention).
 * Also: an optimizer with host-side work per step (lars) runs eagerly and says why, and a step
 * that reads back to the host inside the capture fails with a message naming the call.
 *
 * Without a GPU (or without a driver) it prints "test_cuda_graph: skipped: no CUDA device
 * (...)" and exits 77, which ctest reports as skipped. */
#include "testutil.h"

#include "step_model.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define RTOL 1e-5
#define ATOL 1e-6
#define STEPS 7 /* 2 eager warm-up steps, the captured one, 4 replays */

static bool close_enough(double a, double b)
{
    if (a != a || b != b) return false;
    double m = fabs(a) > fabs(b) ? fabs(a) : fabs(b);
    return fabs(a - b) <= ATOL + RTOL * m;
}

static tb_backend *new_gpu(void)
{
    tb_backend_config cfg = {.device = TB_DEVICE_CUDA};
    tb_backend *be = NULL;
    tb_error err = {0};
    CHECK_OK(tb_backend_create(&cfg, &be, &err), &err);
    return be;
}

/* ---- the dropout model through the step runner ---------------------------------------------- */

typedef struct result {
    float loss[STEPS];
    float *values;
    int64_t n_values, replays, opt_steps;
    uint64_t dropout_counter;
} result;

static void run_model(const char *algorithm, bool graph, result *out)
{
    tb_error err = {0};
    tb_backend *be = new_gpu();
    if (!be) return;
    tb_hparams hp = {0};
    tb_hparams_set(&hp, "learning_rate", strcmp(algorithm, "adamw") == 0 ? 1e-2 : 0.05, NULL);
    tb_hparams_set(&hp, "weight_decay", 0.01, NULL);
    tb_step_config sc = {.loss = step_model_loss, .cuda_graph = graph};
    step_rig r;
    step_rig_create(&r, be, 64, 3, 11, algorithm, &hp, &sc);
    tb_rng drop = tb_rng_make(5, TB_STREAM_DROPOUT);
    for (int s = 0; r.ok && s < STEPS; s++) {
        double scale = 0.55 + 0.45 * cos(0.9 * s); /* a different learning rate every step */
        if (!CHECK_OK(tb_step_runner_step(r.runner, r.pipe, scale, &drop, &out->loss[s], NULL,
                                          &err),
                      &err))
            break;
    }
    if (r.ok) {
        CHECK(tb_step_runner_graphed(r.runner) == graph);
        out->replays = tb_step_runner_replays(r.runner);
        out->opt_steps = tb_optimizer_steps(r.opt);
        out->n_values = tb_params_numel(r.m.params);
        out->values = malloc((size_t)out->n_values * sizeof(float));
        tb_backend_download(be, out->values, tb_params_values(r.m.params),
                            (size_t)out->n_values * sizeof(float));
        out->dropout_counter = drop.counter;
        CHECK_OK(tb_backend_check(be, &err), &err);
    }
    step_rig_destroy(&r);
    tb_backend_destroy(be);
}

static void test_dropout_model(const char *algorithm)
{
    result e = {0}, g = {0};
    run_model(algorithm, false, &e);
    run_model(algorithm, true, &g);
    if (!e.values || !g.values) {
        CHECK(false);
        free(e.values);
        free(g.values);
        return;
    }
    CHECK(e.replays == 0 && g.replays == STEPS - 3);
    CHECK(e.opt_steps == STEPS && g.opt_steps == STEPS);
    CHECK(e.dropout_counter == g.dropout_counter);
    int bad = 0;
    for (int s = 0; s < STEPS; s++)
        if (!close_enough(e.loss[s], g.loss[s])) {
            fprintf(stderr, "%s step %d: eager loss %.9g, graph %.9g\n", algorithm, s + 1,
                    e.loss[s], g.loss[s]);
            bad++;
        }
    for (int64_t i = 0; i < e.n_values; i++)
        if (!close_enough(e.values[i], g.values[i]) && bad++ < 5)
            fprintf(stderr, "%s parameter %lld: eager %.9g, graph %.9g\n", algorithm,
                    (long long)i, e.values[i], g.values[i]);
    CHECK(bad == 0);
    printf("%s, dropout model: %d steps (%lld replayed), final loss eager %.6f graph %.6f\n",
           algorithm, STEPS, (long long)g.replays, e.loss[STEPS - 1], g.loss[STEPS - 1]);
    free(e.values);
    free(g.values);
}

/* ---- workloads through tb_train, with an evaluation between replays ----------------------- */

static tb_run_config train_config(const char *workload, const char *algorithm)
{
    tb_run_config c = tb_run_config_default();
    c.model.workload = workload;
    c.model.algorithm = algorithm;
    c.model.backend.device = TB_DEVICE_CUDA;
    c.length.max_steps = 6; /* 2 eager, captured at 3, evaluated after 3, replays 4 to 6 */
    c.eval.during = 2;
    c.eval.examples = 256;
    c.data.pipeline.prefetch = -1;
    return c;
}

static void test_train_workload(const char *workload)
{
    tb_run_config c = train_config(workload, "adamw");
    tb_train_result e, g;
    tb_error err = {0};
    CHECK_OK(tb_train(&c, NULL, &e, &err), &err);
    c.model.cuda_graph = true;
    CHECK_OK(tb_train(&c, NULL, &g, &err), &err);
    CHECK(e.graph_replays == 0 && g.graph_replays == 3 && g.graph_note[0] == '\0');
    CHECK(g.evaluations == e.evaluations && g.evaluations >= 2);
    CHECK(close_enough(e.final_train_loss, g.final_train_loss));
    CHECK(close_enough(e.validation.loss, g.validation.loss));
    CHECK(close_enough(e.test.loss, g.test.loss));
    printf("%s: final loss eager %.6f graph %.6f, validation loss %.6f / %.6f\n", workload,
           e.final_train_loss, g.final_train_loss, e.validation.loss, g.validation.loss);
}

static void test_fallback(void)
{
    tb_run_config c = train_config("fmnist_mlp", "lars");
    c.length.max_steps = 4;
    c.model.cuda_graph = true;
    tb_train_result r;
    tb_error err = {0};
    CHECK_OK(tb_train(&c, NULL, &r, &err), &err);
    CHECK(r.steps == 4 && r.graph_replays == 0);
    CHECK(strstr(r.graph_note, "lars") && strstr(r.graph_note, "eagerly"));
}

/* A model that reads its input back to the host: fine eagerly, refused inside the capture. */
static tb_var *reading_loss(void *user, tb_tape *t, const tb_batch *b, tb_rng *dropout,
                            tb_error *err)
{
    float first = 0;
    tb_tensor_download(&b->inputs->value, &first, NULL);
    (void)first;
    return step_model_loss(user, t, b, dropout, err);
}

static void test_capture_violation(void)
{
    tb_error err = {0};
    tb_backend *be = new_gpu();
    if (!be) return;
    tb_step_config sc = {.loss = reading_loss, .cuda_graph = true};
    step_rig r;
    step_rig_create(&r, be, 32, 0, 1, "sgd", NULL, &sc);
    tb_rng drop = tb_rng_make(1, TB_STREAM_DROPOUT);
    float loss;
    for (int s = 0; r.ok && s < 2; s++)
        CHECK_OK(tb_step_runner_step(r.runner, r.pipe, 1.0, &drop, &loss, NULL, &err), &err);
    if (r.ok)
        CHECK_FAILS(tb_step_runner_step(r.runner, r.pipe, 1.0, &drop, &loss, NULL, &err),
                    TB_ERR_INVALID, &err, "a download was asked for while capturing");
    CHECK(!tb_backend_capturing(be));
    CHECK_OK(tb_backend_check(be, &err), &err); /* the backend itself is fine */
    step_rig_destroy(&r);
    tb_backend_destroy(be);
}

int main(void)
{
    int code = 0;
    tb_backend *probe = tb_test_cuda_backend("test_cuda_graph", &code);
    if (!probe) return code;
    printf("cuda backend: %s\n", tb_backend_describe(probe));
    tb_backend_destroy(probe);

    test_dropout_model("sgd");
    test_dropout_model("adamw");
    test_train_workload("fmnist_cnn");
    test_train_workload("kjv_transformer");
    test_fallback();
    test_capture_violation();
    return tb_test_finish("test_cuda_graph");
}
