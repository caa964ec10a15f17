/* trial_api.c: the workload's fixed functions and helpers, as the submission API table. */
#include "bench/trial_impl.h"

#include <math.h>
#include <stdio.h>

static tb_workload *wl_of(tb_trial_ctx *c) { return tb_run_workload(c->run); }
static tb_tape *tape_of(tb_trial_ctx *c) { return tb_run_tape(c->run); }
static tb_params *params_of(tb_trial_ctx *c) { return tb_workload_params(wl_of(c)); }

static const char *api_submission_name(tb_trial_ctx *c) { return c->submission; }
static const tb_workload_info *api_workload_info(tb_trial_ctx *c)
{
    return tb_workload_get_info(wl_of(c));
}
static int64_t api_step_hint(tb_trial_ctx *c) { return c->step_hint; }

static tb_var *api_model_fn(tb_trial_ctx *c, tb_var *inputs)
{
    return tb_workload_forward(wl_of(c), tape_of(c), inputs, tb_run_dropout(c->run));
}

static tb_var *api_loss_fn(tb_trial_ctx *c, tb_var *outputs, tb_var *targets)
{
    return tb_workload_loss_fn(wl_of(c), tape_of(c), outputs, targets);
}

static tb_status api_backward(tb_trial_ctx *c, tb_var *loss, tb_error *err)
{
    if (!loss)
        return tb_fail(err, tb_tape_status(tape_of(c)) ? tb_tape_status(tape_of(c)) : TB_ERR_INVALID,
                       "%s", tb_tape_error(tape_of(c))->message[0] ? tb_tape_error(tape_of(c))->message
                                                                : "no loss to back-propagate");
    tb_params_begin_grads(params_of(c));
    tb_status st = tb_tape_backward(tape_of(c), loss);
    tb_params_end_grads(params_of(c));
    if (st != TB_OK) return tb_fail(err, st, "%s", tb_tape_error(tape_of(c))->message);
    return TB_OK;
}

static double api_scalar(tb_trial_ctx *c, tb_var *v)
{
    (void)c;
    float x = 0;
    if (!v || tb_tensor_download(&v->value, &x, NULL) != TB_OK) return (double)NAN;
    return x;
}

static tb_params *api_params(tb_trial_ctx *c) { return params_of(c); }
static int api_param_count(tb_trial_ctx *c) { return tb_params_count(params_of(c)); }
static tb_param *api_param_at(tb_trial_ctx *c, int i)
{
    return tb_params_get(params_of(c), i);
}
static int64_t api_numel(tb_trial_ctx *c) { return tb_params_numel(params_of(c)); }
static float *api_values(tb_trial_ctx *c) { return tb_params_values(params_of(c)); }
static float *api_grads(tb_trial_ctx *c) { return tb_params_grads(params_of(c)); }
static bool api_on_host(tb_trial_ctx *c) { return tb_backend_device(tb_run_backend(c->run)) == TB_DEVICE_CPU; }

static tb_status api_next_batch(tb_trial_ctx *c, tb_batch *out, tb_error *err)
{
    return tb_pipeline_next(tb_run_pipeline(c->run), tape_of(c), out, err);
}

void tb_trial_note_hparams(tb_trial_ctx *c, const tb_hparams *values, const tb_hparams *defaults)
{
    for (int i = 0; i < values->count; i++) {
        tb_hparams_set(&c->resolved, values->names[i], values->values[i], NULL);
        if (tb_hparams_has(defaults, values->names[i]))
            tb_hparams_set(&c->defaults, values->names[i], values->values[i], NULL);
    }
}

static tb_status api_optimizer_create(tb_trial_ctx *c, const char *name, const tb_hparams *hp,
                                      tb_optimizer **out, tb_error *err)
{
    tb_status st = tb_optimizer_create(name, params_of(c), hp, out, err);
    tb_hparams values, defaults;
    if (st == TB_OK && tb_hparams_resolve(name, hp, &values, &defaults, NULL) == TB_OK)
        tb_trial_note_hparams(c, &values, &defaults);
    return st;
}

static tb_status api_standard_update(tb_trial_ctx *c, tb_optimizer *opt, const tb_batch *batch,
                                     double lr_scale, double *loss, tb_error *err)
{
    return tb_run_standard_update(c->run, opt, batch, lr_scale, loss, err);
}

static tb_status api_fail(tb_error *err, tb_status st, const char *message)
{
    return tb_fail(err, st == TB_OK ? TB_ERR_INTERNAL : st, "%s", message ? message : "failed");
}

const tb_submission_api tb_trial_api = {
    .abi_version = TB_SUBMISSION_ABI_VERSION,
    .submission_name = api_submission_name,
    .workload_info = api_workload_info,
    .step_hint = api_step_hint,
    .model_fn = api_model_fn,
    .loss_fn = api_loss_fn,
    .backward = api_backward,
    .scalar = api_scalar,
    .params = api_params,
    .param_count = api_param_count,
    .param_at = api_param_at,
    .numel = api_numel,
    .values = api_values,
    .grads = api_grads,
    .on_host = api_on_host,
    .next_batch = api_next_batch,
    .optimizer_create = api_optimizer_create,
    .optimizer_step = tb_optimizer_step,
    .optimizer_destroy = tb_optimizer_destroy,
    .hparam = tb_hparams_get,
    .fail = api_fail,
    .standard_update = api_standard_update,
};
