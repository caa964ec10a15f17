/* bench_optim.c: the time of one optimizer update alone (tb_optimizer_step: the gradients'
 * finiteness check and the update kernels), on the parameter shapes of fmnist_mlp
 * (784-1024-1024-10: three weights and three biases, 1.86 M values), as JSON.
 *
 *   bench_optim --algorithm lion --threads 2 --steps 200 --warmup 20
 *
 * Values and gradients are fixed uniform draws in [-0.01, 0.01) (the same gradients every step:
 * an update's cost does not depend on their values). Reports the mean and the fastest ms per
 * step over --steps timed steps. Not a test: bench/optim_speed.py runs it next to the
 * reference implementations' step() on the same shapes and threads. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "trainbench/trainbench.h"

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void fill(tb_tensor *t, tb_rng *rng)
{
    int64_t n = tb_tensor_numel(t);
    float *h = malloc((size_t)n * sizeof(float));
    for (int64_t i = 0; i < n; i++)
        h[i] = (float)(0.02 * tb_rng_uniform(rng) - 0.01);
    tb_tensor_upload(t, h, NULL);
    free(h);
}

static int fail(const tb_error *err)
{
    fprintf(stderr, "bench_optim: %s\n", err->message);
    return 1;
}

int main(int argc, char **argv)
{
    const char *algorithm = "adamw";
    int threads = 1, steps = 200, warmup = 20;
    struct option opts[] = {{"algorithm", required_argument, 0, 'a'},
                            {"threads", required_argument, 0, 't'},
                            {"steps", required_argument, 0, 's'},
                            {"warmup", required_argument, 0, 'w'},
                            {0, 0, 0, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "a:t:s:w:", opts, NULL)) != -1) {
        if (c == 'a')
            algorithm = optarg;
        else if (c == 't')
            threads = atoi(optarg);
        else if (c == 's')
            steps = atoi(optarg);
        else if (c == 'w')
            warmup = atoi(optarg);
        else {
            fprintf(stderr, "usage: bench_optim --algorithm NAME --threads N --steps S "
                            "--warmup W\n");
            return 2;
        }
    }
    if (threads < 1 || steps < 1 || warmup < 0) {
        fprintf(stderr, "bench_optim: --threads and --steps must be >= 1, --warmup >= 0\n");
        return 2;
    }
    tb_error err = {0};
    tb_backend *be = NULL;
    tb_backend_config bc = {.device = TB_DEVICE_CPU, .threads = threads};
    if (tb_backend_create(&bc, &be, &err) != TB_OK) return fail(&err);
    tb_params *p = NULL;
    if (tb_params_create(be, &p, &err) != TB_OK) return fail(&err);
    static const int64_t widths[] = {784, 1024, 1024, 10};
    tb_var *vars[6];
    for (int l = 0; l < 3; l++) {
        char name[16];
        int64_t ws[2] = {widths[l + 1], widths[l]}, bs[1] = {widths[l + 1]};
        snprintf(name, sizeof name, "fc%d.weight", l + 1);
        vars[2 * l] = tb_params_add(p, name, TB_PARAM_WEIGHT, 2, ws, NULL);
        snprintf(name, sizeof name, "fc%d.bias", l + 1);
        vars[2 * l + 1] = tb_params_add(p, name, TB_PARAM_BIAS, 1, bs, NULL);
    }
    if (tb_params_finalize(p, &err) != TB_OK) return fail(&err);
    tb_rng rng = tb_rng_make(1, 0);
    for (int i = 0; i < 6; i++) {
        fill(&vars[i]->value, &rng);
        fill(&vars[i]->grad, &rng);
    }
    tb_optimizer *opt = NULL;
    if (tb_optimizer_create(algorithm, p, NULL, &opt, &err) != TB_OK) return fail(&err);
    double total = 0, best = 1e30;
    for (int s = 0; s < warmup + steps; s++) {
        double t0 = now_s();
        if (tb_optimizer_step(opt, 1.0, &err) != TB_OK) return fail(&err);
        tb_backend_sync(be);
        double dt = now_s() - t0;
        if (s < warmup) continue;
        total += dt;
        if (dt < best) best = dt;
    }
    printf("{\"algorithm\":\"%s\",\"threads\":%d,\"numel\":%lld,\"steps\":%d,"
           "\"ms_per_step\":%.4f,\"best_ms\":%.4f}\n",
           algorithm, threads, (long long)tb_params_numel(p), steps, 1e3 * total / steps,
           1e3 * best);
    tb_optimizer_destroy(opt);
    tb_params_destroy(p);
    tb_backend_destroy(be);
    return 0;
}
