/* test_bench_shard.c: a benchmark in shards (`bench --shard I/N`) and the merge of their
 * stores (`trainbench merge`): the shards plan alike and run disjoint shares that cover the
 * plan; the merged store holds every trial once with its shard's row and evals; a gp study
 * stays in one shard; bad shard specs, a spec that differs, a store merged twice, stores that
 * overlap, one file merged into itself and a store of several benchmarks are refused, and a
 * refused merge loses nothing already merged. */
#include "testutil.h"
#include "bench/bench_impl.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void temp_path(char *buf, size_t cap, const char *tag)
{
    snprintf(buf, cap, "/tmp/tb_test_bench_shard_%s_%d.db", tag, (int)getpid());
    tb_test_remove_store(buf);
}

static void test_parse(void)
{
    tb_error err = {0};
    int i = -1, n = -1;
    CHECK_OK(tb_bench_shard_parse("0/1", &i, &n, &err), &err);
    CHECK(i == 0 && n == 1);
    CHECK_OK(tb_bench_shard_parse("3/4", &i, &n, &err), &err);
    CHECK(i == 3 && n == 4);
    static const struct {
        const char *text, *needle;
    } bad[] = {
        {"", "not a shard"},        {"1", "not a shard"},     {"/2", "not a shard"},
        {"1/", "not a shard"},      {"a/b", "not a shard"},   {"-1/4", "not a shard"},
        {"1/2x", "not a shard"},    {"1/-2", "not a shard"},  {" 1/2", "not a shard"},
        {"4/4", "count from 0"},    {"7/4", "last is 3/4"},   {"0/0", "in [1, 100000]"},
        {"0/100001", "in [1, 100000]"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++)
        CHECK_FAILS(tb_bench_shard_parse(bad[k].text, &i, &n, &err), TB_ERR_INVALID, &err,
                    bad[k].needle);
}

/* Units: a trial each under halton; under gp a study's trials share one, so its trials
 * (which depend on each other) stay in one shard. */
static void test_units(void)
{
    enum { N = 8 };
    tb_trial_record t[N];
    int order[N], unit[N];
    memset(t, 0, sizeof t);
    for (int k = 0; k < N; k++) {
        snprintf(t[k].submission, sizeof t[k].submission, "%s", k % 2 ? "sgd" : "adamw");
        snprintf(t[k].workload, sizeof t[k].workload, "fmnist_mlp");
        snprintf(t[k].ruleset, sizeof t[k].ruleset, "external");
        t[k].study = (k / 2) % 2;
        t[k].trial = k / 4;
        order[k] = N - 1 - k; /* the units follow the order, not the array */
    }
    tb_bench_spec s = tb_bench_spec_default();
    tb_bench_shard_units(&s, t, N, order, unit);
    for (int k = 0; k < N; k++) CHECK(unit[k] == k);
    s.sampler = TB_SAMPLER_GP;
    tb_bench_shard_units(&s, t, N, order, unit);
    int most = -1;
    for (int k = 0; k < N; k++) {
        for (int j = 0; j < N; j++) {
            const tb_trial_record *a = &t[order[k]], *b = &t[order[j]];
            bool same = a->study == b->study && strcmp(a->submission, b->submission) == 0;
            CHECK(same == (unit[k] == unit[j]));
        }
        CHECK(unit[k] <= most + 1); /* numbered in the order of first appearance */
        if (unit[k] > most) most = unit[k];
    }
    CHECK(most == 3); /* 2 submissions x 2 studies */
}

/* Every trial of benchmark "t" in db, by plan order. */
static tb_trial_record *trials_of(const char *db, int *n)
{
    tb_store *store;
    tb_error err = {0};
    tb_trial_record *t = NULL;
    *n = 0;
    if (!CHECK_OK(tb_store_open_readonly(db, &store, &err), &err)) return NULL;
    CHECK_OK(tb_store_trials(store, "t", &t, n, &err), &err);
    tb_store_close(store);
    return t;
}

static const tb_trial_record *find(const tb_trial_record *t, int n, const tb_trial_record *k)
{
    for (int i = 0; i < n; i++)
        if (strcmp(t[i].submission, k->submission) == 0 && t[i].study == k->study &&
            t[i].trial == k->trial && strcmp(t[i].workload, k->workload) == 0)
            return &t[i];
    return NULL;
}

static bool finished(const tb_trial_record *t)
{
    return t->status == TB_TRIAL_DONE || t->status == TB_TRIAL_FAILED;
}

/* The validation losses of a trial's evals, joined as text (to compare two stores'). */
static void eval_text(const char *db, int64_t id, char *buf, size_t cap)
{
    tb_store *store;
    tb_error err = {0};
    buf[0] = 0;
    if (!CHECK_OK(tb_store_open_readonly(db, &store, &err), &err)) return;
    tb_eval_record *e = NULL;
    int n = 0;
    if (CHECK_OK(tb_store_evals(store, id, &e, &n, &err), &err))
        for (int i = 0; i < n; i++) {
            size_t len = strlen(buf);
            snprintf(buf + len, cap - len, "%lld:%.9g:%.9g ", (long long)e[i].step,
                     e[i].validation_loss, e[i].submission_time);
        }
    free(e);
    tb_store_close(store);
}

static int64_t count(const char *db, const char *table)
{
    char sql[64];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM %s", table);
    return tb_test_query_int(db, sql);
}

/* Two real shards of 4 trials, merged; then the refusals against the merged store. */
static void test_shards_and_merge(void)
{
    static const char *subs[] = {"sgd", "adamw"};
    char s0[128], s1[128], m[128], other[128], overlap[128];
    temp_path(s0, sizeof s0, "s0");
    temp_path(s1, sizeof s1, "s1");
    temp_path(m, sizeof m, "m");
    temp_path(other, sizeof other, "other");
    temp_path(overlap, sizeof overlap, "overlap");
    tb_bench_spec s = tb_test_bench_spec(subs, 2, 1.0, 200);
    s.studies = 2;
    s.trial.threads = 1;
    tb_error err = {0};
    tb_bench_summary sum;
    s.shard = 0;
    s.shards = 2;
    CHECK_OK(tb_bench_run(s0, &s, NULL, NULL, &sum, &err), &err);
    CHECK(sum.planned == 2 && sum.ran == 2);
    CHECK(strstr(sum.notes, "shard 0/2: 2 of the 4 planned trials") != NULL);
    s.shard = 1;
    CHECK_OK(tb_bench_run(s1, &s, NULL, NULL, &sum, &err), &err);
    CHECK(sum.planned == 2 && sum.ran == 2);
    /* the same plan in both; shares disjoint, covering it */
    int n0, n1;
    tb_trial_record *t0 = trials_of(s0, &n0), *t1 = trials_of(s1, &n1);
    CHECK(n0 == 4 && n1 == 4);
    int done0 = 0, done1 = 0;
    for (int i = 0; t0 && t1 && i < n0 && n1 == n0; i++) {
        const tb_trial_record *o = find(t1, n1, &t0[i]);
        if (!CHECK(o != NULL)) continue;
        CHECK(memcmp(o->seeds, t0[i].seeds, sizeof o->seeds) == 0);
        CHECK(o->hparams.count == t0[i].hparams.count && o->hparams.count > 0);
        for (int h = 0; h < o->hparams.count; h++)
            CHECK(o->hparams.values[h] == t0[i].hparams.values[h]);
        CHECK(finished(o) != finished(&t0[i])); /* exactly one shard ran it */
        done0 += finished(&t0[i]);
        done1 += finished(o);
    }
    CHECK(done0 == 2 && done1 == 2);
    /* merged: every trial once, finished, with its shard's row and evals */
    tb_store_merge_counts c;
    char name[64];
    CHECK_OK(tb_bench_merge(m, s0, NULL, name, sizeof name, &c, &err), &err);
    CHECK(strcmp(name, "t") == 0 && c.copied == 2 && c.planned == 2 && c.already == 0);
    CHECK_OK(tb_bench_merge(m, s1, NULL, name, sizeof name, &c, &err), &err);
    CHECK(c.copied == 2 && c.planned == 0 && c.kept == 2);
    int nm;
    tb_trial_record *tm = trials_of(m, &nm);
    CHECK(nm == 4);
    for (int i = 0; tm && t0 && t1 && i < nm; i++) {
        const tb_trial_record *a = find(t0, n0, &tm[i]), *b = find(t1, n1, &tm[i]);
        const tb_trial_record *src = a && finished(a) ? a : b;
        const char *src_db = a && finished(a) ? s0 : s1;
        if (!CHECK(src != NULL && finished(src))) continue;
        CHECK(tm[i].status == src->status && tm[i].steps == src->steps &&
              tm[i].submission_time == src->submission_time && tm[i].reached == src->reached);
        CHECK(strcmp(tm[i].machine, src->machine) == 0 &&
              strcmp(tm[i].code_version, src->code_version) == 0);
        CHECK(tm[i].resolved_hparams.count == src->resolved_hparams.count);
        char ea[4096], eb[4096];
        eval_text(m, tm[i].id, ea, sizeof ea);
        eval_text(src_db, src->id, eb, sizeof eb);
        CHECK(ea[0] != 0 && strcmp(ea, eb) == 0);
    }
    const int64_t trials_before = count(m, "trials"), evals_before = count(m, "evals");
    CHECK(trials_before == 4 && evals_before > 0);
    /* merged twice: refused, nothing written */
    CHECK_FAILS(tb_bench_merge(m, s0, NULL, name, sizeof name, &c, &err), TB_ERR_INVALID, &err,
                "was merged into");
    /* a store whose trial is another run of one finished in the target: refused whole */
    char sql[512];
    snprintf(sql, sizeof sql, "cp %s %s", s1, overlap);
    CHECK(system(sql) == 0);
    CHECK(tb_test_query_int(overlap, "UPDATE trials SET started = '2000-01-01 00:00:00' "
                                     "WHERE status IN ('done', 'failed') RETURNING 0") == 0);
    CHECK_FAILS(tb_bench_merge(m, overlap, NULL, name, sizeof name, &c, &err), TB_ERR_INVALID,
                &err, "finished in both");
    CHECK_FAILS(tb_bench_merge(m, overlap, NULL, name, sizeof name, &c, &err), TB_ERR_INVALID,
                &err, "started 2000-01-01");
    /* a store of the same benchmark planned with another spec */
    tb_store *st;
    if (CHECK_OK(tb_store_open(other, &st, &err), &err)) {
        CHECK_OK(tb_store_put_benchmark(st, "t", "{\"seed\": 7}", &err), &err);
        tb_test_add_trial(st, "t", "sgd", "fmnist_mlp", 0, 0, NULL, TB_TRIAL_DONE, 0.1, 1.0);
        tb_store_close(st);
    }
    CHECK_FAILS(tb_bench_merge(m, other, NULL, name, sizeof name, &c, &err), TB_ERR_INVALID,
                &err, "different spec");
    /* the merged store lost nothing to the refusals */
    CHECK(count(m, "trials") == trials_before && count(m, "evals") == evals_before);
    CHECK(tb_test_query_int(m, "SELECT count(*) FROM trials WHERE status IN ('done', 'failed')")
          == 4);
    /* one file into itself; a store of two benchmarks with none named; a named one missing */
    CHECK_FAILS(tb_bench_merge(m, m, NULL, name, sizeof name, &c, &err), TB_ERR_INVALID, &err,
                "are one file");
    if (CHECK_OK(tb_store_open(other, &st, &err), &err)) {
        CHECK_OK(tb_store_put_benchmark(st, "u", "{}", &err), &err);
        tb_store_close(st);
    }
    CHECK_FAILS(tb_bench_merge(m, other, NULL, name, sizeof name, &c, &err), TB_ERR_INVALID,
                &err, "holds 2 benchmarks (t, u)");
    CHECK_FAILS(tb_bench_merge(m, other, "v", name, sizeof name, &c, &err), TB_ERR_INVALID,
                &err, "has no benchmark 'v'");
    char long_name[80];
    memset(long_name, 'x', 70);
    long_name[70] = 0;
    CHECK_FAILS(tb_bench_merge(m, other, long_name, name, sizeof name, &c, &err),
                TB_ERR_INVALID, &err, "1 to 63 characters");
    /* a named benchmark new to the target merges beside the other */
    CHECK_OK(tb_bench_merge(m, other, "u", name, sizeof name, &c, &err), &err);
    CHECK(c.copied == 0 && c.planned == 0 && count(m, "trials") == trials_before);
    /* the CLI: the same refusal with the store named, exit 2; --shard refused before a store */
    char out[8192], args[1024];
    snprintf(args, sizeof args, "merge --db %s %s", m, s0);
    CHECK(tb_test_run_cli(args, out, sizeof out) == 2);
    CHECK(tb_test_output_has(out, "was merged into"));
    snprintf(args, sizeof args, "merge --db %s", m);
    CHECK(tb_test_run_cli(args, out, sizeof out) == 2);
    CHECK(tb_test_output_has(out, "name the shards' stores"));
    char fresh[128];
    temp_path(fresh, sizeof fresh, "fresh");
    snprintf(args, sizeof args, "bench --db %s -w fmnist_mlp --shard 2/2", fresh);
    CHECK(tb_test_run_cli(args, out, sizeof out) == 2);
    CHECK(tb_test_output_has(out, "--shard: '2/2'"));
    CHECK(access(fresh, F_OK) != 0);
    /* the library refuses a bad shard before it makes a store */
    s.shard = 2;
    CHECK_FAILS(tb_bench_run(fresh, &s, NULL, NULL, &sum, &err), TB_ERR_INVALID, &err,
                "shard 2 of 2");
    CHECK(access(fresh, F_OK) != 0);
    free(t0);
    free(t1);
    free(tm);
    tb_test_remove_store(s0);
    tb_test_remove_store(s1);
    tb_test_remove_store(m);
    tb_test_remove_store(other);
    tb_test_remove_store(overlap);
}

int main(void)
{
    test_parse();
    test_units();
    test_shards_and_merge();
    return tb_test_finish("test_bench_shard");
}
