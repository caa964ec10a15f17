/* test_cli_bench_jobs.c: `trainbench bench --jobs K --cpus LIST`: bad values refused with the
 * option named (before a store is made), and a run of 2 jobs pinned to a CPU each recording
 * both in every trial's machine facts. */
#include "testutil.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char out[65536];

static int run(const char *args) { return tb_test_run_cli(args, out, sizeof out); }

static bool has(const char *needle) { return tb_test_output_has(out, needle); }

#define SMALL "-w fmnist_mlp -s sgd --studies 2 --budget 0.3 --eval-examples 200 " \
              "--calibration-s -1 -q"

static void test_refused(const char *db)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "bench --db %s --jobs 0 " SMALL, db);
    CHECK(run(cmd) == 2 && has("--jobs: 0 jobs run no trial"));
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    snprintf(cmd, sizeof cmd, "bench --db %s --jobs %ld " SMALL, db, cores + 1);
    CHECK(run(cmd) == 2 && has("leaves no core per trial") && has("--threads"));
    snprintf(cmd, sizeof cmd, "bench --db %s --jobs x " SMALL, db);
    CHECK(run(cmd) == 2 && has("--jobs"));
    snprintf(cmd, sizeof cmd, "bench --db %s --cpus 0,0 " SMALL, db);
    CHECK(run(cmd) == 2 && has("--cpus") && has("CPU 0 is given twice"));
    snprintf(cmd, sizeof cmd, "bench --db %s --cpus 2-1 " SMALL, db);
    CHECK(run(cmd) == 2 && has("--cpus") && has("not a CPU number or a range"));
    snprintf(cmd, sizeof cmd, "bench --db %s --cpus 1000 " SMALL, db);
    CHECK(run(cmd) == 2 && has("may not run on CPU 1000"));
    snprintf(cmd, sizeof cmd, "bench --db %s --cpus 0 --jobs 2 " SMALL, db);
    CHECK(run(cmd) == 2 && has("each job needs a CPU of its own"));
    CHECK(access(db, F_OK) != 0); /* nothing was made */
}

int main(void)
{
    char db[128];
    snprintf(db, sizeof db, "/tmp/tb_test_cli_jobs_%d.db", (int)getpid());
    tb_test_remove_store(db);
    test_refused(db);
    if (sysconf(_SC_NPROCESSORS_ONLN) >= 2) {
        char cmd[512];
        snprintf(cmd, sizeof cmd, "bench --db %s --jobs 2 --cpus 0-1 " SMALL, db);
        CHECK(run(cmd) == 0 && has("2 trials: 2 run now"));
        snprintf(cmd, sizeof cmd, "export --db %s --format jsonl", db);
        CHECK(run(cmd) == 0);
        CHECK(tb_test_count(out, "\"jobs\":2") == 2);
        CHECK(tb_test_count(out, "\"cpus\":\"0\"") == 1 && tb_test_count(out, "\"cpus\":\"1\"") == 1);
        CHECK(tb_test_count(out, "\"threads\":1") >= 2); /* one core each */
    }
    tb_test_remove_store(db);
    return tb_test_finish("test_cli_bench_jobs");
}
