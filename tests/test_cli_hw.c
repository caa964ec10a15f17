/* test_cli_hw.c: `trainbench hw` as a user runs it: a tiny run's table, JSON and store record,
 * a run failing its validation check, --save-reference, and clear errors for bad options. */
#include "testutil.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char out[65536];

static int run(const char *args) { return tb_test_run_cli(args, out, sizeof out); }

static bool has(const char *needle) { return tb_test_output_has(out, needle); }

static char ref_path[128], db_path[128], saved_path[128];

/* "hw" with the tiny settings (one workload, 1 thread, 2 windows of 2 steps) and the test's
 * reference file, then `extra`. */
static int run_tiny(const char *extra)
{
    char args[1024];
    snprintf(args, sizeof args, "hw -w fmnist_mlp --threads 1 --warmup 2 --windows 2 "
             "--window 0 --window-steps 2 -q --reference %s %s", ref_path, extra);
    return run(args);
}

static int64_t query_int(const char *sql) { return tb_test_query_int(db_path, sql); }

static double json_number(const char *key) { return tb_test_json_number(out, key); }

/* The store's file (SQLite removes its -wal and -shm files when the last connection closes). */
static void remove_store(void) { remove(db_path); }

int main(void)
{
    int pid = (int)getpid();
    snprintf(ref_path, sizeof ref_path, "/tmp/tb_test_cli_hw_%d_ref.json", pid);
    snprintf(db_path, sizeof db_path, "/tmp/tb_test_cli_hw_%d.db", pid);
    snprintf(saved_path, sizeof saved_path, "/tmp/tb_test_cli_hw_%d_saved.json", pid);
    FILE *f = fopen(ref_path, "w");
    CHECK(f != NULL);
    if (!f) return tb_test_finish("test_cli_hw");
    fputs("{\"format\":\"trainbench-hw-reference\",\"version\":1,\"date\":\"2026-12-01\","
          "\"commit\":\"abc1234\",\"cpu\":\"Test CPU\",\"cores\":2,\"command\":\"by hand\","
          "\"workloads\":[{\"workload\":\"fmnist_mlp\",\"algorithm\":\"sgd\",\"batch_size\":128,"
          "\"figures\":[{\"device\":\"cpu\",\"threads\":1,\"examples_per_s\":1000}]}]}", f);
    fclose(f);

    /* help, and bad options: exit 2 with the cause named */
    CHECK(run("hw --help") == 0 && has("--windows") && has("--reference") &&
          has("mpirun -np W trainbench hw --dist") && has("scaling efficiency"));
    CHECK(run("--help") == 0 && has("hw  "));
    CHECK(run("hw --threads 0 -q") == 2 && has("--threads: 0 is outside [1, 4096]"));
    CHECK(run("hw --threads 1,1 -q") == 2 && has("1 is listed twice"));
    CHECK(run("hw --threads two -q") == 2 && has("'two' is not a whole number"));
    CHECK(run("hw -w nosuch -q") == 2 && has("unknown workload 'nosuch'"));
    CHECK(run("hw --windows 0 -q") == 2 && has("--windows: 0 is outside"));
    CHECK(run("hw --window -1 -q") == 2 && has("--window: -1 is outside"));
    CHECK(run("hw --device cuda --threads 2 -q") == 2 && has("--threads is for --device cpu"));
    CHECK(run("hw --reference /nonexistent/ref.json -q") == 2 &&
          has("cannot open reference file /nonexistent/ref.json"));
    FILE *bad = fopen(saved_path, "w");
    if (bad) {
        fputs("{\"format\":\"trainbench-hw-reference\",\"version\":1}", bad);
        fclose(bad);
    }
    char args[512];
    snprintf(args, sizeof args, "hw -q --reference %s", saved_path);
    CHECK(run(args) == 2 && has("date is missing"));
    remove(saved_path);
    /* no GPU here (or no CUDA build): a clean exit 3 before any run */
    snprintf(args, sizeof args, "hw --device cuda -q -w fmnist_mlp --reference %s", ref_path);
    int rc = run(args);
    CHECK(rc == 0 || (rc == 3 && (has("no CUDA device") || has("built without cuda"))));

    /* a tiny run: the table, and its record in a results store */
    remove_store();
    char extra[256];
    snprintf(extra, sizeof extra, "--db %s", db_path);
    CHECK(run_tiny(extra) == 0 && has("workload") && has("examples/s") && has("sem%") &&
          has("fmnist_mlp") && has("cpu, 1 thread") && has(" ok") &&
          has("score, cpu, 1 thread: ") && has("reference: ") && has("abc1234"));
    CHECK(query_int("SELECT count(*) FROM hw_runs") == 1);
    CHECK(query_int("SELECT count(*) FROM hw_runs WHERE code_version <> '' AND "
                    "machine LIKE '{\"cpu\":%' AND windows = 2 AND window_steps = 2") == 1);
    CHECK(query_int("SELECT count(*) FROM hw_results WHERE workload = 'fmnist_mlp' AND "
                    "threads = 1 AND status = 'ok' AND windows = 2 AND steps = 4 AND "
                    "examples_per_s > 0 AND ratio > 0") == 1);
    CHECK(query_int("SELECT count(*) FROM hw_scores WHERE config = 'cpu, 1 thread' AND "
                    "score > 0") == 1);
    /* the store stays readable by the other commands */
    snprintf(args, sizeof args, "export --db %s --format jsonl", db_path);
    CHECK(run(args) == 0 && !strstr(out, "another schema"));

    /* the JSON (the ratio is the examples/s over the reference's 1000), and --save-reference:
     * this run's figures, readable as a reference */
    snprintf(extra, sizeof extra, "--json --save-reference %s", saved_path);
    CHECK(run_tiny(extra) == 0 && has("\"status\":\"ok\"") && has("\"windows\":2") &&
          has("\"steps\":4") && has("\"reference_examples_per_s\":1000.00") &&
          has("\"scores\":[{\"config\":\"cpu, 1 thread\""));
    double eps = json_number("examples_per_s"), ratio = json_number("ratio");
    CHECK(eps > 0 && fabs(ratio - eps / 1000.0) < 1e-3 * ratio + 1e-4);
    CHECK(fabs(json_number("score") - ratio) < 1e-3 * ratio + 1e-4); /* one workload */
    tb_hw_reference *ref = calloc(1, sizeof *ref);
    tb_error err = {0};
    CHECK_OK(tb_hw_reference_load(saved_path, ref, &err), &err);
    CHECK(ref->n == 1 && strcmp(ref->workloads[0].workload, "fmnist_mlp") == 0 &&
          ref->workloads[0].n_figures == 1 && ref->workloads[0].figures[0].threads == 1 &&
          fabs(ref->workloads[0].figures[0].examples_per_s - eps) < 1e-4 * eps &&
          strstr(ref->command, "hw -w") && strstr(ref->command, "--save-reference") &&
          strstr(ref->note, "load average"));
    free(ref);
    remove(saved_path);

    /* no reference: no ratios, no score */
    CHECK(run_tiny("--reference none") == 0 && has("reference: none (no ratios, no score)") &&
          !strstr(out, "score, "));

    /* a run failing its validation check: failed with its reason, ratio and score 0, exit 1,
     * recorded as such (a second run in the store) */
    CHECK(run_tiny("--lr 1e4") == 1 && has("failed: the training loss") &&
          has("score, cpu, 1 thread: 0 (1 of 1 workloads failed"));
    snprintf(extra, sizeof extra, "--lr 1e4 --json --db %s", db_path);
    CHECK(run_tiny(extra) == 1 && has("\"status\":\"failed\"") &&
          has("\"reason\":\"the training loss") && has("\"ratio\":0.0000") &&
          has("\"score\":0.0000"));
    CHECK(query_int("SELECT count(*) FROM hw_runs") == 2);
    CHECK(query_int("SELECT count(*) FROM hw_results WHERE run_id = 2 AND status = 'failed' AND "
                    "ratio = 0 AND reason LIKE 'the training loss%'") == 1);
    remove_store();
    remove(ref_path);
    return tb_test_finish("test_cli_hw");
}
