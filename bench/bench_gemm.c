/* bench_gemm.c: the CPU backend's matrix product against OpenBLAS sgemm, shape by shape.
 *
 *   bench_gemm [--threads N] [--repeats R] [--cold] [--json]
 *
 * For each product of the workloads' training steps (forward y = x W^T, backward dX = dY W and
 * dW = dY^T X of their linear layers), and a few small and square products for reference, it
 * times the backend's gemm entry (the one the steps call: its own sgemm above 2^19
 * multiply-adds, OpenBLAS below, split across threads when large) and cblas_sgemm with OpenBLAS
 * at the same thread count, alternating the two, each on the same operands, and keeps each
 * side's best of R rounds. Operands stay in cache between rounds (hot figures: a training step
 * meets them colder), unless --cold writes a 128 MB buffer before every timed call, as the
 * ops between a step's products do. Prints a table with the ratio backend / OpenBLAS, or JSON
 * lines. Not a test: docs/SPEED.md records its output. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cblas.h>

#include "backend/backend_impl.h"
#include "blas_kernels.h"
#include "trainbench/trainbench.h"

extern void openblas_set_num_threads(int num_threads);

typedef struct shape {
    const char *what;
    bool ta, tb;
    int m, n, k;
} shape;

/* The products of the training steps at their default batch sizes; linear layer in -> out
 * over R rows gives forward (N,T) R x out x in, dX (N,N) R x in x out, dW (T,N) out x in x R. */
#define LINEAR(name, rows, in, out)                                                             \
    {name " fwd", false, true, rows, out, in}, {name " dX", false, false, rows, in, out},       \
        {name " dW", true, false, out, in, rows}

static const shape shapes[] = {
    LINEAR("mlp 784->1024", 128, 784, 1024),
    LINEAR("mlp 1024->1024", 128, 1024, 1024),
    LINEAR("transformer qkv 128->384", 2048, 128, 384),
    LINEAR("transformer fc1 128->512", 2048, 128, 512),
    LINEAR("transformer fc2 512->128", 2048, 512, 128),
    LINEAR("autoencoder 784->1000", 128, 784, 1000),
    LINEAR("autoencoder 1000->500", 128, 1000, 500),
    LINEAR("autoencoder 500->250", 128, 500, 250),
    LINEAR("autoencoder 500->1000", 128, 500, 1000),
    LINEAR("autoencoder 1000->784", 128, 1000, 784),
    LINEAR("wordnet out 128->26851", 256, 128, 26851),
    {"small 64^3", false, false, 64, 64, 64},
    {"small 96^3", false, true, 96, 96, 96},
    {"square 1024^3", false, false, 1024, 1024, 1024},
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: bench_gemm [--threads N] [--repeats R] [--cold] [--json]\n"
               "Times the CPU backend's gemm against OpenBLAS sgemm on the training steps'\n"
               "products (best of R alternating rounds each, default 20, 1 thread).\n"
               "--cold writes 128 MB before every timed call: operands come from memory, as\n"
               "in a training step, instead of from cache.\n");
}

int main(int argc, char **argv)
{
    tb_cli_choose_runtime(argv);
    int threads = 1, repeats = 20, json = 0, cold = 0;
    struct option opts[] = {{"threads", required_argument, 0, 't'},
                            {"repeats", required_argument, 0, 'r'},
                            {"cold", no_argument, 0, 'c'},
                            {"json", no_argument, 0, 'j'},
                            {"help", no_argument, 0, 'h'},
                            {0, 0, 0, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 't': threads = atoi(optarg); break;
        case 'r': repeats = atoi(optarg); break;
        case 'j': json = 1; break;
        case 'c': cold = 1; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind < argc || threads < 1 || repeats < 1) {
        fprintf(stderr, "bench_gemm: %s\n",
                optind < argc ? "unexpected argument" : "--threads and --repeats must be >= 1");
        usage(stderr);
        return 2;
    }
    tb_backend_config cfg = {.device = TB_DEVICE_CPU, .threads = threads};
    tb_backend *be;
    tb_error err = {0};
    if (tb_backend_create(&cfg, &be, &err) != TB_OK) {
        fprintf(stderr, "bench_gemm: %s\n", err.message);
        return 1;
    }
    openblas_set_num_threads(threads);
    enum { FLUSH_BYTES = 128 << 20 };
    char *flush = cold ? malloc(FLUSH_BYTES) : NULL;
    if (cold && !flush) {
        fprintf(stderr, "bench_gemm: out of memory for the 128 MB flush buffer\n");
        return 1;
    }
    if (!json)
        printf("%-32s %2s %5s %5s %5s %9s %9s %6s\n", "product", "op", "m", "n", "k",
               "backend", "OpenBLAS", "ratio");
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const shape *p = &shapes[s];
        const int lda = p->ta ? p->m : p->k, ldb = p->tb ? p->k : p->n;
        const size_t na = (size_t)p->m * p->k, nb = (size_t)p->k * p->n, nc = (size_t)p->m * p->n;
        float *a = malloc(na * sizeof(float)), *b = malloc(nb * sizeof(float));
        float *y = malloc(nc * sizeof(float));
        if (!a || !b || !y) {
            fprintf(stderr, "bench_gemm: out of memory for %s\n", p->what);
            return 1;
        }
        tb_rng rng = tb_rng_make(1, 0);
        tb_rng_fill_uniform(&rng, a, (int64_t)na, -1, 1);
        tb_rng_fill_uniform(&rng, b, (int64_t)nb, -1, 1);
        double best_own = 1e30, best_blas = 1e30;
        for (int r = 0; r <= repeats; r++) { /* round 0 warms up */
            if (flush) memset(flush, r, FLUSH_BYTES);
            double t0 = now_s();
            be->ops.gemm(be, p->ta, p->tb, p->m, p->n, p->k, 1.0f, a, lda, b, ldb, 0.0f, y, p->n);
            double t1 = now_s();
            if (flush) memset(flush, r + 1, FLUSH_BYTES);
            double t2 = now_s();
            cblas_sgemm(CblasRowMajor, p->ta ? CblasTrans : CblasNoTrans,
                        p->tb ? CblasTrans : CblasNoTrans, p->m, p->n, p->k, 1.0f, a, lda, b, ldb,
                        0.0f, y, p->n);
            double t3 = now_s();
            if (r > 0 && t1 - t0 < best_own) best_own = t1 - t0;
            if (r > 0 && t3 - t2 < best_blas) best_blas = t3 - t2;
        }
        const double flop = 2.0 * p->m * (double)p->n * p->k;
        const double own = flop / best_own / 1e9, blas = flop / best_blas / 1e9;
        const char op[3] = {p->ta ? 'T' : 'N', p->tb ? 'T' : 'N', 0};
        if (json)
            printf("{\"product\":\"%s\",\"op\":\"%s\",\"m\":%d,\"n\":%d,\"k\":%d,\"threads\":%d,"
                   "\"cold\":%s,\"backend_gflops\":%.1f,\"openblas_gflops\":%.1f,"
                   "\"ratio\":%.3f}\n",
                   p->what, op, p->m, p->n, p->k, threads, cold ? "true" : "false", own, blas,
                   own / blas);
        else
            printf("%-32s %2s %5d %5d %5d %9.1f %9.1f %5.2fx\n", p->what, op, p->m, p->n, p->k,
                   own, blas, own / blas);
        free(a);
        free(b);
        free(y);
    }
    if (!json)
        printf("(GFLOP/s, best of %d rounds, %d thread%s%s)\n", repeats, threads,
               threads == 1 ? "" : "s", cold ? ", 128 MB written before every call" : "");
    free(flush);
    tb_backend_destroy(be);
    return 0;
}
