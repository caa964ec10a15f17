/* precond.c: an optimizer's diagonal preconditioner and the stability threshold of its step,
 * for sharpness diagnostics (see trainbench/optim.h). The algorithms answer through their
 * vtables; this file checks arguments and names what is missing. */
#include "optim/optim_impl.h"

#include <math.h>

const char *tb_optimizer_preconditioner_blocker(const tb_optimizer *opt)
{
    if (!opt) return "there is no optimizer (NULL)";
    if (opt->vt->preconditioner && opt->vt->stability) return NULL;
    return opt->vt->no_preconditioner ? opt->vt->no_preconditioner
                                      : "its step has no diagonal preconditioner";
}

tb_status tb_opt_latest_state(const tb_optimizer *opt, const float *state, float *p,
                              tb_error *err)
{
    if (opt->step < 1)
        return tb_fail(err, TB_ERR_INVALID, "%s: no step taken yet, so no preconditioner (P is "
                       "that of the latest step)", opt->vt->info.name);
    tb_backend_download(opt->be, p, state, (size_t)tb_params_numel(opt->params) * sizeof *p);
    return TB_OK;
}

/* TB_ERR_UNSUPPORTED naming the optimizer and why, or TB_OK. */
static tb_status check_diagonal(const tb_optimizer *opt, tb_error *err)
{
    const char *why = tb_optimizer_preconditioner_blocker(opt);
    if (!why) return TB_OK;
    return tb_fail(err, TB_ERR_UNSUPPORTED, "%s has no diagonal preconditioner: %s",
                   opt->vt->info.name, why);
}

tb_status tb_optimizer_preconditioner(const tb_optimizer *opt, float *p, tb_error *err)
{
    if (!opt || !p)
        return tb_fail(err, TB_ERR_INVALID, "optimizer_preconditioner: %s is NULL",
                       opt ? "the output array" : "the optimizer");
    tb_status st = check_diagonal(opt, err);
    return st == TB_OK ? opt->vt->preconditioner(opt, p, err) : st;
}

tb_status tb_optimizer_stability_threshold(const tb_optimizer *opt, double lr_scale, double *out,
                                           tb_error *err)
{
    if (!opt || !out)
        return tb_fail(err, TB_ERR_INVALID, "optimizer_stability_threshold: %s is NULL",
                       opt ? "out" : "the optimizer");
    if (!(lr_scale >= 0.0 && isfinite(lr_scale)))
        return tb_fail(err, TB_ERR_INVALID,
                       "stability threshold: learning-rate factor %g is not a finite value >= 0",
                       lr_scale);
    tb_status st = check_diagonal(opt, err);
    if (st != TB_OK) return st;
    double lr = tb_opt_hp(opt, "learning_rate") * lr_scale;
    double t = lr > 0.0 ? opt->vt->stability(opt, lr) : INFINITY; /* no step: always stable */
    if (isnan(t))
        return tb_fail(err, TB_ERR_UNSUPPORTED,
                       "%s: no stability threshold for these hyperparameters (a momentum that "
                       "changes every step: momentum_decay > 0)",
                       opt->vt->info.name);
    *out = t;
    return TB_OK;
}

tb_status tb_optimizer_stability_threshold_of(const char *algorithm, const tb_hparams *given,
                                              double *out, tb_error *err)
{
    if (!algorithm || !out)
        return tb_fail(err, TB_ERR_INVALID, "optimizer_stability_threshold_of: %s is NULL",
                       algorithm ? "out" : "the algorithm");
    tb_optimizer o = {0}; /* the vtable and the hyperparameters: all a threshold reads */
    tb_status st = tb_hparams_resolve(algorithm, given, &o.hp, NULL, err);
    if (st != TB_OK) return st;
    o.vt = (const tb_optimizer_vtable *)tb_optimizer_find(algorithm); /* info is its first member */
    return tb_optimizer_stability_threshold(&o, 1.0, out, err);
}
