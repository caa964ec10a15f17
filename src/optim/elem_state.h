/* elem_state.h: the state the element-wise optimizers share (ademamix, adopt, lion, mars,
 * prodigy, schedule-free): flat buffers of one value per parameter value each, in one backend
 * allocation, and optionally the step's coefficients in the step block, [0] for the parameters
 * without weight decay and [1] for those with. An algorithm's state struct starts with a
 * tb_elem_state and adds its own fields; tb_elem_create makes it, tb_elem_destroy (its vtable's
 * destroy) frees it. */
#ifndef TRAINBENCH_OPTIM_ELEM_STATE_H
#define TRAINBENCH_OPTIM_ELEM_STATE_H

#include "optim/optim_impl.h"

#include <stdlib.h>

typedef struct tb_elem_state {
    float *buffers; /* n_buffers x tb_params_numel floats, every one 0 at first */
    int64_t numel;  /* tb_params_numel */
    void *coefs;    /* two coefficient structs in the step block; NULL when there are none */
} tb_elem_state;

/* Allocates opt->state (state_bytes, zeroed, a struct whose first member is a tb_elem_state)
 * with n_buffers zeroed buffers and, when coef_bytes > 0, two coefficient structs of that
 * size each. TB_ERR_NOMEM naming the algorithm; what was allocated is left in opt->state for
 * tb_elem_destroy. */
static inline tb_status tb_elem_create(tb_optimizer *opt, size_t state_bytes, int n_buffers,
                                       size_t coef_bytes, tb_error *err)
{
    tb_elem_state *s = calloc(1, state_bytes);
    if (!s)
        return tb_fail(err, TB_ERR_NOMEM, "%s: cannot allocate its state", opt->vt->info.name);
    opt->state = s;
    s->numel = tb_params_numel(opt->params);
    s->buffers = tb_opt_alloc_state(opt, n_buffers * s->numel, 0.0f, err);
    if (!s->buffers) return TB_ERR_NOMEM;
    if (coef_bytes == 0) return TB_OK;
    s->coefs = tb_opt_alloc_step(opt, 2 * coef_bytes, err);
    return s->coefs ? TB_OK : TB_ERR_NOMEM;
}

/* Buffer i of n_buffers. */
static inline float *tb_elem_buffer(const tb_elem_state *s, int i)
{
    return s->buffers + (int64_t)i * s->numel;
}

/* Whether the optimizer decays weights at all (weight_decay not 0): looked up once a step. */
static inline bool tb_elem_decays(const tb_optimizer *opt)
{
    return tb_opt_hp(opt, "weight_decay") != 0.0;
}

/* Which of the two coefficient structs parameter p takes: 1 when it decays (tb_param_decays)
 * and decays (tb_elem_decays) holds. */
static inline int tb_elem_decay_index(bool decays, const tb_param *p)
{
    return decays && tb_param_decays(p->kind);
}

static inline void tb_elem_destroy(tb_optimizer *opt)
{
    tb_elem_state *s = opt->state;
    if (!s) return;
    tb_backend_free(opt->be, s->buffers);
    tb_backend_step_free(opt->be, s->coefs);
    free(s);
}

#endif
