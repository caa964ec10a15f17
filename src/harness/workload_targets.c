/* workload_targets.c: per-workload benchmark settings (validation target, budget, eval period,
 * step hint) and the rulesets' names.
 *
 * PROVISIONAL. These numbers are placeholders chosen by hand, not calibrated by AlgoPerf's
 * procedure (tune the baselines, rerun the best, take the median best). They will be replaced
 * by the workload engineer's calibrated constants in tb_workload_info; when those fields
 * exist, this table should read them instead of holding its own. */
#include "trainbench/benchmark.h"

#include <string.h>

static const tb_bench_workload table[] = {
    /* fmnist_mlp: target error 0.115 (accuracy 0.885), 120 s, evals every 5 s, 2000 steps.
     * Quick preset: error 0.17 (accuracy 0.83), which most quick trials reached within about
     * 10 s of submission time on the heavily shared 2-core build machine (contended). */
    {"fmnist_mlp", "error_rate", 0.115, 120.0, 5.0, 2000, 0.17, NULL, true},
};

const tb_bench_workload *tb_bench_workload_find(const char *id)
{
    for (size_t i = 0; id && i < sizeof table / sizeof table[0]; i++)
        if (strcmp(table[i].workload, id) == 0) return &table[i];
    return NULL;
}

int tb_bench_workload_count(void) { return (int)(sizeof table / sizeof table[0]); }

const tb_bench_workload *tb_bench_workload_at(int i)
{
    return i >= 0 && i < tb_bench_workload_count() ? &table[i] : NULL;
}

const char *tb_ruleset_name(tb_ruleset r)
{
    return r == TB_RULESET_SELF ? "self" : "external";
}

tb_status tb_ruleset_parse(const char *name, tb_ruleset *out, tb_error *err)
{
    if (strcmp(name, "external") == 0 || strcmp(name, "external_tuning") == 0)
        *out = TB_RULESET_EXTERNAL;
    else if (strcmp(name, "self") == 0 || strcmp(name, "self_tuning") == 0)
        *out = TB_RULESET_SELF;
    else
        return tb_fail(err, TB_ERR_INVALID, "unknown ruleset '%s' (external or self)", name);
    return TB_OK;
}
