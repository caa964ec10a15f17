/* schedule.c: learning-rate schedules (warmup then cosine, linear, polynomial or step decay)
 * and gradient clipping by global norm. */
#include "optim/optim_impl.h"

#include <math.h>
#include <string.h>

static const struct {
    const char *name, *alias;
} schedule_names[TB_SCHEDULE_COUNT] = {
    [TB_SCHEDULE_CONSTANT] = {.name = "constant", .alias = "constant"},
    [TB_SCHEDULE_WARMUP_COSINE] = {.name = "warmup_cosine", .alias = "cosine"},
    [TB_SCHEDULE_LINEAR_DECAY] = {.name = "linear_decay", .alias = "linear"},
    [TB_SCHEDULE_POLYNOMIAL] = {.name = "polynomial", .alias = "poly"},
    [TB_SCHEDULE_STEP] = {.name = "step", .alias = "step"},
};

tb_status tb_schedule_parse(const char *name, tb_schedule_kind *out, tb_error *err)
{
    if (!name || !out)
        return tb_fail(err, TB_ERR_INVALID, "schedule_parse: %s is NULL", name ? "out" : "name");
    for (int k = 0; k < TB_SCHEDULE_COUNT; k++)
        if (strcmp(name, schedule_names[k].name) == 0 || strcmp(name, schedule_names[k].alias) == 0) {
            *out = (tb_schedule_kind)k;
            return TB_OK;
        }
    return tb_fail(err, TB_ERR_INVALID,
                   "unknown schedule '%s' (expected constant, warmup_cosine, linear_decay, "
                   "polynomial or step)", name);
}

const char *tb_schedule_name(tb_schedule_kind kind)
{
    return kind >= 0 && kind < TB_SCHEDULE_COUNT ? schedule_names[kind].name : "unknown";
}

tb_status tb_schedule_validate(const tb_schedule *s, tb_error *err)
{
    if (!s) return tb_fail(err, TB_ERR_INVALID, "schedule_validate: the schedule is NULL");
    if (s->kind < 0 || s->kind >= TB_SCHEDULE_COUNT)
        return tb_fail(err, TB_ERR_INVALID, "schedule kind %d is unknown", (int)s->kind);
    const char *name = tb_schedule_name(s->kind);
    if (s->warmup_steps < 0 || s->total_steps < 0)
        return tb_fail(err, TB_ERR_INVALID, "schedule %s: warmup_steps = %lld and total_steps = "
                       "%lld must not be negative", name, (long long)s->warmup_steps,
                       (long long)s->total_steps);
    if (s->kind != TB_SCHEDULE_CONSTANT && s->warmup_steps > s->total_steps)
        return tb_fail(err, TB_ERR_INVALID, "schedule %s: warmup_steps = %lld exceeds "
                       "total_steps = %lld", name, (long long)s->warmup_steps,
                       (long long)s->total_steps);
    if (s->kind == TB_SCHEDULE_POLYNOMIAL && (!(s->power >= 0.0) || !isfinite(s->power)))
        return tb_fail(err, TB_ERR_INVALID, "schedule polynomial: power = %g must be > 0 "
                       "(0 selects the default 2)", s->power);
    if (!(s->end_factor >= 0.0 && s->end_factor <= 1.0))
        return tb_fail(err, TB_ERR_INVALID, "schedule %s: end_factor = %g is outside [0, 1]",
                       name, s->end_factor);
    if (s->kind == TB_SCHEDULE_STEP) {
        if (!(s->decay_factor >= 0.0 && s->decay_factor <= 1.0))
            return tb_fail(err, TB_ERR_INVALID, "schedule step: decay_factor = %g is outside "
                           "(0, 1] (0 selects the default 0.1)", s->decay_factor);
        if (s->step_every < 0)
            return tb_fail(err, TB_ERR_INVALID, "schedule step: step_every = %lld must be >= 1 "
                           "(0 selects a third of the decay steps)", (long long)s->step_every);
    }
    return TB_OK;
}

double tb_schedule_factor(const tb_schedule *s, int64_t step)
{
    if (!s) return 1.0; /* no schedule */
    if (s->kind == TB_SCHEDULE_CONSTANT) return 1.0;
    if (step < 1) step = 1; /* steps are 1-based: before the first, the first's factor */
    if (s->total_steps > 0 && step > s->total_steps) step = s->total_steps; /* holds its end */
    if (s->warmup_steps > 0 && step <= s->warmup_steps)
        return (double)step / (double)s->warmup_steps;
    int64_t decay = s->total_steps - s->warmup_steps, after = step - s->warmup_steps;
    if (s->kind == TB_SCHEDULE_STEP) {
        double factor = s->decay_factor > 0.0 ? s->decay_factor : 0.1;
        /* default: a third of the decay steps, rounded up, so the run ends at the third
         * level (x0.01 by default) and never starts a fourth one */
        int64_t every = s->step_every > 0 ? s->step_every : (decay > 3 ? (decay + 2) / 3 : 1);
        return pow(factor, (double)((after > 0 ? after - 1 : 0) / every));
    }
    if (decay <= 0) return 1.0;
    double p = (double)after / (double)decay;
    if (p < 0.0) p = 0.0;
    if (p > 1.0) p = 1.0;
    double shape;
    switch (s->kind) {
    case TB_SCHEDULE_WARMUP_COSINE: shape = 0.5 * (1.0 + cos(3.14159265358979323846 * p)); break;
    case TB_SCHEDULE_LINEAR_DECAY: shape = 1.0 - p; break;
    case TB_SCHEDULE_POLYNOMIAL: shape = pow(1.0 - p, s->power > 0.0 ? s->power : 2.0); break;
    default: return 1.0;
    }
    if (p >= 1.0) shape = 0.0; /* exactly (cos(pi) is not -1 in double) */
    return s->end_factor + (1.0 - s->end_factor) * shape;
}

double tb_params_clip_grad_norm(tb_params *params, double max_norm)
{
    double norm = tb_params_grad_norm(params);
    if (!(max_norm > 0.0) || !isfinite(max_norm) || !isfinite(norm) || norm <= max_norm)
        return norm;
    tb_backend *be = tb_params_backend(params);
    be->ops.scale(be, tb_params_grads(params), tb_params_numel(params),
                  (float)(max_norm / (norm + 1e-6)));
    return norm;
}
