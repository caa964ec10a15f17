/* optim_impl.h: how an optimizer plugs into the registry (internal). */
#ifndef TRAINBENCH_OPTIM_IMPL_H
#define TRAINBENCH_OPTIM_IMPL_H

#include "backend/backend_impl.h"
#include "trainbench/curvature.h"
#include "trainbench/optim.h"

typedef struct tb_optimizer_vtable {
    tb_optimizer_info info;
    /* Allocates state; hp is already validated and complete (every spec'd name present). */
    tb_status (*init)(tb_optimizer *opt, tb_error *err);
    tb_status (*step)(tb_optimizer *opt, double lr, tb_error *err);
    void (*destroy)(tb_optimizer *opt);
    /* Optional, for curvature methods (see trainbench/curvature.h); NULL elsewhere. */
    tb_status (*set_layers)(tb_optimizer *opt, const tb_layer_ref *layers, int n, tb_error *err);
    bool (*wants_fisher)(const tb_optimizer *opt);
    tb_status (*update_fisher)(tb_optimizer *opt, tb_error *err);
} tb_optimizer_vtable;

struct tb_optimizer {
    const tb_optimizer_vtable *vt;
    tb_params *params;
    tb_backend *be;
    tb_hparams hp; /* every hyperparameter of the algorithm, defaults filled in */
    tb_hparams given; /* only those the caller gave (for aliases such as one_minus_beta1) */
    int64_t step;  /* number of completed steps */
    void *state;
};

/* The value of a hyperparameter the algorithm declares. */
static inline double tb_opt_hp(const tb_optimizer *opt, const char *name)
{
    return tb_hparams_get(&opt->hp, name, 0.0);
}

/* Whether weight decay applies to a parameter of this kind (not biases or norm parameters). */
static inline bool tb_param_decays(tb_param_kind kind)
{
    return kind == TB_PARAM_WEIGHT || kind == TB_PARAM_EMBEDDING;
}

/* Allocates `count` floats of optimizer state on the backend, every one set to `value`;
 * NULL (with a message naming the algorithm) when out of memory. Free with tb_backend_free. */
static inline float *tb_opt_alloc_state(tb_optimizer *opt, int64_t count, float value,
                                        tb_error *err)
{
    float *p = tb_backend_alloc(opt->be, (size_t)(count > 0 ? count : 1) * sizeof(float));
    if (!p) {
        tb_fail(err, TB_ERR_NOMEM, "%s: cannot allocate state for %lld values",
                opt->vt->info.name, (long long)count);
        return NULL;
    }
    if (count > 0) opt->be->ops.fill(opt->be, p, count, value);
    return p;
}

extern const tb_optimizer_vtable tb_optim_sgd;
extern const tb_optimizer_vtable tb_optim_momentum;
extern const tb_optimizer_vtable tb_optim_nesterov;
extern const tb_optimizer_vtable tb_optim_rmsprop;
extern const tb_optimizer_vtable tb_optim_adagrad;
extern const tb_optimizer_vtable tb_optim_adam;
extern const tb_optimizer_vtable tb_optim_adamw;
extern const tb_optimizer_vtable tb_optim_nadam;
extern const tb_optimizer_vtable tb_optim_nadamw;
extern const tb_optimizer_vtable tb_optim_lars;
extern const tb_optimizer_vtable tb_optim_lamb;
extern const tb_optimizer_vtable tb_optim_kfac;
extern const tb_optimizer_vtable tb_optim_ekfac;
extern const tb_optimizer_vtable tb_optim_shampoo;

#endif
