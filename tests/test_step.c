/* test_step.c: the parts of CUDA-graph training that run on every backend, checked on the CPU:
 * the backend's step block (slots, alignment, zeroing, full block), the optimizers' split step
 * through the public calls (prepare + queue gives the bits of tb_optimizer_step and counts the
 * step; the values themselves are pinned by the closed-form and PyTorch tests of test_optim*,
 * which run through the split; the algorithms that cannot be split name why), the dropout kernel advancing its stream's counter, the step runner's eager path
 * against a hand-written training loop (bit-identical losses, parameters and dropout counter),
 * and the clear errors for CUDA graphs on the CPU backend. tests/test_cuda_graph.c runs the
 * graph side on a GPU. */
#include "testutil.h"

#include "step_model.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static tb_backend *be;

static void test_step_block(void)
{
    tb_error err = {0};
    unsigned char *a = tb_backend_step_alloc(be, 1);
    unsigned char *b = tb_backend_step_alloc(be, 100); /* two slots */
    unsigned char *c = tb_backend_step_alloc(be, 8);
    CHECK(a && b && c && (uintptr_t)a % 64 == 0 && b == a + 64 && c == a + 192);
    memset(a, 0xff, 64);
    tb_backend_step_free(be, a);
    unsigned char *d = tb_backend_step_alloc(be, 64); /* first fit: a's slot, zeroed */
    CHECK(d == a && d[0] == 0 && d[63] == 0);
    CHECK(tb_backend_step_alloc(be, 65536 + 1) == NULL);
    int n = 0;
    void *p[1100];
    while (n < 1100 && (p[n] = tb_backend_step_alloc(be, 64)) != NULL) n++;
    CHECK(n == 1024 - 4); /* 64 KiB of 64-byte slots, 4 taken */
    for (int i = 0; i < n; i++) tb_backend_step_free(be, p[i]);
    tb_backend_step_free(be, b);
    tb_backend_step_free(be, c);
    tb_backend_step_free(be, d);
    CHECK_OK(tb_backend_step_upload(be, &err), &err); /* the CPU reads host memory: nothing */
    CHECK(!tb_backend_capturing(be));
}

/* Parameters w (weight [3, 4]) and b (bias [4]) with fixed values. */
static tb_params *small_params(void)
{
    tb_params *p = NULL;
    tb_params_create(be, &p, NULL);
    const int64_t sw[2] = {3, 4}, sb[1] = {4};
    tb_params_add(p, "w", TB_PARAM_WEIGHT, 2, sw, NULL);
    tb_params_add(p, "b", TB_PARAM_BIAS, 1, sb, NULL);
    tb_params_finalize(p, NULL);
    float *v = tb_params_values(p);
    for (int i = 0; i < 16; i++) v[i] = 0.1f * (float)(i - 7);
    return p;
}

static void set_grads(tb_params *p, int step)
{
    float *g = tb_params_grads(p);
    for (int i = 0; i < 16; i++) g[i] = 0.05f * (float)((i * 7 + step * 3) % 11 - 5);
}

static void test_split_step(void)
{
    const char *split[] = {"sgd", "momentum", "nesterov", "rmsprop", "adagrad",
                           "adam", "adamw", "nadam", "nadamw"};
    const double scales[3] = {1.0, 0.5, 0.125};
    tb_error err = {0};
    for (size_t k = 0; k < sizeof split / sizeof *split; k++) {
        tb_params *pa = small_params(), *pb = small_params();
        tb_hparams hp = {0};
        tb_hparams_set(&hp, "learning_rate", 0.05, NULL);
        tb_hparams_set(&hp, "weight_decay", 0.01, NULL);
        tb_optimizer *oa = NULL, *ob = NULL;
        CHECK_OK(tb_optimizer_create(split[k], pa, &hp, &oa, &err), &err);
        CHECK_OK(tb_optimizer_create(split[k], pb, &hp, &ob, &err), &err);
        if (!oa || !ob) continue;
        CHECK(tb_optimizer_graph_blocker(oa) == NULL);
        for (int s = 0; s < 3; s++) {
            set_grads(pa, s);
            set_grads(pb, s);
            CHECK_OK(tb_optimizer_step(oa, scales[s], &err), &err);
            CHECK_OK(tb_optimizer_step_prepare(ob, scales[s], &err), &err);
            CHECK_OK(tb_optimizer_step_queue(ob, &err), &err);
        }
        bool same = memcmp(tb_params_values(pa), tb_params_values(pb), 16 * sizeof(float)) == 0;
        if (!same) fprintf(stderr, "%s: prepare + queue differs from step\n", split[k]);
        CHECK(same && tb_optimizer_steps(ob) == 3);
        tb_optimizer_destroy(oa);
        tb_optimizer_destroy(ob);
        tb_params_destroy(pa);
        tb_params_destroy(pb);
    }
    /* algorithms with host-side work every step say what it is */
    const char *eager[] = {"lars", "lamb", "kfac", "ekfac", "shampoo"};
    const char *why[] = {"norms", "norms", "host", "host", "host"};
    for (size_t k = 0; k < sizeof eager / sizeof *eager; k++) {
        tb_params *p = small_params();
        tb_optimizer *o = NULL;
        CHECK_OK(tb_optimizer_create(eager[k], p, NULL, &o, &err), &err);
        if (o) {
            const char *blocker = tb_optimizer_graph_blocker(o);
            CHECK(blocker && strstr(blocker, why[k]));
            CHECK_FAILS(tb_optimizer_step_prepare(o, 1.0, &err), TB_ERR_UNSUPPORTED, &err,
                        eager[k]);
        }
        tb_optimizer_destroy(o);
        tb_params_destroy(p);
    }
    tb_params *p = small_params();
    tb_optimizer *o = NULL;
    CHECK_OK(tb_optimizer_create("adamw", p, NULL, &o, &err), &err);
    CHECK_FAILS(tb_optimizer_step_queue(o, &err), TB_ERR_INVALID, &err, "before any");
    CHECK_FAILS(tb_optimizer_step_prepare(o, -1.0, &err), TB_ERR_INVALID, &err, "-1");
    tb_optimizer_destroy(o);
    tb_params_destroy(p);
}

/* One training run of the dropout model, through the runner or by hand; returns the losses.
 * no_loss_after >= 0: runner steps from that one on read no loss back (loss NULL). */
typedef struct run_out {
    float loss[4];
    float *values;
    uint64_t dropout_counter;
} run_out;

static void train_model(bool by_runner, int no_loss_after, run_out *out)
{
    tb_error err = {0};
    tb_hparams hp = {0};
    tb_hparams_set(&hp, "learning_rate", 1e-2, NULL);
    tb_step_config sc = {.loss = step_model_loss};
    step_rig r;
    step_rig_create(&r, be, 64, 3, 11, "adamw", &hp, by_runner ? &sc : NULL);
    tb_rng drop = tb_rng_make(5, TB_STREAM_DROPOUT);
    for (int s = 0; r.ok && s < 4; s++) {
        double scale = 1.0 / (1 + s);
        if (by_runner) {
            int64_t n = 0;
            float *loss = no_loss_after >= 0 && s >= no_loss_after ? NULL : &out->loss[s];
            CHECK_OK(tb_step_runner_step(r.runner, r.pipe, scale, &drop, loss, &n, &err), &err);
            CHECK(n == 64);
            continue;
        }
        tb_tape_reset(r.tape);
        tb_params_zero_grad(r.m.params);
        tb_batch b;
        CHECK_OK(tb_pipeline_next(r.pipe, r.tape, &b, &err), &err);
        tb_var *loss = step_model_loss(&r.m, r.tape, &b, &drop, &err);
        CHECK_OK(tb_tape_backward(r.tape, loss), tb_tape_error(r.tape));
        tb_tensor_download(&loss->value, &out->loss[s], NULL);
        CHECK_OK(tb_optimizer_step(r.opt, scale, &err), &err);
    }
    if (r.ok) {
        int64_t n = tb_params_numel(r.m.params);
        out->values = malloc((size_t)n * sizeof(float));
        memcpy(out->values, tb_params_values(r.m.params), (size_t)n * sizeof(float));
        out->dropout_counter = drop.counter - tb_rng_make(5, TB_STREAM_DROPOUT).counter;
    }
    if (r.runner) {
        CHECK(!tb_step_runner_graphed(r.runner) && tb_step_runner_replays(r.runner) == 0);
        CHECK(tb_step_runner_note(r.runner)[0] == '\0');
    }
    step_rig_destroy(&r);
}

static void test_runner_eager(void)
{
    run_out a = {0}, b = {0}, c = {0};
    train_model(true, -1, &a);
    train_model(false, -1, &b);
    train_model(true, 2, &c); /* the last two steps without reading the loss: the same update */
    if (!a.values || !b.values || !c.values) return;
    CHECK(memcmp(a.values, c.values, (784 * 32 + 32 * 3 + 32 * 10 + 10) * sizeof(float)) == 0);
    CHECK(memcmp(a.loss, c.loss, 2 * sizeof(float)) == 0);
    free(c.values);
    CHECK(memcmp(a.loss, b.loss, sizeof a.loss) == 0);
    CHECK(memcmp(a.values, b.values, (784 * 32 + 32 * 3 + 32 * 10 + 10) * sizeof(float)) == 0);
    /* the dropout kernel advanced the stream by ceil(64 * 32 / 4) blocks per step */
    CHECK(a.dropout_counter == 4 * 512 && b.dropout_counter == a.dropout_counter);
    CHECK(a.loss[3] < a.loss[0]); /* it learns */
    free(a.values);
    free(b.values);
}

static void test_cpu_errors(void)
{
    tb_error err = {0};
    tb_tape *tape = NULL;
    step_model m = {0};
    tb_optimizer *opt = NULL;
    tb_step_runner *runner = NULL;
    CHECK_OK(tb_tape_create(be, &tape, &err), &err);
    CHECK(step_model_create(&m, be, 1));
    CHECK_OK(tb_optimizer_create("sgd", m.params, NULL, &opt, &err), &err);
    tb_step_config sc = {.loss = step_model_loss, .user = &m, .cuda_graph = true};
    CHECK_FAILS(tb_step_runner_create(tape, m.params, opt, &sc, &runner, &err),
                TB_ERR_UNSUPPORTED, &err, "cuda backend");
    sc.cuda_graph = false;
    sc.warmup_steps = -1;
    CHECK_FAILS(tb_step_runner_create(tape, m.params, opt, &sc, &runner, &err), TB_ERR_INVALID,
                &err, "warmup_steps = -1");
    tb_optimizer_destroy(opt);
    step_model_destroy(&m);
    tb_tape_destroy(tape);

    tb_run_config c = tb_run_config_default();
    c.model.backend.threads = 2;
    c.length.max_steps = 3;
    c.model.cuda_graph = true;
    tb_train_result r;
    CHECK_FAILS(tb_train(&c, NULL, &r, &err), TB_ERR_UNSUPPORTED, &err, "cuda backend");
}

int main(void)
{
    be = tb_test_backend();
    test_step_block();
    test_split_step();
    test_runner_eager();
    test_cpu_errors();
    tb_backend_destroy(be);
    return tb_test_finish("test_step");
}
