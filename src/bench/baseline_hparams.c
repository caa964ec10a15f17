/* baseline_hparams.c: what a built-in baseline makes of a point's names, AlgoPerf's among them
 * (docs/TUNING.md, "AlgoPerf's search spaces, unedited"): the optimizer's hyperparameters
 * (one_minus_beta1 as beta1 = 1 - v or momentum = 1 - v), the learning-rate schedule
 * (warmup_fraction, warmup_factor, warmup_steps, decay_steps_factor, end_factor) and the names
 * the workload reads (dropout_rate, label_smoothing) or the baseline's batch size. One table,
 * so that planning (the dimension check) and the trial (the baseline's set-up) mean the same
 * by each name. */
#include "bench/bench_impl.h"
#include "trainbench/submission.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* The names a baseline reads besides its optimizer's, with their valid values. */
typedef struct own_name {
    const char *name;
    double min, max;
    bool min_open, max_open, integer;
    const char *what;
} own_name;

static const own_name own_names[] = {
    {TB_HP_WARMUP_FRACTION, 0, 1, false, true, false, "warmup steps / step hint"},
    {TB_HP_WARMUP_FACTOR, 0, 1, false, true, false, "AlgoPerf's name of warmup_fraction"},
    {TB_HP_WARMUP_STEPS, 0, 1e9, false, false, true, "warmup steps (AlgoPerf target setting)"},
    {TB_HP_DECAY_STEPS_FACTOR, 0, 100, true, false, false,
     "linear decay over this share of the steps after warmup"},
    {TB_HP_END_FACTOR, 0, 1, false, false, false, "linear decay's last factor"},
    {TB_HP_DROPOUT_RATE, 0, 1, false, true, false, "the workload's dropout"},
    {TB_HP_LABEL_SMOOTHING, 0, 1, false, true, false, "the training loss's label smoothing"},
    {"batch_size", 1, 1e9, false, false, true, "examples per step"},
};
#define N_OWN ((int)(sizeof own_names / sizeof *own_names))

static const own_name *own_find(const char *name)
{
    for (int i = 0; i < N_OWN; i++)
        if (strcmp(own_names[i].name, name) == 0) return &own_names[i];
    return NULL;
}

static bool has_hparam(const tb_optimizer_info *info, const char *name)
{
    for (int j = 0; j < info->n_hparams; j++)
        if (strcmp(info->hparams[j].name, name) == 0) return true;
    return false;
}

const char *tb_baseline_one_minus_beta1_target(const tb_optimizer_info *info)
{
    if (has_hparam(info, TB_HP_ONE_MINUS_BETA1)) return TB_HP_ONE_MINUS_BETA1; /* nadamw */
    if (has_hparam(info, "beta1")) return "beta1";
    if (has_hparam(info, "momentum")) return "momentum";
    return NULL;
}

/* What a point's name sets in info's optimizer, *v turned into its value there: the name
 * itself; beta1 as momentum for an optimizer with a momentum and no beta1 (AlgoPerf's
 * target-setting momentum and nesterov: momentum = beta1); one_minus_beta1 as 1 - v of what
 * beta1 sets (nadamw has the name itself); IGNORED for beta2 of an optimizer with a momentum
 * and no beta1, beta2 or rho (AlgoPerf's target-setting momentum and nesterov spaces carry
 * one they never read); NULL for a name it does not have. */
static const char IGNORED[] = "(ignored)";

static const char *alias_target(const tb_optimizer_info *info, const char *name, double *v)
{
    if (has_hparam(info, name)) return name;
    bool momentum_only = has_hparam(info, "momentum") && !has_hparam(info, "beta1");
    if (strcmp(name, "beta1") == 0 && momentum_only) return "momentum";
    if (strcmp(name, TB_HP_ONE_MINUS_BETA1) == 0 && tb_baseline_one_minus_beta1_target(info)) {
        *v = 1.0 - *v;
        return tb_baseline_one_minus_beta1_target(info);
    }
    if (strcmp(name, "beta2") == 0 && momentum_only && !has_hparam(info, "rho"))
        return IGNORED; /* (rmsprop's second-moment decay is its rho: not ignored there) */
    return NULL;
}

/* "a, b, c": the names a point for info's baseline may use. */
static void accepted_names(const tb_optimizer_info *info, char *buf, size_t cap)
{
    buf[0] = 0;
    for (int j = 0; j < info->n_hparams; j++) {
        strncat(buf, info->hparams[j].name, cap - strlen(buf) - 1);
        strncat(buf, ", ", cap - strlen(buf) - 1);
    }
    const char *aliases[] = {"beta1", TB_HP_ONE_MINUS_BETA1, "beta2"};
    for (int i = 0; i < 3; i++) {
        double v = 0;
        if (has_hparam(info, aliases[i]) || !alias_target(info, aliases[i], &v)) continue;
        strncat(buf, aliases[i], cap - strlen(buf) - 1);
        strncat(buf, ", ", cap - strlen(buf) - 1);
    }
    for (int i = 0; i < N_OWN; i++) {
        strncat(buf, own_names[i].name, cap - strlen(buf) - 1);
        strncat(buf, i + 1 < N_OWN ? ", " : "", cap - strlen(buf) - 1);
    }
}

static tb_status check_own(const own_name *o, double v, tb_error *err)
{
    bool low = o->min_open ? !(v > o->min) : !(v >= o->min);
    bool high = o->max_open ? !(v < o->max) : !(v <= o->max);
    if (low || high || !isfinite(v))
        return tb_fail(err, TB_ERR_INVALID, "%g is outside %c%g, %g%c (%s)", v,
                       o->min_open ? '(' : '[', o->min, o->max, o->max_open ? ')' : ']', o->what);
    if (o->integer && v != floor(v))
        return tb_fail(err, TB_ERR_INVALID, "%g is not an integer (%s)", v, o->what);
    return TB_OK;
}

tb_status tb_bench_check_dimension(const tb_optimizer_info *info, const char *source,
                                   const char *name, double value, tb_error *err)
{
    if (!name || !name[0])
        return tb_fail(err, TB_ERR_INVALID, "%s: a dimension has an empty name", source);
    const own_name *o = own_find(name);
    if (o) {
        tb_status st = check_own(o, value, err);
        return st == TB_OK ? st : tb_error_prefix(err, "%s: dimension '%s'", source, name);
    }
    double v = value;
    const char *target = alias_target(info, name, &v);
    if (!target) {
        char list[768];
        accepted_names(info, list, sizeof list);
        return tb_fail(err, TB_ERR_INVALID,
                       "%s: dimension '%s' is not a hyperparameter of %s (it has: %s)", source,
                       name, info->name, list);
    }
    if (target == IGNORED) { /* still a decay rate */
        if (v >= 0 && v < 1) return TB_OK;
        return tb_fail(err, TB_ERR_INVALID, "%s: dimension '%s': %g is outside [0, 1)", source,
                       name, value);
    }
    tb_hparams one = {0};
    tb_status st = tb_hparams_set(&one, target, v, err);
    if (st == TB_OK) st = tb_optimizer_check_hparams(info->name, &one, err);
    if (st == TB_OK) return TB_OK;
    if (strcmp(target, name) != 0 && v != value)
        return tb_error_prefix(err, "%s: dimension '%s': %g makes %s = 1 - %g = %g", source,
                               name, value, target, value, v);
    if (strcmp(target, name) != 0)
        return tb_error_prefix(err, "%s: dimension '%s' (as %s)", source, name, target);
    return tb_error_prefix(err, "%s: dimension '%s'", source, name);
}

/* The point's value of the first of two names that mean one thing; both given must agree. */
static tb_status one_of(const tb_hparams *point, const char *a, const char *b, double *out,
                        bool *given, tb_error *err)
{
    bool ha = tb_hparams_has(point, a), hb = tb_hparams_has(point, b);
    double va = tb_hparams_get(point, a, 0), vb = tb_hparams_get(point, b, 0);
    if (ha && hb && va != vb)
        return tb_fail(err, TB_ERR_INVALID, "%s = %g and %s = %g name one value and disagree "
                       "(give one of them)", a, va, b, vb);
    *given = ha || hb;
    *out = ha ? va : vb;
    return TB_OK;
}

/* The schedule of the point's names over step_hint steps (AlgoPerf's baselines): a warmup of
 * W = floor(f hint) steps (f warmup_fraction or warmup_factor) or W = warmup_steps; then,
 * when decay_steps_factor or end_factor is named, a linear decay from 1 to end_factor over
 * floor((hint - W) decay_steps_factor) steps (the momentum and nesterov baselines); else, when
 * a warmup is named, a cosine decay to 0 at the step hint (adamw, nadamw, lamb, shampoo);
 * with neither, a constant learning rate. A warmup at or past the hint is kept (then one step
 * of decay, AlgoPerf's max(hint - W, 1)). */
static tb_status make_schedule(const tb_hparams *point, int64_t hint, tb_schedule *out,
                               double *fraction, tb_error *err)
{
    memset(out, 0, sizeof *out);
    double f = 0;
    bool has_f = false;
    tb_status st = one_of(point, TB_HP_WARMUP_FRACTION, TB_HP_WARMUP_FACTOR, &f, &has_f, err);
    if (st != TB_OK) return st;
    bool has_w = tb_hparams_has(point, TB_HP_WARMUP_STEPS);
    if (has_f && has_w)
        return tb_fail(err, TB_ERR_INVALID, "%s and %s both set the warmup (give one of them)",
                       has_f && tb_hparams_has(point, TB_HP_WARMUP_FACTOR) ? TB_HP_WARMUP_FACTOR
                                                                           : TB_HP_WARMUP_FRACTION,
                       TB_HP_WARMUP_STEPS);
    const own_name *checks[] = {own_find(TB_HP_WARMUP_FRACTION), own_find(TB_HP_WARMUP_STEPS),
                                own_find(TB_HP_DECAY_STEPS_FACTOR), own_find(TB_HP_END_FACTOR)};
    for (int i = 0; i < 4; i++) {
        const char *name = i == 0 ? (tb_hparams_has(point, TB_HP_WARMUP_FACTOR)
                                         ? TB_HP_WARMUP_FACTOR : TB_HP_WARMUP_FRACTION)
                                  : checks[i]->name;
        if (tb_hparams_has(point, name) &&
            check_own(checks[i], tb_hparams_get(point, name, 0), err) != TB_OK)
            return tb_error_prefix(err, "%s", name);
    }
    int64_t warmup = has_w ? (int64_t)tb_hparams_get(point, TB_HP_WARMUP_STEPS, 0)
                           : (int64_t)(f * (double)hint);
    *fraction = has_f ? f : (double)warmup / (double)hint;
    bool linear = tb_hparams_has(point, TB_HP_DECAY_STEPS_FACTOR) ||
                  tb_hparams_has(point, TB_HP_END_FACTOR);
    out->warmup_steps = warmup;
    if (linear) {
        double dsf = tb_hparams_get(point, TB_HP_DECAY_STEPS_FACTOR, 1.0);
        /* a warmup at or past the hint (AlgoPerf's target-setting warmup_steps on a short
         * workload here) leaves one decay step, as AlgoPerf's max(hint - warmup, 1) */
        int64_t decay = (int64_t)((double)(hint - warmup) * dsf);
        out->kind = TB_SCHEDULE_LINEAR_DECAY;
        out->total_steps = warmup + (decay > 1 ? decay : 1);
        out->end_factor = tb_hparams_get(point, TB_HP_END_FACTOR, 0.0);
    } else if (has_f || has_w) {
        out->kind = TB_SCHEDULE_WARMUP_COSINE;
        out->total_steps = hint > warmup ? hint : warmup + 1;
    } else {
        out->kind = TB_SCHEDULE_CONSTANT;
        out->total_steps = hint;
    }
    return tb_schedule_validate(out, err);
}

tb_status tb_baseline_config_make(const char *optimizer, const tb_hparams *point,
                                  int64_t step_hint, tb_baseline_config *out, tb_error *err)
{
    memset(out, 0, sizeof *out);
    const tb_optimizer_info *info = tb_optimizer_find(optimizer);
    if (!info) return tb_fail(err, TB_ERR_INVALID, "unknown algorithm '%s'", optimizer);
    const tb_hparams none = {0};
    if (!point) point = &none;
    for (int i = 0; i < point->count; i++) {
        const char *name = point->names[i];
        double v = point->values[i];
        if (own_find(name)) continue; /* the schedule's, the workload's, the batch size */
        const char *target = alias_target(info, name, &v);
        if (target == IGNORED) continue;
        if (!target) /* the optimizer names it and the names it has */
            target = name;
        if (strcmp(target, name) == 0) {
            tb_status st = tb_hparams_set(&out->opt, name, v, err);
            if (st != TB_OK) return st;
            continue;
        }
        /* an alias: it must agree with the optimizer's own name given too */
        if (tb_hparams_has(point, target) && fabs(tb_hparams_get(point, target, 0) - v) > 1e-12)
            return tb_fail(err, TB_ERR_INVALID,
                           "%s: %s = %g and %s = %g name one value and disagree (give one of "
                           "them)", optimizer, target, tb_hparams_get(point, target, 0), name,
                           point->values[i]);
        if (tb_hparams_has(&out->opt, target) &&
            fabs(tb_hparams_get(&out->opt, target, 0) - v) > 1e-12)
            return tb_fail(err, TB_ERR_INVALID,
                           "%s: %s = %g disagrees with another name of %s (give one of them)",
                           optimizer, name, point->values[i], target);
        tb_hparams one = {0};
        tb_hparams_set(&one, target, v, NULL);
        tb_error e = {0};
        if (tb_optimizer_check_hparams(optimizer, &one, &e) != TB_OK)
            return tb_fail(err, e.status, "%s = %g makes %s = %g: %s", name, point->values[i],
                           target, v, e.message);
        tb_status st = tb_hparams_set(&out->opt, target, v, err);
        if (st != TB_OK) return st;
    }
    tb_status st = tb_optimizer_check_hparams(optimizer, &out->opt, err);
    if (st == TB_OK)
        st = make_schedule(point, step_hint > 0 ? step_hint : 1, &out->schedule,
                           &out->warmup_fraction, err);
    return st;
}

tb_status tb_bench_space_check(const tb_optimizer_info *info, const tb_search_space *space,
                               const char *source, tb_error *err)
{
    tb_status st = TB_OK;
    tb_search_dim d;
    for (int i = 0; st == TB_OK && tb_search_space_dim(space, i, &d); i++) {
        st = tb_bench_check_dimension(info, source, d.name, d.min, err);
        if (st == TB_OK) st = tb_bench_check_dimension(info, source, d.name, d.max, err);
        for (int k = 0; st == TB_OK && k < d.n_feasible; k++)
            st = tb_bench_check_dimension(info, source, d.name, d.feasible[k], err);
    }
    return st;
}
