/* bench_step.c: training-step throughput of one workload on this machine, as JSON.
 *
 *   bench_step --workload fmnist_mlp --algorithm sgd --threads 2 --steps 200 --warmup 20
 *   bench_step --workload fmnist_cnn --device cuda --cuda-graph
 *
 * Times whole training steps (input pipeline, forward, backward, update) after a warm-up, and
 * reports examples/s, ms/step, achieved GEMM FLOP/s of the step and peak resident memory.
 * --device cuda runs on the GPU; --cuda-graph (cuda only) captures one step as a CUDA graph
 * during the warm-up and replays it for the timed steps (tb_step_runner; an optimizer with
 * host-side work per step stays eager and the JSON says why). The GEMM FLOP/s of replayed
 * steps are not counted (the host does not see their products).
 * With --profile it also prints, to stderr, where the step's time goes: per op (forward and
 * backward, from the tape's profiler) and the rest of the step (optimizer update, input,
 * zeroing gradients); synchronising per op slows the step, so a profiled run's examples/s is
 * lower than a plain run's. The JSON's cpu_ms_per_step is the process's CPU time per step (at
 * 1 thread, a cost that another busy process on the machine barely changes, unlike wall time).
 * --width-scale W / --depth-scale D build a larger model (kjv_transformer: W times the channels
 * and heads, D times the blocks) and --precision picks the products' precision (bf16 on cuda);
 * model_tflops is the matrix-product work of one eager step (counted by the backend; attention's
 * internal products are not counted on the CPU) times the steps over the time, and with
 * --peak-tflops P the JSON also gives mfu = model_tflops / P (e.g. P = 989 for an H200's dense
 * bf16 peak).
 * With --sgemm N it instead measures the OpenBLAS sgemm ceiling on N x N matrices. Not a test:
 * bench/speed.py runs it side by side with the PyTorch version of the same model. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
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

static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double peak_rss_mb(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_maxrss / 1024.0;
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
static void print_profile(const tb_tape *tape, double total_s, int steps)
{
    tb_op_profile ops[64];
    int n = tb_tape_profile(tape, ops, 64);
    double ops_s = 0;
    fprintf(stderr, "%-26s %7s %10s %10s %7s\n", "op", "calls", "fwd ms", "bwd ms", "share");
    for (int i = 0; i < n && i < 64; i++) {
        double tot = ops[i].forward_s + ops[i].backward_s;
        ops_s += tot;
        fprintf(stderr, "%-26s %7.1f %10.3f %10.3f %6.1f%%\n", ops[i].name,
                (double)ops[i].calls / steps, 1e3 * ops[i].forward_s / steps,
                1e3 * ops[i].backward_s / steps, 100.0 * tot / total_s);
    }
    double rest = total_s - ops_s;
    fprintf(stderr, "%-26s %7s %10.3f %10s %6.1f%%\n", "rest (update, input, zero)", "",
            1e3 * rest / steps, "", 100.0 * rest / total_s);
}

/* The step's model: the workload's forward pass and loss. */
static tb_var *step_loss(void *user, tb_tape *tape, const tb_batch *b, tb_rng *dropout,
                         tb_error *err)
{
    (void)err;
    tb_workload *wl = user;
    return tb_workload_loss_fn(wl, tape, tb_workload_forward(wl, tape, b->inputs, dropout),
                               b->targets);
}

static void usage(FILE *f)
{
    fprintf(f, "usage: bench_step [--workload ID] [--algorithm NAME] [--threads N]\n"
               "                  [--steps N] [--warmup N] [--batch-size N]\n"
               "                  [--device cpu|cuda] [--cuda-graph] [--profile]\n"
               "                  [--width-scale W] [--depth-scale D]\n"
               "                  [--precision fp32|tf32|bf16] [--peak-tflops P]\n"
               "       bench_step --sgemm N [--threads N]\n"
               "Times training steps of one workload and prints one JSON line (examples/s,\n"
               "ms/step, GEMM FLOP/s, peak memory); --profile adds a per-op table on stderr;\n"
               "--sgemm N measures the OpenBLAS sgemm ceiling on N x N matrices instead.\n");
}

int main(int argc, char **argv)
{
    tb_cli_choose_blas_kernels(argv); /* the fast OpenBLAS kernels, as the trainbench command */
    const char *workload = "fmnist_mlp", *algorithm = "sgd";
    int threads = 1, steps = 200, warmup = 20, batch = 0, sgemm = 0, profile = 0;
    int width_scale = 1, depth_scale = 1;
    double peak_tflops = 0;
    tb_precision precision = TB_PRECISION_FP32;
    bool cuda_graph = false;
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
    if (cuda_graph && warmup < 3) {
        fprintf(stderr, "bench_step: --cuda-graph needs --warmup 3 or more (2 eager steps and "
                        "the captured one)\n");
        return 2;
    }

    tb_backend_config bc = {.device = device, .threads = threads, .precision = precision};
    tb_backend *be = NULL;
    tb_workload *wl = NULL;
    tb_tape *tape = NULL;
    tb_optimizer *opt = NULL;
    tb_pipeline *pipe = NULL;
    tb_step_runner *runner = NULL;
    tb_status st = tb_backend_create(&bc, &be, &err);
    tb_workload_config wc = {.width_scale = width_scale, .depth_scale = depth_scale};
    if (st == TB_OK) st = tb_workload_create(workload, be, &wc, &wl, &err);
    tb_rng init = tb_rng_make(0, TB_STREAM_INIT), drop = tb_rng_make(0, TB_STREAM_DROPOUT);
    if (st == TB_OK) st = tb_workload_init(wl, &init, &err);
    if (st == TB_OK) st = tb_tape_create(be, &tape, &err);
    if (st == TB_OK) {
        tb_hparams hp = {0};
        tb_hparams_set(&hp, "learning_rate", 0.01, NULL);
        st = tb_optimizer_create(algorithm, tb_workload_params(wl), &hp, &opt, &err);
    }
    if (batch <= 0 && wl) batch = tb_workload_get_info(wl)->default_batch_size;
    tb_pipeline_config pc = {.batch_size = batch};
    if (st == TB_OK) st = tb_pipeline_create(wl, &pc, &pipe, &err);
    tb_step_config sc = {.loss = step_loss, .user = wl, .cuda_graph = cuda_graph};
    if (st == TB_OK) st = tb_step_runner_create(tape, tb_workload_params(wl), opt, &sc, &runner,
                                                &err);
    double t0 = 0, c0 = 0;
    uint64_t flops0 = 0, step_flops = 0; /* the products of the first (eager) step */
    for (int i = 0; st == TB_OK && i < warmup + steps; i++) {
        if (i == warmup) {
            tb_backend_sync(be);
            t0 = now_s();
            c0 = cpu_s();
            flops0 = tb_backend_gemm_flops(be);
            if (profile) tb_tape_set_profiling(tape, true);
        }
        uint64_t f = tb_backend_gemm_flops(be);
        /* no loss read back: a throughput run does not wait for the device each step */
        st = tb_step_runner_step(runner, pipe, 1.0, &drop, NULL, NULL, &err);
        if (i == 0) step_flops = tb_backend_gemm_flops(be) - f;
    }
    if (st == TB_OK) {
        tb_backend_sync(be);
        double dt = now_s() - t0, cpu = cpu_s() - c0;
        double flops = (double)(tb_backend_gemm_flops(be) - flops0);
        printf("{\"workload\":\"%s\",\"algorithm\":\"%s\",\"threads\":%d,\"batch_size\":%d,"
               "\"steps\":%d,\"examples_per_s\":%.1f,\"ms_per_step\":%.3f,\"cpu_ms_per_step\":%.3f,"
               "\"gemm_gflops\":%.1f,\"model_tflops\":%.3f,\"mfu\":%.4f,\"parameters\":%lld,"
               "\"peak_rss_mb\":%.1f,\"cuda_graph\":%s,\"graph_replays\":%lld,"
               "\"graph_note\":\"%s\",\"backend\":\"%s\"}\n",
               workload, algorithm, threads, batch, steps, (double)steps * batch / dt,
               1e3 * dt / steps, 1e3 * cpu / steps, flops / dt / 1e9,
               (double)step_flops * steps / dt / 1e12,
               peak_tflops > 0 ? (double)step_flops * steps / dt / 1e12 / peak_tflops : 0.0,
               (long long)tb_params_trainable(tb_workload_params(wl)), peak_rss_mb(),
               tb_step_runner_graphed(runner) ? "true" : "false",
               (long long)tb_step_runner_replays(runner), tb_step_runner_note(runner),
               tb_backend_describe(be));
        if (profile) print_profile(tape, dt, steps);
    } else {
        fprintf(stderr, "bench_step: %s\n", err.message);
    }
    tb_step_runner_destroy(runner);
    tb_pipeline_destroy(pipe);
    tb_optimizer_destroy(opt);
    tb_tape_destroy(tape);
    tb_workload_destroy(wl);
    tb_backend_destroy(be);
    return st == TB_OK ? 0 : 1;
}
