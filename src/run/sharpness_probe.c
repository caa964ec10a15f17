/* sharpness_probe.c: a fixed batch and its deterministic gradient for sharpness measurements
 * during training (see sharpness_probe.h).
 *
 * Why training mode with frozen statistics rather than eval mode: the Hessian that decides
 * whether training steps are stable is that of the loss the steps differentiate, which
 * normalises with each batch's own statistics; eval mode's running averages define another
 * function of the parameters. Updating those averages during the 4K gradient evaluations of
 * a measurement would change what the next evaluation sees, so they are left alone. */
#include "run/sharpness_probe.h"

#include <stdlib.h>

struct tb_sharpness_probe {
    tb_workload *wl;
    tb_params *params;
    tb_optimizer *opt;
    tb_tape *tape;
    int64_t *rows; /* [n] the fixed batch's rows of the training split */
    int64_t n;
    tb_rng dropout; /* copied for every gradient: the same masks each time */
    tb_sharpness_config cfg;
};

void tb_sharpness_probe_destroy(tb_sharpness_probe *p)
{
    if (!p) return;
    tb_tape_destroy(p->tape);
    free(p->rows);
    free(p);
}

tb_status tb_sharpness_probe_create(tb_workload *wl, tb_optimizer *opt, int64_t batch,
                                    const int64_t *rows, int iterations, double fd_scale, uint64_t dropout_seed,
                                    tb_sharpness_probe **out, tb_error *err)
{
    const char *why = tb_optimizer_preconditioner_blocker(opt);
    if (why)
        return tb_fail(err, TB_ERR_INVALID,
                       "sharpness diagnostics need a diagonal preconditioner, and %s has none: "
                       "%s",
                       opt ? tb_optimizer_get_info(opt)->name : "the optimizer", why);
    int64_t n_train = tb_workload_size(wl, TB_SPLIT_TRAIN);
    if (batch < 1 || batch > n_train)
        return tb_fail(err, TB_ERR_INVALID,
                       "the sharpness batch must be 1 to the %lld training examples, got %lld",
                       (long long)n_train, (long long)batch);
    if (iterations < 1 || iterations > TB_LANCZOS_MAX_ITERS)
        return tb_fail(err, TB_ERR_INVALID, "sharpness iterations must be 1 to %d, got %d",
                       TB_LANCZOS_MAX_ITERS, iterations);
    tb_sharpness_probe *p = calloc(1, sizeof *p);
    if (p) p->rows = malloc((size_t)batch * sizeof *p->rows);
    if (!p || !p->rows) {
        tb_sharpness_probe_destroy(p);
        return tb_fail(err, TB_ERR_NOMEM, "cannot allocate a sharpness batch of %lld",
                       (long long)batch);
    }
    p->wl = wl;
    p->params = tb_workload_params(wl);
    p->opt = opt;
    p->n = batch;
    for (int64_t i = 0; i < batch; i++)
        p->rows[i] = rows ? rows[i] : (int64_t)(((double)i + 0.5) * (double)n_train / (double)batch);
    p->dropout = tb_rng_make(dropout_seed, TB_STREAM_COUNT + 2); /* the fisher rng is +1 */
    p->cfg = tb_sharpness_config_default();
    p->cfg.iterations = iterations;
    p->cfg.fd_scale = fd_scale;
    tb_status st = tb_tape_create(tb_params_backend(p->params), &p->tape, err);
    if (st != TB_OK) {
        tb_sharpness_probe_destroy(p);
        return st;
    }
    tb_tape_set_freeze_running_stats(p->tape, true);
    *out = p;
    return TB_OK;
}

/* The fixed batch's loss gradient into the parameters' gradients (a tb_grad_fn). */
static tb_status batch_gradient(void *user, tb_error *err)
{
    tb_sharpness_probe *p = user;
    tb_tape_reset(p->tape);
    tb_rng dropout = p->dropout;
    tb_var *x, *y, *loss = NULL;
    tb_params_begin_grads(p->params);
    if (tb_workload_gather(p->wl, p->tape, TB_SPLIT_TRAIN, p->rows, p->n, &x, &y))
        loss = tb_workload_loss_fn(p->wl, p->tape,
                                   tb_workload_forward(p->wl, p->tape, x, &dropout), y);
    tb_status st = loss ? tb_tape_backward(p->tape, loss) : tb_tape_status(p->tape);
    tb_params_end_grads(p->params);
    if (!loss && st == TB_OK) st = TB_ERR_INTERNAL; /* no loss, no error: should not happen */
    if (st != TB_OK)
        return tb_fail(err, st, "the sharpness batch's gradient: %s",
                       tb_tape_status(p->tape) != TB_OK ? tb_tape_error(p->tape)->message
                                                        : "the workload returned no loss");
    return TB_OK;
}

tb_status tb_sharpness_probe_measure(tb_sharpness_probe *p, double lr_scale, tb_sharpness *out,
                                     tb_error *err)
{
    return tb_sharpness_measure(p->params, batch_gradient, p, p->opt, lr_scale, &p->cfg, out,
                                err);
}
