/* optimizer.c: the optimizer registry, hyperparameter sets and validation. */
#include "optim/optim_impl.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const tb_optimizer_vtable *const registry[] = {
    &tb_optim_sgd,
    &tb_optim_momentum,
    &tb_optim_nesterov,
    &tb_optim_rmsprop,
    &tb_optim_adagrad,
    &tb_optim_adam,
    &tb_optim_adamw,
    &tb_optim_nadam,
    &tb_optim_nadamw,
    &tb_optim_lars,
    &tb_optim_lamb,
    &tb_optim_kfac,
    &tb_optim_ekfac,
    &tb_optim_shampoo,
    &tb_optim_sfadamw,
    &tb_optim_sfsgd,
    &tb_optim_lion,
    &tb_optim_adopt,
    &tb_optim_ademamix,
    &tb_optim_prodigy,
    &tb_optim_mars,
    &tb_optim_muon,
    &tb_optim_sophia,
    &tb_optim_soap,
    &tb_optim_psgd_kron,
};
#define N_REGISTRY ((int)(sizeof registry / sizeof *registry))

/* ---- hyperparameter sets ----------------------------------------------------------------------- */

tb_status tb_hparams_set(tb_hparams *hp, const char *name, double value, tb_error *err)
{
    if (!hp || !name)
        return tb_fail(err, TB_ERR_INVALID, "hparams_set: %s is NULL", hp ? "name" : "hp");
    if (strlen(name) >= TB_HPARAM_NAME_MAX)
        return tb_fail(err, TB_ERR_INVALID, "hyperparameter name '%s' is too long", name);
    for (int i = 0; i < hp->count; i++)
        if (strcmp(hp->names[i], name) == 0) {
            hp->values[i] = value;
            return TB_OK;
        }
    if (hp->count == TB_HPARAMS_MAX)
        return tb_fail(err, TB_ERR_INVALID, "more than %d hyperparameters", TB_HPARAMS_MAX);
    snprintf(hp->names[hp->count], TB_HPARAM_NAME_MAX, "%s", name);
    hp->values[hp->count++] = value;
    return TB_OK;
}

bool tb_hparams_has(const tb_hparams *hp, const char *name)
{
    for (int i = 0; hp && name && i < hp->count; i++)
        if (strcmp(hp->names[i], name) == 0) return true;
    return false;
}

double tb_hparams_get(const tb_hparams *hp, const char *name, double fallback)
{
    for (int i = 0; hp && name && i < hp->count; i++)
        if (strcmp(hp->names[i], name) == 0) return hp->values[i];
    return fallback;
}

tb_status tb_hparams_parse_assignment(tb_hparams *hp, const char *text, tb_error *err)
{
    if (!hp || !text)
        return tb_fail(err, TB_ERR_INVALID, "hparams_parse_assignment: %s is NULL",
                       hp ? "text" : "hp");
    const char *eq = strchr(text, '=');
    if (!eq || eq == text)
        return tb_fail(err, TB_ERR_INVALID, "expected name=value, got '%s'", text);
    char name[TB_HPARAM_NAME_MAX];
    size_t len = (size_t)(eq - text);
    if (len >= sizeof name)
        return tb_fail(err, TB_ERR_INVALID, "hyperparameter name in '%s' is too long", text);
    memcpy(name, text, len);
    name[len] = '\0';
    char *end;
    errno = 0;
    double v = strtod(eq + 1, &end);
    if (eq[1] == '\0' || *end != '\0' || errno == ERANGE)
        return tb_fail(err, TB_ERR_INVALID, "hyperparameter %s: '%s' is not a number", name,
                       eq + 1);
    return tb_hparams_set(hp, name, v, err);
}

tb_status tb_hparams_validate(const tb_hparams *hp, const tb_hparam_spec *specs, int n_specs,
                              const char *algorithm, tb_error *err)
{
    if (!specs && n_specs > 0)
        return tb_fail(err, TB_ERR_INVALID, "hparams_validate: specs is NULL");
    if (!algorithm) algorithm = "the algorithm";
    for (int i = 0; hp && i < hp->count; i++) {
        const tb_hparam_spec *spec = NULL;
        for (int j = 0; j < n_specs; j++)
            if (strcmp(specs[j].name, hp->names[i]) == 0) spec = &specs[j];
        if (!spec) {
            char known[512] = "";
            for (int j = 0; j < n_specs; j++) {
                strncat(known, j ? ", " : "", sizeof known - strlen(known) - 1);
                strncat(known, specs[j].name, sizeof known - strlen(known) - 1);
            }
            return tb_fail(err, TB_ERR_INVALID,
                           "%s has no hyperparameter '%s' (it has: %s)", algorithm,
                           hp->names[i], known);
        }
        double v = hp->values[i];
        if (!isfinite(v))
            return tb_fail(err, TB_ERR_INVALID, "%s: %s = %g is not finite", algorithm,
                           spec->name, v);
        if (spec->is_flag && v != 0.0 && v != 1.0)
            return tb_fail(err, TB_ERR_INVALID, "%s: %s = %g must be 0 or 1", algorithm,
                           spec->name, v);
        bool low = spec->min_open ? !(v > spec->min) : !(v >= spec->min);
        bool high = spec->max_open ? !(v < spec->max) : !(v <= spec->max);
        if (low || high)
            return tb_fail(err, TB_ERR_INVALID, "%s: %s = %g is outside %c%g, %g%c", algorithm,
                           spec->name, v, spec->min_open ? '(' : '[', spec->min, spec->max,
                           spec->max_open ? ')' : ']');
        /* a learning rate above its excluded 0 in double, but 0 in float32 (1e-300): the
         * updates would all be 0 and the run would train nothing (an epsilon's or a damping's
         * tiny values are their algorithm's check, tb_opt_check_guard) */
        if (strcmp(spec->name, "learning_rate") == 0 && spec->min_open && v > 0 &&
            (float)v == 0.0f)
            return tb_fail(err, TB_ERR_INVALID,
                           "%s: %s = %g is 0 in float32, in which the updates run, outside its "
                           "range (0, %g%c (the smallest float32 above 0 is %g)",
                           algorithm, spec->name, v, spec->max, spec->max_open ? ')' : ']',
                           (double)1.40129846e-45f);
        /* below an excluded upper bound in double, but float32 rounds it onto the bound
         * (beta2 = 0.99999999 is 1 in float32: 1 - beta2 would be 0). Values that round to an
         * excluded 0 are each algorithm's check (an epsilon, a damping: tb_opt_check_guard). */
        if (spec->max_open && (double)(float)v == spec->max)
            return tb_fail(err, TB_ERR_INVALID,
                           "%s: %s = %.10g is %g in float32, in which the updates run, outside "
                           "its range %c%g, %g%c%s%s%s",
                           algorithm, spec->name, v, spec->max, spec->min_open ? '(' : '[',
                           spec->min, spec->max, spec->max_open ? ')' : ']',
                           spec->max == 1.0 ? " (1 - " : "", spec->max == 1.0 ? spec->name : "",
                           spec->max == 1.0 ? " would be 0)" : "");
    }
    return TB_OK;
}

tb_status tb_opt_check_guard(const tb_hparams *hp, const char *algorithm, const char *name,
                             const char *why, tb_error *err)
{
    double v = tb_hparams_get(hp, name, 0.0);
    if (v >= TB_OPT_GUARD_MIN) return TB_OK;
    return tb_fail(err, TB_ERR_INVALID,
                   "%s: %s = %g is below float32's smallest normal number %g: %s", algorithm,
                   name, v, TB_OPT_GUARD_MIN, why);
}

/* ---- registry ------------------------------------------------------------------------------- */

int tb_optimizer_count(void) { return N_REGISTRY; }

const tb_optimizer_info *tb_optimizer_info_at(int i)
{
    return i >= 0 && i < N_REGISTRY ? &registry[i]->info : NULL;
}

static const tb_optimizer_vtable *find_vtable(const char *name)
{
    for (int i = 0; name && i < N_REGISTRY; i++)
        if (strcmp(registry[i]->info.name, name) == 0) return registry[i];
    return NULL;
}

const tb_optimizer_info *tb_optimizer_find(const char *name)
{
    const tb_optimizer_vtable *vt = find_vtable(name);
    return vt ? &vt->info : NULL;
}

/* The algorithm `name` (NULL with a message naming the known ones if there is none) and its
 * complete, checked hyperparameter set in *full: the given values, defaults for the rest. */
static const tb_optimizer_vtable *checked_hparams(const char *name, const tb_hparams *hp,
                                                  tb_hparams *full, tb_error *err)
{
    const tb_optimizer_vtable *vt = find_vtable(name);
    if (!vt) {
        char known[512] = "";
        for (int i = 0; i < N_REGISTRY; i++) {
            strncat(known, i ? ", " : "", sizeof known - strlen(known) - 1);
            strncat(known, registry[i]->info.name, sizeof known - strlen(known) - 1);
        }
        tb_fail(err, TB_ERR_INVALID, "unknown algorithm '%s' (known: %s)", name, known);
        return NULL;
    }
    if (tb_hparams_validate(hp, vt->info.hparams, vt->info.n_hparams, name, err) != TB_OK)
        return NULL;
    memset(full, 0, sizeof *full);
    for (int i = 0; i < vt->info.n_hparams; i++) {
        const tb_hparam_spec *s = &vt->info.hparams[i];
        tb_hparams_set(full, s->name, tb_hparams_get(hp, s->name, s->default_value), NULL);
    }
    const tb_hparams none = {0};
    if (vt->check && vt->check(name, full, hp ? hp : &none, err) != TB_OK) return NULL;
    return vt;
}

tb_status tb_hparams_resolve(const char *name, const tb_hparams *given, tb_hparams *out,
                             tb_hparams *defaults, tb_error *err)
{
    if (!name || !out)
        return tb_fail(err, TB_ERR_INVALID, "hparams_resolve: %s is NULL",
                       name ? "out" : "the algorithm's name");
    memset(out, 0, sizeof *out);
    if (defaults) memset(defaults, 0, sizeof *defaults);
    tb_error own = {0};
    const tb_optimizer_vtable *vt = checked_hparams(name, given, out, &own);
    if (!vt) {
        memset(out, 0, sizeof *out);
        if (err) *err = own;
        return own.status;
    }
    /* a default is a value neither given nor derived from a given alias (the check settles
     * aliases: nadamw's beta1 from a given one_minus_beta1) */
    for (int i = 0; defaults && i < vt->info.n_hparams; i++) {
        const tb_hparam_spec *s = &vt->info.hparams[i];
        if (!tb_hparams_has(given, s->name) &&
            tb_hparams_get(out, s->name, s->default_value) == s->default_value)
            tb_hparams_set(defaults, s->name, s->default_value, NULL);
    }
    return TB_OK;
}

tb_status tb_optimizer_check_hparams(const char *name, const tb_hparams *hp, tb_error *err)
{
    if (!name)
        return tb_fail(err, TB_ERR_INVALID, "optimizer_check_hparams: the algorithm's name is "
                       "NULL");
    tb_hparams full;
    tb_error own = {0};
    if (checked_hparams(name, hp, &full, &own)) return TB_OK;
    if (err) *err = own;
    return own.status;
}

tb_status tb_optimizer_create(const char *name, tb_params *params, const tb_hparams *hp,
                              tb_optimizer **out, tb_error *err)
{
    if (!name || !out)
        return tb_fail(err, TB_ERR_INVALID, "optimizer_create: %s is NULL",
                       name ? "out" : "the algorithm's name");
    if (!params) return tb_fail(err, TB_ERR_INVALID, "optimizer_create: params is NULL");
    tb_hparams full;
    tb_error own = {0};
    const tb_optimizer_vtable *vt = checked_hparams(name, hp, &full, &own);
    if (!vt) {
        if (err) *err = own;
        return own.status;
    }
    if (!tb_params_values(params))
        return tb_fail(err, TB_ERR_INVALID, "%s: parameters are not finalized", name);
    tb_optimizer *opt = calloc(1, sizeof *opt);
    if (!opt) return tb_fail(err, TB_ERR_NOMEM, "cannot allocate optimizer %s", name);
    opt->vt = vt;
    opt->params = params;
    opt->be = tb_params_backend(params);
    opt->hp = full;
    tb_status st = vt->init(opt, err);
    if (st != TB_OK) {
        tb_optimizer_destroy(opt);
        return st;
    }
    *out = opt;
    return TB_OK;
}

void tb_optimizer_destroy(tb_optimizer *opt)
{
    if (!opt) return;
    if (opt->vt->destroy) opt->vt->destroy(opt);
    free(opt);
}

/* A schedule's factor must be finite and >= 0; false with err filled otherwise. */
static bool lr_scale_ok(double lr_scale, tb_error *err)
{
    if (lr_scale >= 0.0 && isfinite(lr_scale)) return true;
    tb_fail(err, TB_ERR_INVALID, "learning-rate factor %g is not a finite value >= 0", lr_scale);
    return false;
}

/* TB_ERR_NUMERIC naming the first parameter whose gradient holds a NaN or an infinity, before
 * step opt->step + 1 writes anything. One read of the flat gradient buffer in float
 * (all_finite; on the MLP's 1.86 M gradients from L3, 0.145 ms at 2 threads against 0.165
 * for the sum of squares in double it replaced); the parameters are searched only when it
 * fails. Inside a CUDA graph capture nothing can be read back: no check (as for
 * tb_optimizer_step_queue). */
static tb_status check_gradients(tb_optimizer *opt, tb_error *err)
{
    if (tb_backend_capturing(opt->be) || tb_params_grads_finite(opt->params)) return TB_OK;
    const char *which = "a padding element";
    for (int i = 0; i < tb_params_count(opt->params); i++) {
        tb_param *p = tb_params_get(opt->params, i);
        if (!opt->be->ops.all_finite(opt->be, tb_tensor_numel(&p->var.grad), p->var.grad.data)) {
            which = p->name;
            break;
        }
    }
    return tb_fail(err, TB_ERR_NUMERIC,
                   "%s: step %lld: the gradient of '%s' is not finite (NaN or infinity); the "
                   "update was not applied",
                   opt->vt->info.name, (long long)opt->step + 1, which);
}

tb_status tb_optimizer_step(tb_optimizer *opt, double lr_scale, tb_error *err)
{
    if (!opt) return tb_fail(err, TB_ERR_INVALID, "optimizer_step: the optimizer is NULL");
    if (!lr_scale_ok(lr_scale, err)) return TB_ERR_INVALID;
    if (opt->at_eval)
        return tb_fail(err, TB_ERR_INVALID,
                       "%s: step %lld while the parameters hold the evaluation point (call "
                       "tb_optimizer_prepare_for_train first)",
                       opt->vt->info.name, (long long)opt->step + 1);
    tb_status gst = check_gradients(opt, err);
    if (gst != TB_OK) return gst;
    if (opt->vt->prepare) {
        tb_status st = tb_optimizer_step_prepare(opt, lr_scale, err);
        return st == TB_OK ? tb_optimizer_step_queue(opt, err) : st;
    }
    if (!lr_scale_ok(lr_scale, err)) return TB_ERR_INVALID;
    opt->step++; /* the algorithm reads the number of the step it takes */
    tb_status st = opt->vt->step(opt, tb_opt_hp(opt, "learning_rate") * lr_scale, err);
    if (st != TB_OK) opt->step--; /* a failed step does not count */
    return st;
}

const char *tb_optimizer_graph_blocker(const tb_optimizer *opt)
{
    if (!opt) return "there is no optimizer (NULL)";
    if (opt->vt->prepare) return NULL;
    return opt->vt->graph_blocker ? opt->vt->graph_blocker : "its step has host-side work";
}

tb_status tb_optimizer_step_prepare(tb_optimizer *opt, double lr_scale, tb_error *err)
{
    if (!opt) return tb_fail(err, TB_ERR_INVALID, "optimizer_step_prepare: the optimizer is NULL");
    if (!opt->vt->prepare)
        return tb_fail(err, TB_ERR_UNSUPPORTED, "%s cannot be replayed from a graph: %s",
                       opt->vt->info.name, tb_optimizer_graph_blocker(opt));
    if (!lr_scale_ok(lr_scale, err)) return TB_ERR_INVALID;
    opt->step++;
    opt->prepared = true;
    tb_status st = opt->vt->prepare(opt, tb_opt_hp(opt, "learning_rate") * lr_scale, err);
    if (st != TB_OK) opt->step--; /* a failed step does not count */
    return st;
}

tb_status tb_optimizer_step_queue(tb_optimizer *opt, tb_error *err)
{
    if (!opt) return tb_fail(err, TB_ERR_INVALID, "optimizer_step_queue: the optimizer is NULL");
    if (!opt->vt->queue)
        return tb_fail(err, TB_ERR_UNSUPPORTED, "%s cannot be replayed from a graph: %s",
                       opt->vt->info.name, tb_optimizer_graph_blocker(opt));
    if (!opt->prepared)
        return tb_fail(err, TB_ERR_INVALID,
                       "%s: tb_optimizer_step_queue before any tb_optimizer_step_prepare",
                       opt->vt->info.name);
    opt->vt->queue(opt);
    return TB_OK;
}

tb_status tb_optimizer_prepare_for_eval(tb_optimizer *opt, tb_error *err)
{
    if (!opt) return tb_fail(err, TB_ERR_INVALID, "optimizer_prepare_for_eval: the optimizer is NULL");
    if (opt->at_eval || !opt->vt->prepare_for_eval) return TB_OK;
    tb_status st = opt->vt->prepare_for_eval(opt, err);
    if (st == TB_OK) opt->at_eval = true;
    return st;
}

tb_status tb_optimizer_prepare_for_train(tb_optimizer *opt, tb_error *err)
{
    if (!opt)
        return tb_fail(err, TB_ERR_INVALID, "optimizer_prepare_for_train: the optimizer is NULL");
    if (!opt->at_eval || !opt->vt->prepare_for_train) return TB_OK;
    tb_status st = opt->vt->prepare_for_train(opt, err);
    if (st == TB_OK) opt->at_eval = false;
    return st;
}

bool tb_optimizer_evaluates_elsewhere(const tb_optimizer *opt)
{
    return opt && opt->vt->prepare_for_eval && opt->vt->prepare_for_train;
}

const tb_optimizer_info *tb_optimizer_get_info(const tb_optimizer *opt)
{
    return opt ? &opt->vt->info : NULL;
}
double tb_optimizer_hparam(const tb_optimizer *opt, const char *name)
{
    return opt ? tb_hparams_get(&opt->hp, name, NAN) : NAN;
}
int64_t tb_optimizer_steps(const tb_optimizer *opt) { return opt ? opt->step : 0; }
