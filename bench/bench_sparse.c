/* bench_sparse.c: the sparse-target output layer's forward + backward + update time, naive vs
 * exact (docs/SPARSE_TARGETS.md), on synthetic data: batches of m = 256 one-hot targets, over
 * D and d, against the paper's predicted speedup D / (4 d), with each form's memory. Naive and
 * exact are timed alternately, best of R rounds, so the two share the machine's noise. The
 * exact step's time includes its renormalisation (O(D d^2), timed on its own, best of R) spread
 * over its period: exact = step + renorm / 100 (the layer's default period).
 *   build/bench_sparse [--D 10000,27000,54000,155000] [--d 64,128,256,512] [--rounds 3] */
#include "trainbench/sparse_out.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define M 256
#define RENORM_PERIOD 100.0 /* tb_sparse_out_defaults' */

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int parse_list(const char *s, long *out, int max)
{
    int n = 0;
    for (char *end; *s && n < max; s = *end ? end + 1 : end) out[n++] = strtol(s, &end, 10);
    return n;
}

/* seconds of one step (best of rounds); -1 on failure */
static double time_step(tb_sparse_out *l, const float *h, const int32_t *idx)
{
    tb_error err = {0};
    static float dh[M * 512];
    tb_sparse_target y = {.m = M, .k = 1, .idx = idx};
    double loss, t0 = now();
    if (tb_sparse_out_forward(l, h, &y, &loss, &err) != TB_OK ||
        tb_sparse_out_backward_update(l, 1.0f, 1e-4f, dh, false, &err) != TB_OK) {
        fprintf(stderr, "bench_sparse: %s\n", err.message);
        return -1;
    }
    return now() - t0;
}

static double time_renorm(tb_sparse_out *l)
{
    double t0 = now();
    tb_sparse_out_renormalise(l);
    return now() - t0;
}

int main(int argc, char **argv)
{
    long Ds[8] = {10000, 27000, 54000, 155000}, ds[8] = {64, 128, 256, 512};
    int nD = 4, nd = 4, rounds = 3;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--D")) nD = parse_list(argv[i + 1], Ds, 8);
        else if (!strcmp(argv[i], "--d")) nd = parse_list(argv[i + 1], ds, 8);
        else if (!strcmp(argv[i], "--rounds")) rounds = atoi(argv[i + 1]);
    }
    printf("| D | d | naive ms | exact step ms | renorm ms | exact ms | speedup | D/(4d) | "
           "naive MB | exact MB |\n"
           "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
    static float h[M * 512];
    int32_t idx[M];
    for (int i = 0; i < M * 512; i++) h[i] = (float)((i * 2654435761u) % 1000) / 1000.0f - 0.5f;
    for (int a = 0; a < nD; a++)
        for (int b = 0; b < nd; b++) {
            int64_t D = Ds[a], d = ds[b];
            for (int i = 0; i < M; i++) idx[i] = (int32_t)((i * 7919) % D);
            tb_sparse_out *l[2] = {NULL, NULL};
            int64_t bytes[2];
            tb_error err = {0};
            for (int f = 0; f < 2; f++) {
                tb_sparse_out_config c = tb_sparse_out_defaults(D, d, M, 1, TB_SPARSE_SQUARED,
                                                                f ? TB_SPARSE_EXACT : TB_SPARSE_NAIVE);
                c.renorm_period = 1000000; /* renormalisation timed apart, below */
                if (tb_sparse_out_bytes(&c, &bytes[f], &err) != TB_OK ||
                    tb_sparse_out_create(&c, &l[f], &err) != TB_OK) {
                    fprintf(stderr, "bench_sparse: %s\n", err.message);
                    return 1;
                }
            }
            double best[3] = {1e30, 1e30, 1e30};
            for (int r = 0; r < rounds; r++) {
                for (int f = 0; f < 2; f++) {
                    double t = time_step(l[f], h, idx);
                    if (t < 0) return 1;
                    if (t < best[f]) best[f] = t;
                }
                double t = time_renorm(l[1]);
                if (t < best[2]) best[2] = t;
            }
            double exact = best[1] + best[2] / RENORM_PERIOD;
            printf("| %lld | %lld | %.2f | %.3f | %.2f | %.3f | %.1f | %.1f | %.0f | %.0f |\n",
                   (long long)D, (long long)d, 1e3 * best[0], 1e3 * best[1], 1e3 * best[2],
                   1e3 * exact, best[0] / exact, (double)D / (4.0 * d), bytes[0] / 1048576.0,
                   bytes[1] / 1048576.0);
            fflush(stdout);
            tb_sparse_out_destroy(l[0]);
            tb_sparse_out_destroy(l[1]);
        }
    return 0;
}
