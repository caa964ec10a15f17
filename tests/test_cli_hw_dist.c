/* test_cli_hw_dist.c: `trainbench hw --dist` under a real mpirun with 2 ranks: rank 0 alone
 * reports, the JSON has the job's ranks and its examples/s, the store records the world size,
 * the scaling efficiency comes from a one-process run in the store; an uneven batch (3 ranks)
 * and --device cuda are refused, once, with a clear message. (TB_MPIEXEC: CMake's mpiexec.) */
#include "testutil.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char out[65536];
static char db_path[128];

#define TINY "hw -w fmnist_mlp --threads 1 --warmup 2 --windows 2 --window 0 --window-steps 2 " \
             "-q --reference none --json"

static int64_t query_int(const char *sql) { return tb_test_query_int(db_path, sql); }

static double number(const char *key) { return tb_test_json_number(out, key); }

static void test_job(void)
{
    char args[512];
    snprintf(args, sizeof args, TINY " --db %s", db_path);
    /* a one-process run of the same settings first: the efficiency's yardstick */
    CHECK(tb_test_run_cli(args, out, sizeof out) == 0);
    snprintf(args, sizeof args, TINY " --db %s --dist", db_path);
    CHECK(tb_test_run_mpi(2, args, out, sizeof out) == 0);
    CHECK(tb_test_count(out, "\"code_version\"") == 1); /* rank 0 alone prints */
    CHECK(tb_test_output_has(out, "\"ranks\":2,\"job_cores\":"));
    CHECK(tb_test_output_has(out, "\"threads\":1,\"ranks\":2,\"batch_size\":128"));
    CHECK(tb_test_output_has(out, "\"config\":\"cpu, 2 ranks x 1 thread\""));
    CHECK(number("examples_per_s") > 0);
    CHECK(tb_test_output_has(out, "\"single_process_source\":\"hw_runs id 1 in the store\""));
    CHECK(number("single_process_examples_per_s") > 0 && number("scaling_efficiency") > 0);
    CHECK(query_int("SELECT count(*) FROM hw_runs") == 2);
    CHECK(query_int("SELECT world_size FROM hw_runs WHERE id = 2") == 2);
    CHECK(query_int("SELECT count(*) FROM hw_results WHERE run_id = 2 AND status = 'ok' AND "
                    "examples_per_s > 0") == 1);
}

static void test_refusals(void)
{
    CHECK(tb_test_run_mpi(3, TINY " --dist", out, sizeof out) == 2);
    CHECK(tb_test_output_has(out, "batch of fmnist_mlp (128 examples"));
    CHECK(tb_test_count(out, "does not divide among 3 ranks") == 1);
    CHECK(tb_test_run_mpi(2, "hw -w fmnist_mlp --device cuda -q --dist", out, sizeof out) == 3);
    CHECK(tb_test_output_has(out, "NCCL"));
    CHECK(tb_test_count(out, "NCCL") == 1);
    CHECK(tb_test_run_mpi(2, TINY " --dist --save-reference /tmp/x.json", out, sizeof out) == 2);
    CHECK(tb_test_count(out, "--save-reference writes one process's figures") == 1);
}

int main(void)
{
    snprintf(db_path, sizeof db_path, "/tmp/tb_test_cli_hw_dist_%d.db", (int)getpid());
    remove(db_path);
    test_job();
    test_refusals();
    remove(db_path);
    return tb_test_finish("test_cli_hw_dist");
}
