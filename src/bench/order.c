/* order.c: the order a benchmark's trials run in: interleaved, so that a drift of the machine
 * over the run (other work starting, the CPU warming, the disk cache filling) falls on every
 * submission alike instead of on whichever ran last. Workload by workload (in the spec's
 * order), study by study, trial by trial, one trial of each submission in turn, the order of
 * the submissions reversed every other round (A B, B A, A B, ...: a linear drift then costs
 * each the same on average). A gp study's trials keep their order: trial k of a submission
 * still follows its trials before k. */
#include "bench/bench_impl.h"

#include <stdlib.h>
#include <string.h>

typedef struct order_key {
    int workload, study, trial, turn, index;
} order_key;

static int compare_keys(const void *pa, const void *pb)
{
    const order_key *a = pa, *b = pb;
    if (a->workload != b->workload) return a->workload < b->workload ? -1 : 1;
    if (a->study != b->study) return a->study < b->study ? -1 : 1;
    if (a->trial != b->trial) return a->trial < b->trial ? -1 : 1;
    if (a->turn != b->turn) return a->turn < b->turn ? -1 : 1;
    return a->index < b->index ? -1 : a->index > b->index;
}

static int position(const char *name, const char *const *names, int n)
{
    for (int i = 0; i < n; i++)
        if (strcmp(name, names[i]) == 0) return i;
    return n; /* not in the list: after those that are */
}

tb_status tb_bench_interleave(const tb_trial_record *trials, int n, const char *const *wls,
                              int n_wl, const char *const *subs, int n_subs, int *order,
                              tb_error *err)
{
    order_key *keys = calloc((size_t)(n > 0 ? n : 1), sizeof *keys);
    if (!keys) return tb_fail(err, TB_ERR_NOMEM, "ordering the trials: out of memory");
    int studies = 1, per_study = 1;
    for (int i = 0; i < n; i++) {
        if (trials[i].study >= studies) studies = trials[i].study + 1;
        if (trials[i].trial >= per_study) per_study = trials[i].trial + 1;
    }
    for (int i = 0; i < n; i++) {
        const tb_trial_record *t = &trials[i];
        order_key *k = &keys[i];
        k->workload = position(t->workload, wls, n_wl);
        k->study = t->study;
        k->trial = t->trial;
        k->index = i;
        const long round = ((long)k->workload * studies + t->study) * per_study + t->trial;
        const int sub = position(t->submission, subs, n_subs);
        /* every other round from the last submission to the first */
        k->turn = sub < n_subs && round % 2 ? n_subs - 1 - sub : sub;
    }
    qsort(keys, (size_t)n, sizeof *keys, compare_keys);
    for (int i = 0; i < n; i++) order[i] = keys[i].index;
    free(keys);
    return TB_OK;
}
