/* test_machine_state.c: the machine's state and a trial's conditions: /proc's texts parsed
 * (a malformed one refused by name, a missing steal field unknown), samples of this process,
 * the conditions between two samples and the contention rule on each of its measures; a
 * store of schema 2 (before the conditions) read as it is and given the columns when opened
 * to write; the interleaved order of a benchmark's trials; the CPUs this process may run on,
 * which a CPU backend of "all cores" takes. */
#define _GNU_SOURCE /* sched_setaffinity */
#include "testutil.h"

#include "trainbench/backend.h"

#include "bench/bench_impl.h"

#include <math.h>
#include <sched.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void test_parse(void)
{
    tb_error err = {0};
    double load = -1, total = -1, steal = -1;
    CHECK_OK(tb_machine_parse_loadavg("3.63 1.96 2.30 13/151 18787\n", &load, &err), &err);
    CHECK(load == 3.63);
    CHECK_FAILS(tb_machine_parse_loadavg("", &load, &err), TB_ERR_FORMAT, &err, "/proc/loadavg");
    CHECK_FAILS(tb_machine_parse_loadavg("load 1 2", &load, &err), TB_ERR_FORMAT, &err,
                "not a load average");
    CHECK_FAILS(tb_machine_parse_loadavg("-1 2 3", &load, &err), TB_ERR_FORMAT, &err,
                "/proc/loadavg");
    CHECK_OK(tb_machine_parse_stat("cpu  100 1 50 800 10 0 5 34 0 0\ncpu0 50 0 25 400\n",
                                   &total, &steal, &err), &err);
    CHECK(total == 1000 && steal == 34); /* guest time (the last two) is in user already */
    /* an old kernel's line without steal: the steal is unknown, not an error */
    CHECK_OK(tb_machine_parse_stat("cpu 10 0 5 85\n", &total, &steal, &err), &err);
    CHECK(total == 100 && isnan(steal));
    CHECK_FAILS(tb_machine_parse_stat("intr 1 2 3\n", &total, &steal, &err), TB_ERR_FORMAT, &err,
                "does not start with the cpu line");
    CHECK_FAILS(tb_machine_parse_stat("cpu 1 2\n", &total, &steal, &err), TB_ERR_FORMAT, &err,
                "2 fields");
    CHECK_FAILS(tb_machine_parse_stat("cpu 1 2 -3 4\n", &total, &steal, &err), TB_ERR_FORMAT,
                &err, "field 3");
    CHECK_FAILS(tb_machine_sample_now(NULL, &err), TB_ERR_INVALID, &err, "out is NULL");
}

/* Two samples of this process around some work: the CPU time grows, the counts do not fall. */
static void test_samples(void)
{
    tb_error err = {0};
    tb_machine_sample a, b;
    CHECK_OK(tb_machine_sample_now(&a, &err), &err);
    volatile double x = 0;
    for (long i = 0; i < 20 * 1000 * 1000; i++) x += 1e-9 * (double)i;
    CHECK_OK(tb_machine_sample_now(&b, &err), &err);
    CHECK(a.cpu_s >= 0 && b.cpu_s >= a.cpu_s && b.wall_s > a.wall_s && a.nivcsw >= 0);
    /* this test runs on Linux: /proc gives the load and the cpu line */
    CHECK(a.load1 >= 0 && b.cpu_jiffies >= a.cpu_jiffies);
    tb_machine_conditions c;
    tb_machine_conditions_between(&a, &b, 1, NAN, &c);
    CHECK(c.wall_s > 0 && c.cpu_s >= 0 && c.cpu_share >= 0 && c.nivcsw >= 0 && c.load1 == b.load1);
    CHECK(isnan(c.steal) || (c.steal >= 0 && c.steal <= 1));
}

static tb_machine_conditions conditions(double share, double steal, double load)
{
    tb_machine_conditions c = {.wall_s = 10, .cpu_s = share * 20, .cpu_share = share,
                               .load1 = load, .steal = steal, .nivcsw = 5};
    return c;
}

/* The rule on each of its measures, and unknowns that do not count. */
static void test_contention_rule(void)
{
    char why[160];
    tb_machine_conditions c = conditions(0.9, 0.0, 2.2);
    CHECK(!tb_machine_contended(&c, 2, 2, why, sizeof why) && why[0] == 0);
    c = conditions(0.31, 0.0, 2.2);
    CHECK(tb_machine_contended(&c, 2, 2, why, sizeof why) && strstr(why, "cpu share 0.31 < 0.5"));
    c = conditions(0.9, 0.08, 2.2);
    CHECK(tb_machine_contended(&c, 2, 2, why, sizeof why) && strstr(why, "steal 8% >= 5%"));
    c = conditions(0.9, 0.0, 2.6);
    CHECK(tb_machine_contended(&c, 2, 2, why, sizeof why) &&
          strstr(why, "load average 2.60 > 2 cores"));
    c = conditions(0.9, 0.0, 2.6);
    CHECK(!tb_machine_contended(&c, 2, 4, why, sizeof why)); /* a larger machine */
    c = conditions(NAN, NAN, NAN);
    CHECK(!tb_machine_contended(&c, 2, 2, why, sizeof why));
    CHECK(!tb_machine_contended(NULL, 2, 2, why, sizeof why));
    /* the samples' derived measures: steal as a share of the machine's time, unknown counts */
    tb_machine_sample a = {.wall_s = 0, .load1 = 1, .cpu_jiffies = 1000, .steal_jiffies = 10,
                           .cpu_s = 1, .nivcsw = -1};
    tb_machine_sample b = {.wall_s = 4, .load1 = 3, .cpu_jiffies = 1800, .steal_jiffies = 90,
                           .cpu_s = 3, .nivcsw = 40};
    tb_machine_conditions_between(&a, &b, 2, 3.5, &c);
    CHECK(c.cpu_s == 2 && c.cpu_share == 0.25 && c.steal == 0.1 && c.nivcsw == -1 &&
          c.load1 == 3.5);
}

/* A store of schema 2 (before the conditions): read as it is, the conditions unknown; opened
 * to write, it gets the columns and schema 3, and a started trial records its run order. */
static void test_schema_2_store(void)
{
    char db[300];
    snprintf(db, sizeof db, "/tmp/tb_test_machine_state_%d.db", (int)getpid());
    unlink(db);
    tb_error err = {0};
    tb_store *store;
    if (!CHECK_OK(tb_store_open(db, &store, &err), &err)) return;
    tb_trial_record t;
    memset(&t, 0, sizeof t);
    snprintf(t.benchmark, sizeof t.benchmark, "old");
    snprintf(t.submission, sizeof t.submission, "sgd");
    snprintf(t.workload, sizeof t.workload, "fmnist_mlp");
    snprintf(t.ruleset, sizeof t.ruleset, "external");
    CHECK_OK(tb_store_plan_trial(store, &t, &err), &err);
    tb_eval_record e = {.index = 0, .step = 10, .submission_time = 1, .total_duration = 2,
                        .cpu_time = 1.5, .load_avg = 0.5, .steal = 0, .nivcsw = 3};
    CHECK_OK(tb_store_add_eval(store, t.id, &e, &err), &err);
    tb_store_close(store);
    sqlite3 *h = NULL;
    CHECK(sqlite3_open(db, &h) == SQLITE_OK &&
          sqlite3_exec(h, TB_TEST_DROP_SCHEMA_3_COLUMNS
                       "UPDATE meta SET value='2' WHERE key='schema_version'",
                       NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(h);
    tb_trial_record back;
    tb_eval_record *ev = NULL;
    int n = 0;
    if (CHECK_OK(tb_store_open_readonly(db, &store, &err), &err)) {
        CHECK_OK(tb_store_trial_get(store, t.id, &back, &err), &err);
        CHECK(back.contended == -1 && back.run_order == 0 && isnan(back.wall_time) &&
              isnan(back.cpu_time) && back.nivcsw == -1 && back.contention[0] == 0);
        CHECK_OK(tb_store_evals(store, t.id, &ev, &n, &err), &err);
        CHECK(n == 1 && ev && ev[0].step == 10 && isnan(ev[0].cpu_time) && ev[0].nivcsw == -1);
        free(ev);
        tb_store_close(store);
    }
    CHECK(tb_test_query_int(db, "SELECT value FROM meta WHERE key='schema_version'") == 2);
    if (CHECK_OK(tb_store_open(db, &store, &err), &err)) {
        CHECK(tb_test_query_int(db, "SELECT value FROM meta WHERE key='schema_version'") == 3);
        CHECK(tb_test_query_int(db, "SELECT count(*) FROM pragma_table_info('trials') WHERE "
                                    "name IN ('run_order', 'contended', 'cpu_time')") == 3);
        CHECK_OK(tb_store_trial_start(store, t.id, "v", "{}", &err), &err);
        back.wall_time = 3;
        back.cpu_time = 5;
        back.load_avg = 1.25;
        back.steal = 0.01;
        back.nivcsw = 7;
        back.contended = 1;
        snprintf(back.contention, sizeof back.contention, "cpu share 0.2 < 0.5");
        CHECK_OK(tb_store_trial_conditions(store, t.id, &back, &err), &err);
        CHECK_OK(tb_store_add_eval(store, t.id, &e, &err), &err);
        tb_trial_record again;
        CHECK_OK(tb_store_trial_get(store, t.id, &again, &err), &err);
        CHECK(again.run_order == 1 && again.contended == 1 && again.cpu_time == 5 &&
              again.nivcsw == 7 && strcmp(again.contention, "cpu share 0.2 < 0.5") == 0);
        CHECK_OK(tb_store_evals(store, t.id, &ev, &n, &err), &err);
        CHECK(n == 1 && ev && ev[0].cpu_time == 1.5 && ev[0].nivcsw == 3 && ev[0].load_avg == 0.5);
        free(ev);
        /* a restart forgets the conditions and takes the next place in the order */
        CHECK_OK(tb_store_trial_start(store, t.id, "v", "{}", &err), &err);
        CHECK_OK(tb_store_trial_get(store, t.id, &again, &err), &err);
        CHECK(again.run_order == 2 && again.contended == -1 && isnan(again.cpu_time));
        tb_store_close(store);
    }
    char p[400];
    unlink(db);
    snprintf(p, sizeof p, "%s-wal", db);
    unlink(p);
    snprintf(p, sizeof p, "%s-shm", db);
    unlink(p);
}

static tb_trial_record planned(const char *sub, const char *wl, int study, int trial)
{
    tb_trial_record t;
    memset(&t, 0, sizeof t);
    snprintf(t.submission, sizeof t.submission, "%s", sub);
    snprintf(t.workload, sizeof t.workload, "%s", wl);
    t.study = study;
    t.trial = trial;
    return t;
}

/* Planned submission by submission; run workload by workload, study by study, trial by trial,
 * the submissions in turn, their order reversed every other round. */
static void test_interleave(void)
{
    const char *subs[] = {"a", "b"}, *wls[] = {"w1", "w2"};
    tb_trial_record t[12];
    int n = 0;
    for (int s = 0; s < 2; s++)
        for (int w = 0; w < 2; w++)
            for (int k = 0; k < 3; k++) t[n++] = planned(subs[s], wls[w], k, 0);
    int order[12];
    tb_error err = {0};
    CHECK_OK(tb_bench_interleave(t, n, wls, 2, subs, 2, order, &err), &err);
    static const char *want[12][2] = {{"w1", "a"}, {"w1", "b"}, {"w1", "b"}, {"w1", "a"},
                                      {"w1", "a"}, {"w1", "b"}, {"w2", "b"}, {"w2", "a"},
                                      {"w2", "a"}, {"w2", "b"}, {"w2", "b"}, {"w2", "a"}};
    bool same = true;
    for (int i = 0; i < n; i++) {
        const tb_trial_record *x = &t[order[i]];
        same = same && strcmp(x->workload, want[i][0]) == 0 &&
               strcmp(x->submission, want[i][1]) == 0 && x->study == (i % 6) / 2;
    }
    CHECK(same);
    /* a submission not among those loaded (skipped) runs after the others of its round */
    t[0] = planned("gone", "w1", 0, 0);
    CHECK_OK(tb_bench_interleave(t, n, wls, 2, subs, 2, order, &err), &err);
    CHECK(strcmp(t[order[0]].submission, "b") == 0 && strcmp(t[order[1]].submission, "gone") == 0);
}

/* tb_machine_cpus counts the affinity mask, not the machine: pinned to one CPU (as taskset,
 * Slurm or mpirun would), it is 1, and so are the threads of a backend of all cores. */
static void test_usable_cpus(void)
{
    cpu_set_t was;
    if (!CHECK(sched_getaffinity(0, sizeof was, &was) == 0)) return;
    CHECK(tb_machine_cpus() == CPU_COUNT(&was));
    int first = 0;
    while (!CPU_ISSET(first, &was)) first++;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(first, &one);
    if (!CHECK(sched_setaffinity(0, sizeof one, &one) == 0)) return;
    CHECK(tb_machine_cpus() == 1);
    tb_backend *be = NULL;
    tb_error err = {0};
    const tb_backend_config cfg = {.device = TB_DEVICE_CPU, .threads = 0};
    if (CHECK_OK(tb_backend_create(&cfg, &be, &err), &err)) {
        CHECK(tb_backend_threads(be) == 1);
        tb_backend_destroy(be);
    }
    CHECK(sched_setaffinity(0, sizeof was, &was) == 0);
    CHECK(tb_machine_cpus() == CPU_COUNT(&was));
}

int main(void)
{
    test_parse();
    test_samples();
    test_contention_rule();
    test_schema_2_store();
    test_interleave();
    test_usable_cpus();
    return tb_test_finish("test_machine_state");
}
