/* test_workloads.c: every workload and variant builds on its real data, declares its layers,
 * runs forward and backward on a small batch with a finite loss that decreases over a few
 * steps on that batch, and evaluates with the metric its info names; the registry lists at
 * least two variants per base workload with targets and budgets. */
#include "testutil.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static tb_backend *be;

static void test_registry(void)
{
    int n = tb_workload_count();
    CHECK(n >= 15);
    const char *bases[] = {"fmnist_mlp", "fmnist_cnn", "fmnist_autoencoder", "kjv_transformer",
                           "wordnet_sparse"};
    for (int b = 0; b < 5; b++) {
        int variants = 0;
        bool base_found = false;
        for (int i = 0; i < n; i++) {
            const tb_workload_info *w = tb_workload_info_at(i);
            if (strcmp(w->base, bases[b]) != 0) continue;
            if (strcmp(w->id, bases[b]) == 0) base_found = w->variant[0] == '\0';
            else variants += w->variant[0] != '\0';
        }
        CHECK(base_found);
        CHECK(variants >= 2);
    }
    for (int i = 0; i < n; i++) {
        const tb_workload_info *w = tb_workload_info_at(i);
        CHECK(w->validation_target > 0 && w->test_target > 0 && w->max_runtime_s > 0 &&
              w->eval_period_s > 0 && w->step_hint > 0 && w->data_source && w->loss_desc);
    }
}

static void test_one(const char *id, const char *cache)
{
    tb_error err = {0};
    tb_workload_config cfg = {.cache_dir = cache};
    tb_workload *wl;
    if (!CHECK_OK(tb_workload_create(id, be, &cfg, &wl, &err), &err)) return;
    const tb_workload_info *info = tb_workload_get_info(wl);
    tb_rng init = tb_rng_make(1, TB_STREAM_INIT);
    CHECK_OK(tb_workload_init(wl, &init, &err), &err);
    tb_layer_ref layers[64];
    int nl = tb_workload_layers(wl, layers, 64);
    CHECK(nl >= 2 && nl <= 64);
    CHECK(tb_workload_layers(wl, NULL, 0) == nl);
    tb_optimizer *opt;
    tb_hparams hp = {0};
    tb_hparams_set(&hp, "learning_rate", 1e-3, &err);
    CHECK_OK(tb_optimizer_create("adamw", tb_workload_params(wl), &hp, &opt, &err), &err);
    tb_tape *tape;
    tb_tape_create(be, &tape, &err);
    int64_t rows[16];
    for (int i = 0; i < 16; i++) rows[i] = i * 7;
    tb_rng drop = tb_rng_make(1, TB_STREAM_DROPOUT);
    float first = NAN, last = NAN;
    for (int step = 0; step < 6; step++) {
        tb_tape_reset(tape);
        tb_params_zero_grad(tb_workload_params(wl));
        tb_var *loss = tb_workload_loss(wl, tape, rows, 16, &drop); /* masks: dropout variants */
        if (!loss || tb_tape_backward(tape, loss) != TB_OK) {
            CHECK(!"forward/backward failed");
            printf("%s: %s\n", id, tb_tape_error(tape)->message);
            break;
        }
        float l;
        tb_tensor_download(&loss->value, &l, NULL);
        if (step == 0) first = l;
        last = l;
        if (step == 0) { /* after backward every layer has its input and output gradient */
            bool ok = true;
            for (int i = 0; i < nl; i++) {
                tb_linear_layer *ll = layers[i].linear;
                tb_conv_layer *cl = layers[i].conv;
                ok = ok && (ll ? ll->input && ll->output && ll->output->grad.data
                               : cl && cl->input && cl->output && cl->output->grad.data);
            }
            CHECK(ok);
            CHECK(tb_params_grad_norm(tb_workload_params(wl)) > 0);
        }
        CHECK_OK(tb_optimizer_step(opt, 1.0, &err), &err);
    }
    CHECK(isfinite(first) && isfinite(last));
    CHECK(last < first);
    tb_eval_metrics m;
    CHECK_OK(tb_workload_evaluate(wl, tape, TB_SPLIT_VALIDATION, 32, &m, &err), &err);
    CHECK(m.examples == 32 && isfinite(m.loss) && isfinite(m.metric));
    /* class labels and a prediction of them (the sparse-target variants have labels, no logits) */
    const bool labels = tb_workload_layout(wl).y_dtype == TB_I32;
    const bool classify = labels && !info->no_error_rate;
    CHECK(classify == !isnan(m.accuracy));
    CHECK(labels || info->no_error_rate); /* studies refuse error metrics before training */
    if (strcmp(info->metric, "error_rate") == 0) CHECK(m.metric == m.error_rate);
    else if (strcmp(info->metric, "bits_per_char") == 0)
        CHECK_NEAR(m.metric, m.loss / log(2), 1e-9);
    else CHECK(m.metric == m.loss);
    /* the Fisher loss needs outputs to sample from and a random stream */
    tb_tape_reset(tape);
    int64_t none[2] = {16, 0}, some[2] = {16, 3};
    tb_rng fisher = tb_rng_make(1, 77);
    CHECK(tb_workload_fisher_loss(wl, tape, tb_tape_new_var(tape, TB_F32, 2, none, false),
                                  &fisher) == NULL);
    CHECK(strstr(tb_tape_error(tape)->message, "outputs [16, 0]: nothing to sample") != NULL);
    tb_tape_reset(tape);
    CHECK(tb_workload_fisher_loss(wl, tape, tb_tape_new_var(tape, TB_F32, 0, NULL, false),
                                  &fisher) == NULL);
    CHECK(strstr(tb_tape_error(tape)->message, "nothing to sample") != NULL);
    tb_tape_reset(tape);
    CHECK(tb_workload_fisher_loss(wl, tape, tb_tape_new_var(tape, TB_F32, 2, some, false),
                                  NULL) == NULL);
    CHECK(strstr(tb_tape_error(tape)->message, "no random stream") != NULL);
    printf("%-26s %2d layers %9lld params  loss %.4f -> %.4f  %s %.4f\n", id, nl,
           (long long)tb_params_trainable(tb_workload_params(wl)), first, last, info->metric,
           m.metric);
    tb_tape_destroy(tape);
    tb_optimizer_destroy(opt);
    tb_workload_destroy(wl);
}

/* Scaled models (hardware runs): kjv_transformer with twice the width and depth has exactly
 * the parameters the architecture predicts from the unscaled one, runs a step, and the errors
 * name the cause (a workload without scales, too many blocks, negative scales). */
static void test_scaled_models(const char *cache)
{
    tb_error err = {0};
    tb_workload *base = NULL, *big = NULL, *bad = NULL;
    tb_workload_config c1 = {.cache_dir = cache, .train_limit = 512};
    tb_workload_config c2 = c1;
    c2.width_scale = 2;
    c2.depth_scale = 2;
    if (!CHECK_OK(tb_workload_create("kjv_transformer", be, &c1, &base, &err), &err)) return;
    if (CHECK_OK(tb_workload_create("kjv_transformer", be, &c2, &big, &err), &err)) {
        /* per block 12 c^2 + 13 c; plus V c + T c (embeddings), 2 c (final norm), c V + V */
        const double c = 128, t = 64, blocks = 2;
        double p1 = (double)tb_params_trainable(tb_workload_params(base));
        double v = (p1 - t * c - blocks * (12 * c * c + 13 * c) - 2 * c) / (2 * c + 1);
        CHECK(v == (double)(int64_t)v && v > 10); /* a whole vocabulary */
        const double c2w = 2 * c, b2 = 2 * blocks;
        double want = v * c2w + t * c2w + b2 * (12 * c2w * c2w + 13 * c2w) + 2 * c2w + c2w * v + v;
        CHECK((double)tb_params_trainable(tb_workload_params(big)) == want);
        tb_rng init = tb_rng_make(0, TB_STREAM_INIT);
        CHECK_OK(tb_workload_init(big, &init, &err), &err);
    }
    tb_workload_config bad_cfg = {.width_scale = 2};
    CHECK_FAILS(tb_workload_create("fmnist_mlp", be, &bad_cfg, &bad, &err), TB_ERR_UNSUPPORTED,
                &err, "no scaled model");
    bad_cfg = (tb_workload_config){.cache_dir = cache, .depth_scale = 8};
    CHECK_FAILS(tb_workload_create("kjv_transformer", be, &bad_cfg, &bad, &err), TB_ERR_INVALID,
                &err, "at most 15");
    bad_cfg = (tb_workload_config){.width_scale = -1};
    CHECK_FAILS(tb_workload_create("kjv_transformer", be, &bad_cfg, &bad, &err), TB_ERR_INVALID,
                &err, "must be >= 1");
    tb_workload_destroy(base);
    tb_workload_destroy(big);
}

int main(void)
{
    be = tb_test_backend();
    char cache[] = "/tmp/tb_test_workloads_XXXXXX";
    if (!mkdtemp(cache)) return 1;
    test_registry();
    for (int i = 0; i < tb_workload_count(); i++) test_one(tb_workload_info_at(i)->id, cache);
    test_scaled_models(cache);
    const char *files[] = {"kjv-chars.tbcache", "wordnet-glosses.tbcache",
                           "wordnet-glosses-all.tbcache", "wordnet-lemmas.tbcache"};
    for (int i = 0; i < 4; i++) {
        char path[256];
        snprintf(path, sizeof path, "%s/%s", cache, files[i]);
        unlink(path);
    }
    rmdir(cache);
    tb_backend_destroy(be);
    return tb_test_finish("test_workloads");
}
