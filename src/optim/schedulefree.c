/* schedulefree.c: Schedule-Free AdamW and Schedule-Free SGD (Defazio et al. 2024), as the
 * schedulefree package's AdamWScheduleFree and SGDScheduleFree (docs/OPTIMIZERS.md):
 *   y  the parameters, where gradients are taken (training point)
 *   z  the base sequence, z -= lr u with u the (normalised) gradient plus wd y
 *   x  the average the model is evaluated at: y = (1 - beta1) z + beta1 x
 * Training keeps y in the parameters; prepare_for_eval writes x there (keeping a copy of y)
 * and prepare_for_train restores y bit for bit. Weight decay (at y) applies to weights and
 * embeddings only (tb_param_decays). */
#include "optim/elem_state.h"

#include <math.h>

typedef struct sf_state {
    tb_elem_state e;   /* z, y_saved and (AdamW) v; no step block (its step is not split) */
    float *z;          /* base sequence, tb_params_numel values (set from y at step 1) */
    float *v;          /* AdamW's second moment; NULL for SGD */
    float *y_saved;    /* y while the parameters hold x */
    bool z_ready;      /* z has been set from y */
    double lr_max;     /* the largest scheduled learning rate so far (-1 before any) */
    double weight_sum; /* sum of the averaging weights so far */
    tb_sf_coefs c[2];  /* the step's coefficients: [0] without decay, [1] with */
} sf_state;

#define SF_COMMON_SPECS                                                                            \
    {.name = "weight_decay",                                                                       \
     .default_value = 0.0,                                                                         \
     .min = 0.0,                                                                                   \
     .max = 1e6,                                                                                   \
     .help = "decay added to the (normalised) gradient, at y"},                                    \
        {.name = "warmup_steps",                                                                   \
         .default_value = 0.0,                                                                     \
         .min = 0.0,                                                                               \
         .max = 1e9,                                                                               \
         .help = "steps of linear warmup of the learning rate (a whole number)"},                  \
        {.name = "r",                                                                              \
         .default_value = 0.0,                                                                     \
         .min = 0.0,                                                                               \
         .max = 100.0,                                                                             \
         .help = "polynomial weighting of the average: weight (k+1)^r"},                           \
    {                                                                                              \
        .name = "weight_lr_power", .default_value = 2.0, .min = 0.0, .max = 100.0,                 \
        .help = "the average's weights are lr_max^weight_lr_power"                                 \
    }

static const tb_hparam_spec sfadamw_hparams[] = {
    {.name = "learning_rate",
     .default_value = 0.0025,
     .min = 0.0,
     .max = 1e6,
     .min_open = true,
     .help = "step size (lr)"},
    {.name = "beta1",
     .default_value = 0.9,
     .min = 0.0,
     .max = 1.0,
     .min_open = true,
     .max_open = true,
     .help = "interpolation y = (1 - beta1) z + beta1 x, in (0, 1)"},
    {.name = "beta2",
     .default_value = 0.999,
     .min = 0.0,
     .max = 1.0,
     .max_open = true,
     .help = "second-moment decay, in [0, 1)"},
    {.name = "epsilon",
     .default_value = 1e-8,
     .min = 0.0,
     .max = 1e12,
     .min_open = true,
     .help = "added to sqrt(v_hat); > 0"},
    SF_COMMON_SPECS,
};

static const tb_hparam_spec sfsgd_hparams[] = {
    {.name = "learning_rate",
     .default_value = 1.0,
     .min = 0.0,
     .max = 1e6,
     .min_open = true,
     .help = "step size (lr)"},
    {.name = "momentum",
     .default_value = 0.9,
     .min = 0.0,
     .max = 1.0,
     .min_open = true,
     .max_open = true,
     .help = "interpolation y = (1 - momentum) z + momentum x, in (0, 1)"},
    SF_COMMON_SPECS,
};

static bool is_adamw(const tb_optimizer *opt)
{
    return opt->vt == &tb_optim_sfadamw;
}

static double sf_beta1(const tb_optimizer *opt)
{
    return tb_opt_hp(opt, is_adamw(opt) ? "beta1" : "momentum");
}

static tb_status sf_check(const char *algorithm, tb_hparams *hp, const tb_hparams *given,
                          tb_error *err)
{
    double w = tb_hparams_get(hp, "warmup_steps", 0.0);
    if (w != floor(w))
        return tb_fail(err, TB_ERR_INVALID, "%s: warmup_steps = %g is not a whole number",
                       algorithm, w);
    if (!tb_hparams_has(hp, "epsilon")) return TB_OK;
    return tb_adam_check(algorithm, hp, given, err);
}

static tb_status sf_init(tb_optimizer *opt, tb_error *err)
{
    tb_status st = tb_elem_create(opt, sizeof(sf_state), is_adamw(opt) ? 3 : 2, 0, err);
    if (st != TB_OK) return st;
    sf_state *s = opt->state;
    s->lr_max = -1.0;
    s->z = tb_elem_buffer(&s->e, 0);
    s->y_saved = tb_elem_buffer(&s->e, 1);
    s->v = is_adamw(opt) ? tb_elem_buffer(&s->e, 2) : NULL;
    return TB_OK;
}

/* The host's part of step k + 1 = opt->step: the warmup, the averaging weight c_{k+1} and the
 * coefficients, as the reference computes them (in double). */
static void sf_coefs(tb_optimizer *opt, double lr)
{
    sf_state *s = opt->state;
    double k = (double)(opt->step - 1);
    double warmup = tb_opt_hp(opt, "warmup_steps");
    double lr_t = lr * (k < warmup ? (k + 1.0) / warmup : 1.0);
    if (lr_t > s->lr_max) s->lr_max = lr_t;
    double weight =
        pow(k + 1.0, tb_opt_hp(opt, "r")) * pow(s->lr_max, tb_opt_hp(opt, "weight_lr_power"));
    s->weight_sum += weight;
    double ckp1 = s->weight_sum != 0.0 ? weight / s->weight_sum : 0.0;
    double b1 = sf_beta1(opt), b2 = is_adamw(opt) ? tb_opt_hp(opt, "beta2") : 0.0;
    tb_sf_coefs c = {.beta2 = (float)b2,
                     .one_minus_beta2 = (float)(1.0 - b2),
                     .bc2 = (float)(1.0 - pow(b2, k + 1.0)),
                     .eps = (float)(is_adamw(opt) ? tb_opt_hp(opt, "epsilon") : 0.0),
                     .ckp1 = (float)ckp1,
                     .c_y = (float)(lr_t * (b1 * (1.0 - ckp1) - 1.0)),
                     .lr = (float)lr_t};
    s->c[0] = c;
    c.wd = (float)tb_opt_hp(opt, "weight_decay");
    s->c[1] = c;
}

static tb_status sf_step(tb_optimizer *opt, double lr, tb_error *err)
{
    (void)err;
    sf_state *s = opt->state;
    int64_t n = tb_params_numel(opt->params);
    float *y = tb_params_values(opt->params);
    if (!s->z_ready) { /* the reference's z starts as a copy of the parameters */
        opt->be->ops.copy(opt->be, s->z, y, (size_t)n * sizeof(float));
        s->z_ready = true;
    }
    sf_coefs(opt, lr);
    const bool decays = tb_elem_decays(opt);
    for (int i = 0; i < tb_params_count(opt->params); i++) {
        tb_param *p = tb_params_get(opt->params, i);
        opt->be->ops.sf_update(opt->be, tb_tensor_numel(&p->var.value), p->var.value.data,
                               p->var.grad.data, s->z + p->offset, s->v ? s->v + p->offset : NULL,
                               &s->c[tb_elem_decay_index(decays, p)]);
    }
    return TB_OK;
}

/* x = y / beta1 + (1 - 1/beta1) z: the reference's y.lerp(z, 1 - 1/beta1). Before the first
 * step z = y = x and nothing moves. */
static tb_status sf_prepare_for_eval(tb_optimizer *opt, tb_error *err)
{
    (void)err;
    sf_state *s = opt->state;
    if (!s->z_ready) return TB_OK;
    int64_t n = tb_params_numel(opt->params);
    float *y = tb_params_values(opt->params);
    double b1 = sf_beta1(opt);
    opt->be->ops.copy(opt->be, s->y_saved, y, (size_t)n * sizeof(float));
    opt->be->ops.scale(opt->be, y, n, (float)(1.0 / b1));
    opt->be->ops.axpy(opt->be, n, (float)(1.0 - 1.0 / b1), s->z, y);
    return TB_OK;
}

/* y back, bit for bit (the reference recomputes it by a second lerp, which rounds). */
static tb_status sf_prepare_for_train(tb_optimizer *opt, tb_error *err)
{
    (void)err;
    sf_state *s = opt->state;
    if (!s->z_ready) return TB_OK;
    int64_t n = tb_params_numel(opt->params);
    opt->be->ops.copy(opt->be, tb_params_values(opt->params), s->y_saved,
                      (size_t)n * sizeof(float));
    return TB_OK;
}

#define SF_VTABLE(var, id, about, specs)                                                           \
    const tb_optimizer_vtable var = {                                                              \
        .info = {.name = id,                                                                       \
                 .summary = about,                                                                 \
                 .hparams = specs,                                                                 \
                 .n_hparams = (int)(sizeof specs / sizeof *specs)},                                \
        .check = sf_check,                                                                         \
        .init = sf_init,                                                                           \
        .step = sf_step,                                                                           \
        .graph_blocker = "its first step copies the parameters into z, once",                      \
        .destroy = tb_elem_destroy,                                                                \
        .no_preconditioner = "it averages iterates: its step is not a preconditioned gradient "    \
                             "step of the parameters it is evaluated at",                          \
        .prepare_for_eval = sf_prepare_for_eval,                                                   \
        .prepare_for_train = sf_prepare_for_train,                                                 \
    }

SF_VTABLE(tb_optim_sfadamw, "schedule_free_adamw",
          "Schedule-Free AdamW (schedulefree's AdamWScheduleFree); evaluated at x",
          sfadamw_hparams);
SF_VTABLE(tb_optim_sfsgd, "schedule_free_sgd",
          "Schedule-Free SGD (schedulefree's SGDScheduleFree); evaluated at x", sfsgd_hparams);
