/* bench_update.c: the optimizer's update step alone, on fmnist_mlp's parameter shapes, as JSON.
 *
 *   bench_update --algorithm muon --threads 2 --steps 20 --warmup 3 [--hp NAME=VALUE ...]
 *
 * Parameters fc1 [1024, 784], fc2 [1024, 1024], fc3 [10, 1024] (weights) and their biases,
 * filled with uniform values and fresh uniform gradients, as fmnist_mlp registers them; times
 * --steps calls of tb_optimizer_step after --warmup untimed ones (the warm-up covers SOAP's
 * first step, which only builds its bases, and the first refreshes) and reports ms per update.
 * The gradients do not change between steps (the update's cost does not depend on them).
 * Not a test: bench/torch_update.py times the PyTorch references on the same shapes, and
 * docs/SPEED.md has the ratios. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "trainbench/trainbench.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int usage(void)
{
    fprintf(stderr, "usage: bench_update --algorithm NAME [--threads N] [--steps N] "
                    "[--warmup N] [--hp NAME=VALUE]...\n");
    return 2;
}

int main(int argc, char **argv)
{
    const char *algorithm = NULL;
    int threads = 1, steps = 20, warmup = 3;
    tb_hparams hp = {0};
    tb_error err = {0};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) return usage();
        if (strcmp(a, "--algorithm") == 0)
            algorithm = v;
        else if (strcmp(a, "--threads") == 0)
            threads = atoi(v);
        else if (strcmp(a, "--steps") == 0)
            steps = atoi(v);
        else if (strcmp(a, "--warmup") == 0)
            warmup = atoi(v);
        else if (strcmp(a, "--hp") == 0) {
            if (tb_hparams_parse_assignment(&hp, v, &err) != TB_OK) {
                fprintf(stderr, "bench_update: %s\n", err.message);
                return 2;
            }
        } else
            return usage();
        i++;
    }
    if (!algorithm || threads < 1 || steps < 1 || warmup < 0) return usage();
    tb_backend_config bc = {.device = TB_DEVICE_CPU, .threads = threads};
    tb_backend *be = NULL;
    tb_params *p = NULL;
    tb_optimizer *opt = NULL;
    const int64_t shapes[6][2] = {{1024, 784}, {1024, 0},  {1024, 1024},
                                  {1024, 0},   {10, 1024}, {10, 0}};
    const char *names[6] = {"fc1.weight", "fc1.bias",   "fc2.weight",
                            "fc2.bias",   "fc3.weight", "fc3.bias"};
    tb_status st = tb_backend_create(&bc, &be, &err);
    if (st == TB_OK) st = tb_params_create(be, &p, &err);
    tb_var *vars[6] = {0};
    for (int i = 0; st == TB_OK && i < 6; i++) {
        bool w = shapes[i][1] > 0;
        vars[i] = tb_params_add(p, names[i], w ? TB_PARAM_WEIGHT : TB_PARAM_BIAS, w ? 2 : 1,
                                shapes[i], &err);
        if (!vars[i]) st = err.status;
    }
    if (st == TB_OK) st = tb_params_finalize(p, &err);
    tb_rng rng = tb_rng_make(1, 0);
    for (int i = 0; st == TB_OK && i < 6; i++) {
        int64_t n = tb_tensor_numel(&vars[i]->value);
        float *host = malloc((size_t)n * sizeof *host);
        tb_rng_fill_uniform(&rng, host, n, -0.03f, 0.03f);
        tb_tensor_upload(&vars[i]->value, host, NULL);
        tb_rng_fill_uniform(&rng, host, n, -1e-3f, 1e-3f);
        tb_tensor_upload(&vars[i]->grad, host, NULL);
        free(host);
    }
    if (st == TB_OK) st = tb_optimizer_create(algorithm, p, &hp, &opt, &err);
    for (int i = 0; st == TB_OK && i < warmup; i++)
        st = tb_optimizer_step(opt, 1.0, &err);
    double t0 = now_s();
    for (int i = 0; st == TB_OK && i < steps; i++)
        st = tb_optimizer_step(opt, 1.0, &err);
    tb_backend_sync(be);
    double dt = now_s() - t0;
    if (st != TB_OK) {
        fprintf(stderr, "bench_update: %s\n", err.message);
        return 1;
    }
    printf("{\"algorithm\": \"%s\", \"threads\": %d, \"steps\": %d, \"ms_per_update\": %.3f}\n",
           algorithm, threads, steps, 1e3 * dt / steps);
    tb_optimizer_destroy(opt);
    tb_params_destroy(p);
    tb_backend_destroy(be);
    return 0;
}
