/* targets.c: each workload's benchmark settings (validation and quick targets, budget, eval
 * period, step hint), read from the workload itself (tb_workload_info: calibrated constants in
 * src/workloads/), and the rulesets' names. */
#include "trainbench/benchmark.h"

#include <string.h>

static bool fill(const tb_workload_info *w, tb_bench_workload *out)
{
    if (!w || !out) return false;
    memset(out, 0, sizeof *out);
    out->workload = w->id;
    out->metric = w->metric;
    out->target = w->validation_target;
    out->max_runtime_s = w->max_runtime_s;
    out->eval_period_s = w->eval_period_s;
    out->step_hint = w->step_hint;
    out->quick_target = w->quick_target;
    out->variant_of = tb_workload_variant_of(w);
    out->held_out = out->variant_of && w->held_out;
    out->lower_is_better = w->lower_is_better;
    return true;
}

bool tb_bench_workload_find(const char *id, tb_bench_workload *out)
{
    return fill(tb_workload_find_info(id), out);
}

int tb_bench_workload_count(void) { return tb_workload_count(); }

bool tb_bench_workload_at(int i, tb_bench_workload *out)
{
    return fill(tb_workload_info_at(i), out);
}

bool tb_bench_workload_default(const tb_bench_workload *w, tb_bench_variants variants)
{
    if (!w->variant_of) return true;
    return variants == TB_BENCH_VARIANTS_ALL ||
           (variants == TB_BENCH_VARIANTS_HELD_OUT && w->held_out);
}

const char *tb_ruleset_name(tb_ruleset r)
{
    return r == TB_RULESET_SELF ? "self" : "external";
}

tb_status tb_ruleset_parse(const char *name, tb_ruleset *out, tb_error *err)
{
    if (!name || !out)
        return tb_fail(err, TB_ERR_INVALID, "ruleset_parse: %s is NULL", name ? "out" : "name");
    if (strcmp(name, "external") == 0 || strcmp(name, "external_tuning") == 0)
        *out = TB_RULESET_EXTERNAL;
    else if (strcmp(name, "self") == 0 || strcmp(name, "self_tuning") == 0)
        *out = TB_RULESET_SELF;
    else
        return tb_fail(err, TB_ERR_INVALID, "unknown ruleset '%s' (external or self)", name);
    return TB_OK;
}
