/* test_cli_dist.c: `trainbench train --dist` under a real mpirun with 2 ranks: the result
 * equals a single process's with the same global batch and seeds, rank 0 alone prints, and
 * an uneven shard, kfac and --device cuda are refused clearly, and bench's bad store once.
 * (TB_MPIEXEC: the mpiexec CMake found.) */
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

static char out[65536];

static int run_mpi(int np, const char *args) { return tb_test_run_mpi(np, args, out, sizeof out); }

static int count(const char *hay, const char *needle) { return tb_test_count(hay, needle); }

/* the number after "key": in a JSON line */
static double field(const char *json, const char *key)
{
    char k[64];
    snprintf(k, sizeof k, "\"%s\":", key);
    const char *p = strstr(json, k);
    return p ? strtod(p + strlen(k), NULL) : NAN;
}

#define RUN_ARGS "train -w fmnist_mlp --steps 20 -b 64 --threads 1 --evals 0 --eval-examples 500 --json"

static void test_matches_single_process(void)
{
    CHECK(run_mpi(2, RUN_ARGS " --dist") == 0);
    CHECK(count(out, "{\"workload\"") == 1); /* rank 0 alone prints */
    CHECK(tb_test_output_has(out, "\"ranks\":2"));
    static char dist[sizeof out];
    memcpy(dist, out, sizeof out);
    CHECK(tb_test_run_cli(RUN_ARGS, out, sizeof out) == 0);
    double a = field(dist, "final_train_loss"), b = field(out, "final_train_loss");
    CHECK(isfinite(a) && fabs(a - b) <= 1e-4 * fabs(b));
    const char *va = strstr(dist, "\"validation\":"), *vb = strstr(out, "\"validation\":");
    CHECK(va && vb);
    if (va && vb) CHECK_NEAR(field(va, "loss"), field(vb, "loss"), 1e-3 * field(vb, "loss"));
    CHECK(field(dist, "examples") == field(out, "examples"));
}

static void test_refusals(void)
{
    CHECK(run_mpi(2, "train -w fmnist_mlp --steps 2 -b 63 --threads 1 --dist") == 2);
    CHECK(tb_test_output_has(out, "the batch of 63 examples does not divide among 2 ranks"));
    CHECK(count(out, "does not divide") == 1); /* printed once, by rank 0 */
    CHECK(run_mpi(2, "train -w fmnist_mlp -a kfac --steps 2 -b 64 --threads 1 --dist") == 3);
    CHECK(tb_test_output_has(out, "kfac is not built for data-parallel training"));
    CHECK(count(out, "is not built for data-parallel") == 1); /* a refusal every rank meets */
    CHECK(run_mpi(2, "train -w fmnist_mlp --steps 2 --device cuda --threads 1 --dist") == 3);
    CHECK(tb_test_output_has(out, "NCCL"));
    CHECK(count(out, "NCCL") == 1);
    /* bench under mpirun (tests/test_cli_bench_dist.c runs one): rank 0 alone says why its
     * store cannot be made, and the other rank is told to stop */
    CHECK(run_mpi(2, "bench --db /nonexistent/x.db") == 1);
    CHECK(count(out, "cannot create the results store /nonexistent/x.db") == 1);
}

/* Under mpirun without --dist every process trains on its own: one warning says so (from
 * rank 0), and without a launcher --dist says it trained as one process. */
static void test_without_dist(void)
{
    CHECK(run_mpi(2, "train -w fmnist_mlp --steps 2 -b 64 --threads 1 --evals 0 "
                     "--eval-examples 100 -q") == 0);
    CHECK(count(out, "without --dist: each runs the whole train on its own") == 1);
    CHECK(tb_test_run_cli("train -w fmnist_mlp --steps 2 -b 64 --threads 1 --evals 0 "
                          "--eval-examples 100 --dist", out, sizeof out) == 0);
    CHECK(tb_test_output_has(out, "1 rank (not started by an MPI launcher)"));
    CHECK(count(out, "without --dist") == 0);
}

int main(void)
{
    test_matches_single_process();
    test_without_dist();
    test_refusals();
    return tb_test_finish("test_cli_dist");
}
