/* params.c: trainable parameters in one flat value buffer and one flat gradient buffer. */
#include "backend/backend_impl.h"
#include "trainbench/nn.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct tb_params {
    tb_backend *be;
    tb_param **items;
    int count, cap;
    int64_t numel;
    float *values, *grads; /* device, numel each; NULL until finalized */
};

tb_status tb_params_create(tb_backend *be, tb_params **out, tb_error *err)
{
    if (!be || !out)
        return tb_fail(err, TB_ERR_INVALID, "params_create: %s is NULL", be ? "out" : "backend");
    tb_params *p = calloc(1, sizeof *p);
    if (!p) return tb_fail(err, TB_ERR_NOMEM, "cannot allocate parameters");
    p->be = be;
    *out = p;
    return TB_OK;
}

void tb_params_destroy(tb_params *p)
{
    if (!p) return;
    for (int i = 0; i < p->count; i++) free(p->items[i]);
    free(p->items);
    tb_backend_free(p->be, p->values);
    tb_backend_free(p->be, p->grads);
    free(p);
}

tb_var *tb_params_add(tb_params *p, const char *name, tb_param_kind kind, int ndim,
                      const int64_t *shape, tb_error *err)
{
    if (!p || !name) {
        tb_fail(err, TB_ERR_INVALID, "params_add: %s is NULL", p ? "name" : "params");
        return NULL;
    }
    if (p->values) {
        tb_fail(err, TB_ERR_INVALID, "parameter '%s' added after finalize", name);
        return NULL;
    }
    const size_t len = strlen(name);
    if (len >= TB_PARAM_NAME_MAX) {
        tb_fail(err, TB_ERR_INVALID, "parameter name '%s' has %zu characters (at most "
                "TB_PARAM_NAME_MAX - 1 = %d)", name, len, TB_PARAM_NAME_MAX - 1);
        return NULL;
    }
    if (ndim < 1) {
        tb_fail(err, TB_ERR_SHAPE, "parameter '%s' has %d dimensions", name, ndim);
        return NULL;
    }
    tb_tensor value;
    if (tb_tensor_wrap(p->be, NULL, TB_F32, ndim, shape, &value, err) != TB_OK) {
        tb_error_prefix(err, "parameter '%s'", name);
        return NULL;
    }
    /* 16-float alignment of every parameter inside the flat buffer; the total must stay
     * countable in bytes */
    const int64_t padded = (tb_tensor_numel(&value) + 15) / 16 * 16;
    if (padded > INT64_MAX / (int64_t)sizeof(float) - p->numel) {
        tb_fail(err, TB_ERR_INVALID, "parameter '%s': the parameters' total size would exceed "
                "2^63 - 1 bytes", name);
        return NULL;
    }
    for (int i = 0; i < p->count; i++)
        if (strcmp(p->items[i]->name, name) == 0) {
            tb_fail(err, TB_ERR_INVALID, "parameter '%s' declared twice", name);
            return NULL;
        }
    if (p->count == p->cap) {
        int cap = p->cap ? 2 * p->cap : 16;
        tb_param **items = realloc(p->items, (size_t)cap * sizeof *items);
        if (!items) {
            tb_fail(err, TB_ERR_NOMEM, "out of memory declaring parameter '%s'", name);
            return NULL;
        }
        p->items = items;
        p->cap = cap;
    }
    tb_param *prm = calloc(1, sizeof *prm);
    if (!prm) {
        tb_fail(err, TB_ERR_NOMEM, "out of memory declaring parameter '%s'", name);
        return NULL;
    }
    snprintf(prm->name, sizeof prm->name, "%s", name);
    prm->kind = kind;
    prm->var.value = value;
    prm->var.grad = prm->var.value;
    prm->var.requires_grad = true;
    prm->offset = p->numel;
    p->numel += padded;
    p->items[p->count++] = prm;
    return &prm->var;
}

tb_status tb_params_finalize(tb_params *p, tb_error *err)
{
    if (!p) return tb_fail(err, TB_ERR_INVALID, "params_finalize: params is NULL");
    if (p->values) return tb_fail(err, TB_ERR_INVALID, "parameters finalized twice");
    size_t bytes = (size_t)(p->numel ? p->numel : 1) * sizeof(float);
    p->values = tb_backend_alloc(p->be, bytes);
    p->grads = tb_backend_alloc(p->be, bytes);
    if (!p->values || !p->grads)
        return tb_fail(err, TB_ERR_NOMEM, "cannot allocate %lld parameters",
                       (long long)p->numel);
    p->be->ops.fill(p->be, p->values, p->numel, 0.0f);
    p->be->ops.fill(p->be, p->grads, p->numel, 0.0f);
    for (int i = 0; i < p->count; i++) {
        tb_param *prm = p->items[i];
        prm->var.value.data = p->values + prm->offset;
        prm->var.grad.data = p->grads + prm->offset;
    }
    return TB_OK;
}

/* The queries and gradient calls accept NULL: as parameters with nothing declared. */
int tb_params_count(const tb_params *p) { return p ? p->count : 0; }
tb_param *tb_params_get(tb_params *p, int i)
{
    return p && i >= 0 && i < p->count ? p->items[i] : NULL;
}
int64_t tb_params_numel(const tb_params *p) { return p ? p->numel : 0; }

int64_t tb_params_trainable(const tb_params *p)
{
    int64_t n = 0;
    for (int i = 0; p && i < p->count; i++) n += tb_tensor_numel(&p->items[i]->var.value);
    return n;
}
float *tb_params_values(tb_params *p) { return p ? p->values : NULL; }
float *tb_params_grads(tb_params *p) { return p ? p->grads : NULL; }
tb_backend *tb_params_backend(const tb_params *p) { return p ? p->be : NULL; }

void tb_params_zero_grad(tb_params *p)
{
    if (!p) return;
    if (p->grads) p->be->ops.fill(p->be, p->grads, p->numel, 0.0f);
    for (int i = 0; i < p->count; i++) p->items[i]->var.grad_fresh = false;
}

void tb_params_begin_grads(tb_params *p)
{
    for (int i = 0; p && i < p->count; i++) p->items[i]->var.grad_fresh = p->grads != NULL;
}

void tb_params_end_grads(tb_params *p)
{
    for (int i = 0; p && i < p->count; i++) {
        tb_var *v = &p->items[i]->var;
        if (v->grad_fresh)
            p->be->ops.fill(p->be, v->grad.data, tb_tensor_numel(&v->grad), 0.0f);
        v->grad_fresh = false;
    }
}

double tb_params_grad_norm(tb_params *p)
{
    return p && p->grads ? sqrt(p->be->ops.sum_squares(p->be, p->numel, p->grads)) : 0.0;
}

bool tb_params_grads_finite(tb_params *p)
{
    return !p || !p->grads || p->be->ops.all_finite(p->be, p->numel, p->grads);
}

/* ---- initialisation --------------------------------------------------------------------------- */

static tb_status init_with(tb_var *v, tb_rng *rng, int kind, float a, float b, tb_error *err)
{
    static const char *const names[3] = {"init_normal", "init_uniform", "init_constant"};
    if (!v) return tb_fail(err, TB_ERR_INVALID, "%s: the variable is NULL", names[kind]);
    if (!rng && kind != 2) return tb_fail(err, TB_ERR_INVALID, "%s: rng is NULL", names[kind]);
    int64_t n = tb_tensor_numel(&v->value);
    if (!v->value.data) return tb_fail(err, TB_ERR_INVALID, "initialising an unallocated tensor");
    float *host = malloc((size_t)(n ? n : 1) * sizeof(float));
    if (!host) return tb_fail(err, TB_ERR_NOMEM, "out of memory initialising %lld values",
                              (long long)n);
    if (kind == 0)
        tb_rng_fill_normal(rng, host, n, a, b);
    else if (kind == 1)
        tb_rng_fill_uniform(rng, host, n, a, b);
    else
        for (int64_t i = 0; i < n; i++) host[i] = a;
    tb_status st = tb_tensor_upload(&v->value, host, err);
    free(host);
    return st;
}

tb_status tb_init_normal(tb_var *v, tb_rng *rng, float mean, float std, tb_error *err)
{
    return init_with(v, rng, 0, mean, std, err);
}

tb_status tb_init_uniform(tb_var *v, tb_rng *rng, float lo, float hi, tb_error *err)
{
    return init_with(v, rng, 1, lo, hi, err);
}

tb_status tb_init_constant(tb_var *v, float value, tb_error *err)
{
    return init_with(v, NULL, 2, value, 0.0f, err);
}

tb_status tb_init_fan_in_uniform(tb_var *v, int64_t fan_in, tb_rng *rng, tb_error *err)
{
    float bound = fan_in > 0 ? 1.0f / sqrtf((float)fan_in) : 0.0f;
    return init_with(v, rng, 1, -bound, bound, err);
}
