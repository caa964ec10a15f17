/* bench_step.c: training-step throughput of one workload on this machine, as JSON.
 *
 *   bench_step --workload fmnist_mlp --algorithm sgd --threads 2 --steps 200 --warmup 20
 *   bench_step --workload fmnist_cnn --device cuda --cuda-graph
 *
 * Times whole training steps (input pipeline, forward, backward, update) after a warm-up
 * (tb_throughput_run: one window of --steps steps, as `trainbench hw` times its windows), and
 * reports examples/s, ms/step, achieved GEMM FLOP/s of the step and peak resident memory.
 * --device cuda runs on the GPU; --cuda-graph (cuda only) captures one step as a CUDA graph
 * during the warm-up and replays it for the timed steps (tb_step_runner; an optimizer with
 * host-side work per step stays eager and the JSON says why). The GEMM FLOP/s of replayed
 * steps are not counted (the host does not see their products).
 * With --profile it also prints, to stderr, where the step's time goes: per op (forward and
 * backward, from the tape's profiler) and the rest of the step (optimizer update, input,
 * zeroing gradients), then per matrix product (tb_backend_product_profile: each shape and
 * epilogue's calls per step, its mean and fastest call and their GFLOP/s, against the ceiling
 * bench_gemm measures for the same product alone); synchronising per op slows the step, so a
 * profiled run's examples/s is lower than a plain run's. The JSON's cpu_ms_per_step is the process's CPU time per step (at
 * 1 thread, a cost that another busy process on the machine barely changes, unlike wall time).
 * --width-scale W / --depth-scale D build a larger model (kjv_transformer: W times the channels
 * and heads, D times the blocks) and --precision picks the products' precision (bf16 on cuda);
 * model_tflops is the matrix-product work of one eager step (counted by the backend; attention's
 * internal products are not counted on the CPU) times the steps over the time, and with
 * --peak-tflops P the JSON also gives mfu = model_tflops / P (e.g. P = 989 for an H200's dense
 * bf16 peak).
 * --static-split splits each large product into one block per thread, as before the dynamic
 * split (docs/SPEED.md "Under contention" compares the two).
 * With --sgemm N it instead measures the OpenBLAS sgemm ceiling on N x N matrices. Not a test:
 * bench/speed.py runs it side by side with the PyTorch version of the same model. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cblas.h>

#include "blas_kernels.h"
#include "trainbench/trainbench.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

extern void openblas_set_num_threads(int num_threads);

static int sgemm_ceiling(int n, int threads, int repeats)
{
    tb_backend_config cfg = {.device = TB_DEVICE_CPU, .threads = threads};
    tb_backend *be;
    tb_error err = {0};
    if (tb_backend_create(&cfg, &be, &err) != TB_OK) {
        fprintf(stderr, "bench_step: %s\n", err.message);
        return 1;
    }
    /* the backend runs OpenBLAS single-threaded (backend.h); the ceiling is OpenBLAS's own
     * threaded sgemm at the backend's thread count */
    openblas_set_num_threads(tb_backend_threads(be));
    float *a = malloc((size_t)n * n * sizeof(float)), *b = malloc((size_t)n * n * sizeof(float));
    float *c = malloc((size_t)n * n * sizeof(float));
    tb_rng rng = tb_rng_make(1, 0);
    tb_rng_fill_uniform(&rng, a, (int64_t)n * n, -1, 1);
    tb_rng_fill_uniform(&rng, b, (int64_t)n * n, -1, 1);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1, a, n, b, n, 0, c, n);
    double best = 1e30;
    for (int r = 0; r < repeats; r++) {
        double t0 = now_s();
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1, a, n, b, n, 0, c, n);
        double t = now_s() - t0;
        if (t < best) best = t;
    }
    printf("{\"sgemm_n\":%d,\"threads\":%d,\"gflops\":%.1f}\n", n, threads,
           2.0 * n * (double)n * n / best / 1e9);
    free(a);
    free(b);
    free(c);
    tb_backend_destroy(be);
    return 0;
}

/* The per-op table: ms per step forward, backward, and share of the step. */
static void print_profile(const tb_throughput_result *r)
{
    double ops_s = 0, total_s = r->timed_s;
    int64_t steps = r->steps;
    fprintf(stderr, "%-26s %7s %10s %10s %7s\n", "op", "calls", "fwd ms", "bwd ms", "share");
    for (int i = 0; i < r->profile_ops; i++) {
        const tb_op_profile *op = &r->profile[i];
        double tot = op->forward_s + op->backward_s;
        ops_s += tot;
        fprintf(stderr, "%-26s %7.1f %10.3f %10.3f %6.1f%%\n", op->name,
                (double)op->calls / steps, 1e3 * op->forward_s / steps,
                1e3 * op->backward_s / steps, 100.0 * tot / total_s);
    }
    double rest = total_s - ops_s;
    fprintf(stderr, "%-26s %7s %10.3f %10s %6.1f%%\n", "rest (update, input, zero)", "",
            1e3 * rest / steps, "", 100.0 * rest / total_s);
}

/* The product table: each shape's calls a step, mean and fastest call, their GFLOP/s, and the
 * share of the step. */
static void print_products(const tb_throughput_result *r)
{
    fprintf(stderr, "\n%-2s %5s %5s %5s %-18s %6s %9s %9s %7s %7s %6s\n", "op", "m", "n", "k",
            "epilogue", "calls", "mean us", "best us", "GF/s", "best", "share");
    double sum = 0;
    for (int i = 0; i < r->product_entries; i++) {
        const tb_product_profile *p = &r->products[i];
        const double flop = 2.0 * p->m * (double)p->n * p->k * p->batch;
        const double mean = p->total_s / (double)p->calls;
        sum += p->total_s;
        fprintf(stderr, "%c%c %5d %5d %5d %-18s %6.1f %9.1f %9.1f %7.1f %7.1f %5.1f%%\n",
                p->trans_a ? 'T' : 'N', p->trans_b ? 'T' : 'N', p->m, p->n, p->k,
                p->batch > 1 ? "(batched)" : p->epilogue, (double)p->calls / (double)r->steps,
                1e6 * mean, 1e6 * p->best_s, flop / mean / 1e9, flop / p->best_s / 1e9,
                100.0 * p->total_s / r->timed_s);
    }
    fprintf(stderr, "products: %.1f%% of the step\n", 100.0 * sum / r->timed_s);
}

static void usage(FILE *f)
{
    fprintf(f, "usage: bench_step [--workload ID] [--algorithm NAME] [--threads N]\n"
               "                  [--steps N] [--warmup N (>= 1)] [--batch-size N]\n"
               "                  [--device cpu|cuda] [--cuda-graph] [--profile]\n"
               "                  [--width-scale W] [--depth-scale D]\n"
               "                  [--precision fp32|tf32|bf16] [--peak-tflops P]\n"
               "                  [--static-split]\n"
               "       bench_step --sgemm N [--threads N]\n"
               "Times training steps of one workload and prints one JSON line (examples/s,\n"
               "ms/step, GEMM FLOP/s, peak memory); --profile adds a per-op table and a\n"
               "per-product table (shape, epilogue, mean and fastest call) on stderr;\n"
               "--sgemm N measures the OpenBLAS sgemm ceiling on N x N matrices instead.\n"
               "--threads: CPU threads (default 1; 0: all cores, which the JSON's backend\n"
               "names); --batch-size 0 (default): the workload's own.\n");
}

int main(int argc, char **argv)
{
    tb_cli_choose_runtime(argv); /* OpenBLAS kernels, wait policy: as the trainbench command */
    const char *workload = "fmnist_mlp", *algorithm = "sgd";
    int threads = 1, steps = 200, warmup = 20, batch = 0, sgemm = 0, profile = 0;
    int width_scale = 1, depth_scale = 1;
    double peak_tflops = 0;
    tb_precision precision = TB_PRECISION_FP32;
    bool cuda_graph = false, static_split = false;
    tb_device device = TB_DEVICE_CPU;
    tb_error err = {0};
    struct option opts[] = {
        {"workload", required_argument, 0, 'w'}, {"algorithm", required_argument, 0, 'a'},
        {"threads", required_argument, 0, 't'},  {"steps", required_argument, 0, 's'},
        {"warmup", required_argument, 0, 'u'},   {"batch-size", required_argument, 0, 'b'},
        {"sgemm", required_argument, 0, 'g'},    {"device", required_argument, 0, 'd'},
        {"cuda-graph", no_argument, 0, 'c'},     {"profile", no_argument, 0, 'p'},
        {"width-scale", required_argument, 0, 'W'}, {"depth-scale", required_argument, 0, 'D'},
        {"precision", required_argument, 0, 'P'}, {"peak-tflops", required_argument, 0, 'T'},
        {"static-split", no_argument, 0, 'S'},
        {"help", no_argument, 0, 'h'},           {0, 0, 0, 0},
    };
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'w': workload = optarg; break;
        case 'a': algorithm = optarg; break;
        case 't': threads = atoi(optarg); break;
        case 's': steps = atoi(optarg); break;
        case 'u': warmup = atoi(optarg); break;
        case 'b': batch = atoi(optarg); break;
        case 'g': sgemm = atoi(optarg); break;
        case 'c': cuda_graph = true; break;
        case 'S': static_split = true; break;
        case 'p': profile = 1; break;
        case 'W': width_scale = atoi(optarg); break;
        case 'D': depth_scale = atoi(optarg); break;
        case 'T': peak_tflops = atof(optarg); break;
        case 'P':
            if (tb_precision_parse(optarg, &precision, &err) == TB_OK) break;
            fprintf(stderr, "bench_step: --precision: %s\n", err.message);
            return 2;
        case 'd':
            if (tb_device_parse(optarg, &device, &err) == TB_OK) break;
            fprintf(stderr, "bench_step: --device: %s\n", err.message);
            return 2;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (sgemm > 0) return sgemm_ceiling(sgemm, threads, 5);
    if (cuda_graph && device != TB_DEVICE_CUDA) {
        fprintf(stderr, "bench_step: --cuda-graph needs --device cuda\n");
        return 2;
    }

    /* one window of exactly `steps` steps after the warm-up; no loss read back, so a device's
     * steps are not waited for one by one */
    tb_throughput_config tc = tb_throughput_config_default();
    tc.workload = workload;
    tc.algorithm = algorithm;
    tb_hparams_set(&tc.hparams, "learning_rate", 0.01, NULL);
    tc.backend = (tb_backend_config){.device = device, .threads = threads, .precision = precision,
                                     .static_split = static_split};
    tc.data.width_scale = width_scale;
    tc.data.depth_scale = depth_scale;
    tc.batch_size = batch;
    tc.warmup_steps = warmup;
    tc.window_steps = steps;
    tc.cuda_graph = cuda_graph;
    tc.profile = profile;
    tb_throughput_result *r = calloc(1, sizeof *r);
    tb_status st = r ? tb_throughput_run(&tc, r, &err)
                     : tb_fail(&err, TB_ERR_NOMEM, "cannot allocate the result");
    if (st == TB_OK) {
        double dt = r->timed_s;
        printf("{\"workload\":\"%s\",\"algorithm\":\"%s\",\"threads\":%d,\"batch_size\":%d,"
               "\"steps\":%lld,\"examples_per_s\":%.1f,\"ms_per_step\":%.3f,"
               "\"cpu_ms_per_step\":%.3f,\"gemm_gflops\":%.1f,\"model_tflops\":%.3f,"
               "\"mfu\":%.4f,\"parameters\":%lld,\"peak_rss_mb\":%.1f,\"cuda_graph\":%s,"
               "\"graph_replays\":%lld,\"graph_note\":\"%s\",\"backend\":\"%s\","
               "\"static_split\":%s}\n",
               workload, algorithm, threads, r->batch_size, (long long)r->steps,
               (double)r->examples / dt, r->ms_per_step, r->cpu_ms_per_step,
               (double)r->gemm_flops / dt / 1e9,
               (double)r->step_gemm_flops * (double)r->steps / dt / 1e12,
               peak_tflops > 0
                   ? (double)r->step_gemm_flops * (double)r->steps / dt / 1e12 / peak_tflops
                   : 0.0,
               (long long)r->parameters, r->peak_rss_mb, r->graphed ? "true" : "false",
               (long long)r->graph_replays, r->graph_note, r->backend,
               static_split ? "true" : "false");
        if (profile) {
            print_profile(r);
            print_products(r);
        }
    } else {
        fprintf(stderr, "bench_step: %s\n", err.message);
    }
    free(r);
    return st == TB_OK ? 0 : st == TB_ERR_INVALID ? 2 : 1;
}
