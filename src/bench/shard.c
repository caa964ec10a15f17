/* shard.c: a share of a benchmark for independent runs (`bench --shard I/N`, a job array):
 * every shard plans the whole benchmark into a store of its own and runs its share of the
 * trials; tb_bench_merge (merge.c) joins the stores. The share is taken from the interleaved
 * order, which every shard computes alike from the same plan, so the shares are disjoint and
 * cover the plan, and each holds a mix of submissions and workloads. */
#include "bench/bench_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

tb_status tb_bench_shard_parse(const char *text, int *shard, int *shards, tb_error *err)
{
    if (!text || !shard || !shards)
        return tb_fail(err, TB_ERR_INVALID, "bench_shard_parse: %s is NULL",
                       !text ? "the text" : "an output");
    const char *slash = strchr(text, '/');
    char *end_i = NULL, *end_n = NULL;
    long i = -1, n = -1;
    if (slash && slash > text && text[0] >= '0' && text[0] <= '9') {
        i = strtol(text, &end_i, 10);
        if (slash[1] >= '0' && slash[1] <= '9') n = strtol(slash + 1, &end_n, 10);
    }
    if (!slash || end_i != slash || !end_n || *end_n != 0)
        return tb_fail(err, TB_ERR_INVALID, "'%s' is not a shard: give I/N, shard I (from 0) "
                       "of N, e.g. 0/4 ... 3/4", text);
    if (n < 1 || n > TB_BENCH_SHARDS_MAX)
        return tb_fail(err, TB_ERR_INVALID, "'%s': the count of shards must be in [1, %d]",
                       text, TB_BENCH_SHARDS_MAX);
    if (i >= n)
        return tb_fail(err, TB_ERR_INVALID, "'%s': shards count from 0, so shard %ld of %ld "
                       "does not exist (the last is %ld/%ld)", text, i, n, n - 1, n);
    *shard = (int)i;
    *shards = (int)n;
    return TB_OK;
}

static bool same_study(const tb_trial_record *a, const tb_trial_record *b)
{
    return a->study == b->study && strcmp(a->submission, b->submission) == 0 &&
           strcmp(a->workload, b->workload) == 0 && strcmp(a->ruleset, b->ruleset) == 0;
}

void tb_bench_shard_units(const tb_bench_spec *s, const tb_trial_record *trials, int n,
                          const int *order, int *unit)
{
    const bool by_study = s->sampler == TB_SAMPLER_GP && s->ruleset == TB_RULESET_EXTERNAL;
    int units = 0;
    for (int k = 0; k < n; k++) {
        unit[k] = -1;
        for (int j = 0; by_study && j < k && unit[k] < 0; j++)
            if (same_study(&trials[order[j]], &trials[order[k]])) unit[k] = unit[j];
        if (unit[k] < 0) unit[k] = units++;
    }
}

tb_status tb_bench_shard_take(const tb_bench_spec *s, tb_trial_record **trials, int *n,
                              int *order, char *note, size_t note_cap, tb_error *err)
{
    if (s->shards <= 1) return TB_OK;
    int *unit = malloc((size_t)(*n > 0 ? *n : 1) * sizeof *unit);
    tb_trial_record *mine = malloc((size_t)(*n > 0 ? *n : 1) * sizeof *mine);
    if (!unit || !mine) {
        free(unit);
        free(mine);
        return tb_fail(err, TB_ERR_NOMEM, "out of memory");
    }
    tb_bench_shard_units(s, *trials, *n, order, unit);
    int m = 0;
    for (int k = 0; k < *n; k++)
        if (unit[k] % s->shards == s->shard) mine[m++] = (*trials)[order[k]];
    for (int k = 0; k < m; k++) order[k] = k;
    size_t len = strlen(note);
    snprintf(note + len, note_cap - len, "%sshard %d/%d: %d of the %d planned trials (the "
             "others are the other shards'; merge the shards' stores with `trainbench merge` "
             "to score the benchmark)", len ? "\n" : "", s->shard, s->shards, m, *n);
    free(unit);
    free(*trials);
    *trials = mine;
    *n = m;
    return TB_OK;
}
