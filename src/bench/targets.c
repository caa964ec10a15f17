/* workload_targets.c: each workload's benchmark settings (validation target, budget, eval
 * period, step hint), read from the workload itself (tb_workload_info, calibrated constants in
 * src/workloads/), plus the looser targets of the quick preset, and the rulesets' names. */
#include "trainbench/benchmark.h"

#include <string.h>

/* Quick preset: a target a default baseline reaches within the quick budget (15 s of timed
 * training on 2 cores), per base workload; variants use their base's. Set from the best
 * validation metric of 15 s runs of the default adamw and sgd (Nesterov) settings on an idle
 * 2-core machine (`trainbench train -w W -a A --max-time 15 --eval-period 3 --schedule
 * constant`), loosened so most points of the default search spaces reach them. */
static const struct {
    const char *base;
    double target;
} quick_targets[] = {
    {"fmnist_mlp", 0.17},         /* 15 s runs: adamw 0.116, nesterov 0.122 */
    {"fmnist_cnn", 0.25},         /* adamw 0.105, nesterov 0.192 */
    {"fmnist_autoencoder", 0.45}, /* adamw 0.305, nesterov 0.419 */
    {"kjv_transformer", 3.6},     /* adamw 2.84, nesterov 3.51 bits per character */
    {"wordnet_sparse", 7.2},      /* adamw 6.80, nesterov 6.83 nats */
};

static double quick_target(const tb_workload_info *w)
{
    for (size_t i = 0; i < sizeof quick_targets / sizeof quick_targets[0]; i++)
        if (strcmp(quick_targets[i].base, w->base ? w->base : w->id) == 0)
            return quick_targets[i].target;
    return w->validation_target;
}

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
    out->quick_target = quick_target(w);
    out->variant_of = w->variant && w->variant[0] ? w->base : NULL;
    out->lower_is_better = w->lower_is_better;
    return true;
}

bool tb_bench_workload_find(const char *id, tb_bench_workload *out)
{
    for (int i = 0; id && i < tb_workload_count(); i++)
        if (strcmp(tb_workload_info_at(i)->id, id) == 0) return fill(tb_workload_info_at(i), out);
    return false;
}

int tb_bench_workload_count(void) { return tb_workload_count(); }

bool tb_bench_workload_at(int i, tb_bench_workload *out)
{
    return fill(tb_workload_info_at(i), out);
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
