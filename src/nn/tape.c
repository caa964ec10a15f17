/* tape.c: the tape: step memory, sticky errors, running and recording nodes, backward. */
#include "nn/tape_impl.h"
#include "core/clock.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TB_PROFILE_MAX 64

struct tb_tape {
    tb_backend *be;
    tb_arena *device; /* tensor data */
    tb_arena *host;   /* tb_var and tb_node structs */
    tb_node **nodes;
    int n_nodes, cap_nodes;
    bool training, grad_enabled;
    bool keep_grads; /* no input takes over an output's gradient buffer */
    bool freeze_stats; /* training-mode batch norm leaves its running statistics alone */
    /* a backward pass ran and nodes it visited are still recorded (their gradients are
     * complete: running them again would add them once more); backward_nodes counts them */
    bool backward_ran;
    int backward_nodes;
    tb_error err;
    bool profiling;
    double last_event; /* seconds (monotonic) of the previous tape event, when profiling */
    tb_op_profile profile[TB_PROFILE_MAX];
    int n_profile;
};

/* The time since the previous tape event, device work included; starts the next interval. */
static double profile_lap(tb_tape *t)
{
    tb_backend_sync(t->be);
    double now = tb_monotonic_s(), dt = now - t->last_event;
    t->last_event = now;
    return dt;
}

static tb_op_profile *profile_entry(tb_tape *t, const char *name)
{
    for (int i = 0; i < t->n_profile; i++)
        if (t->profile[i].name == name || strcmp(t->profile[i].name, name) == 0)
            return &t->profile[i];
    if (t->n_profile == TB_PROFILE_MAX) return NULL; /* beyond 64 distinct ops: not profiled */
    tb_op_profile *e = &t->profile[t->n_profile++];
    memset(e, 0, sizeof *e);
    e->name = name;
    return e;
}

void tb_tape_set_profiling(tb_tape *t, bool enabled)
{
    if (!t) return;
    t->profiling = enabled;
    if (enabled) t->last_event = tb_monotonic_s();
}

void tb_tape_profile_clear(tb_tape *t)
{
    if (t) t->n_profile = 0;
}

static int by_total_desc(const void *a, const void *b)
{
    const tb_op_profile *x = a, *y = b;
    double tx = x->forward_s + x->backward_s, ty = y->forward_s + y->backward_s;
    return tx < ty ? 1 : (tx > ty ? -1 : strcmp(x->name, y->name));
}

int tb_tape_profile(const tb_tape *t, tb_op_profile *out, int cap)
{
    if (!t) return 0;
    if (!out) cap = 0;
    tb_op_profile sorted[TB_PROFILE_MAX];
    memcpy(sorted, t->profile, (size_t)t->n_profile * sizeof *sorted);
    qsort(sorted, (size_t)t->n_profile, sizeof *sorted, by_total_desc);
    for (int i = 0; i < t->n_profile && i < cap; i++) out[i] = sorted[i];
    return t->n_profile;
}

tb_status tb_tape_create(tb_backend *be, tb_tape **out, tb_error *err)
{
    if (!be || !out)
        return tb_fail(err, TB_ERR_INVALID, "tape_create: %s is NULL", be ? "out" : "backend");
    tb_tape *t = calloc(1, sizeof *t);
    if (!t) return tb_fail(err, TB_ERR_NOMEM, "cannot allocate a tape");
    t->be = be;
    t->training = true;
    t->grad_enabled = true;
    tb_status st = tb_arena_create(be, (size_t)16 << 20, &t->device, err);
    if (st == TB_OK) st = tb_arena_create(NULL, (size_t)1 << 20, &t->host, err);
    if (st != TB_OK) {
        tb_tape_destroy(t);
        return st;
    }
    *out = t;
    return TB_OK;
}

void tb_tape_destroy(tb_tape *t)
{
    if (!t) return;
    if (t->device) tb_arena_destroy(t->device);
    if (t->host) tb_arena_destroy(t->host);
    free(t->nodes);
    free(t);
}

void tb_tape_reset(tb_tape *t)
{
    if (!t) return;
    tb_arena_reset(t->device);
    tb_arena_reset(t->host);
    t->n_nodes = 0;
    t->backward_ran = false;
    t->backward_nodes = 0;
    memset(&t->err, 0, sizeof t->err);
    if (t->profiling) profile_lap(t);
}

/* Setters and queries accept a NULL tape: setters do nothing, queries answer as for a tape
 * that has nothing (its status and error say it is NULL). */
void tb_tape_set_training(tb_tape *t, bool training)
{
    if (t) t->training = training;
}
bool tb_tape_training(const tb_tape *t) { return t && t->training; }
void tb_tape_set_grad_enabled(tb_tape *t, bool enabled)
{
    if (t) t->grad_enabled = enabled;
}
void tb_tape_set_keep_grads(tb_tape *t, bool keep)
{
    if (t) t->keep_grads = keep;
}
void tb_tape_set_freeze_running_stats(tb_tape *t, bool freeze)
{
    if (t) t->freeze_stats = freeze;
}
bool tb_tape_freezes_running_stats(const tb_tape *t) { return t && t->freeze_stats; }
static const tb_error no_tape = {TB_ERR_INVALID, "the tape is NULL"};
tb_status tb_tape_status(const tb_tape *t) { return t ? t->err.status : no_tape.status; }
const tb_error *tb_tape_error(const tb_tape *t) { return t ? &t->err : &no_tape; }
tb_backend *tb_tape_backend(const tb_tape *t) { return t ? t->be : NULL; }
tb_backend *tb_tape_be(tb_tape *t) { return t->be; }
const tb_backend_ops *tb_tape_ops(tb_tape *t) { return &t->be->ops; }
int tb_tape_node_count(const tb_tape *t) { return t ? t->n_nodes : 0; }
size_t tb_tape_memory_peak(const tb_tape *t) { return t ? tb_arena_peak(t->device) : 0; }

uint64_t tb_tape_block_allocations(const tb_tape *t)
{
    if (!t) return 0;
    return tb_arena_block_allocations(t->device) + tb_arena_block_allocations(t->host);
}

tb_var *tb_op_fail(tb_tape *t, tb_status status, const char *fmt, ...)
{
    if (t && t->err.status == TB_OK) {
        va_list ap;
        va_start(ap, fmt);
        tb_failv(&t->err, status, fmt, ap);
        va_end(ap);
    }
    return NULL;
}

tb_var *tb_tape_fail(tb_tape *t, tb_status status, const char *fmt, ...)
{
    if (t && t->err.status == TB_OK) {
        va_list ap;
        va_start(ap, fmt);
        tb_failv(&t->err, status, fmt, ap);
        va_end(ap);
    }
    return NULL;
}

bool tb_op_begin(tb_tape *t, int n, tb_var *const *inputs)
{
    if (!t || t->err.status != TB_OK) return false;
    for (int i = 0; i < n; i++)
        if (!inputs[i]) {
            tb_op_fail(t, TB_ERR_INVALID, "an op was given a NULL input");
            return false;
        }
    return true;
}

bool tb_op_expect_memory(tb_tape *t, const char *op, const char *what, const tb_var *v)
{
    if (v->value.data || tb_tensor_numel(&v->value) == 0) return true;
    char buf[96];
    tb_op_fail(t, TB_ERR_INVALID, "%s: %s %s has no memory (a parameter used before "
               "tb_params_finalize, or a tb_var not made by the library?)", op, what,
               tb_shape_str(&v->value, buf, sizeof buf));
    return false;
}

bool tb_op_expect(tb_tape *t, const char *op, const char *what, const tb_var *v, tb_dtype want,
                  int ndim_min, int ndim_max)
{
    char buf[96];
    if (!tb_op_expect_memory(t, op, what, v)) return false;
    if (v->value.dtype != want) {
        tb_op_fail(t, TB_ERR_INVALID, "%s: %s must be %s", op, what,
                   want == TB_F32 ? "float32" : "int32");
        return false;
    }
    if (v->value.ndim < ndim_min || v->value.ndim > ndim_max) {
        tb_op_fail(t, TB_ERR_SHAPE, "%s: %s has shape %s; expected %d to %d dimensions", op, what,
                   tb_shape_str(&v->value, buf, sizeof buf), ndim_min, ndim_max);
        return false;
    }
    if (!tb_tensor_is_contiguous(&v->value)) {
        tb_op_fail(t, TB_ERR_SHAPE, "%s: %s is not contiguous", op, what);
        return false;
    }
    return true;
}

/* Values checked per download when the backend's memory is not host memory. */
#define TB_INDEX_CHUNK 1024

void tb_format_position(const tb_tensor *x, int64_t pos, char *buf, size_t size)
{
    int64_t coord[TB_MAX_DIMS];
    for (int d = x->ndim - 1; d >= 0; d--) {
        coord[d] = x->shape[d] > 0 ? pos % x->shape[d] : 0;
        pos = x->shape[d] > 0 ? pos / x->shape[d] : 0;
    }
    size_t used = (size_t)snprintf(buf, size, "[");
    for (int d = 0; d < x->ndim && used < size; d++)
        used +=
            (size_t)snprintf(buf + used, size - used, "%s%lld", d ? ", " : "", (long long)coord[d]);
    if (used < size) snprintf(buf + used, size - used, "]");
}

bool tb_op_check_indices(tb_tape *t, const char *op, const char *what, const tb_var *idx,
                         int64_t bound)
{
    /* inside a graph capture nothing may be read back: the eager steps before it check */
    if (tb_backend_capturing(t->be)) return true;
    const int32_t *data = idx->value.data;
    int64_t n = tb_tensor_numel(&idx->value);
    bool host = tb_backend_device(t->be) == TB_DEVICE_CPU;
    int32_t chunk[TB_INDEX_CHUNK];
    for (int64_t start = 0; start < n; start += TB_INDEX_CHUNK) {
        int64_t len = n - start < TB_INDEX_CHUNK ? n - start : TB_INDEX_CHUNK;
        const int32_t *part = data + start;
        if (!host) {
            tb_backend_download(t->be, chunk, part, (size_t)len * sizeof(int32_t));
            part = chunk;
        }
        for (int64_t i = 0; i < len; i++)
            if (part[i] < 0 || part[i] >= bound) {
                char pos[128];
                tb_format_position(&idx->value, start + i, pos, sizeof pos);
                tb_op_fail(t, TB_ERR_INVALID, "%s: %s %d at position %s is outside [0, %lld)",
                           op, what, (int)part[i], pos, (long long)bound);
                return false;
            }
    }
    return true;
}

void *tb_tape_scratch(tb_tape *t, size_t bytes)
{
    void *p = tb_arena_alloc(t->device, bytes);
    if (!p) tb_op_fail(t, TB_ERR_NOMEM, "out of memory for %zu bytes of step memory", bytes);
    return p;
}

static tb_var *new_var_struct(tb_tape *t)
{
    tb_var *v = tb_arena_alloc(t->host, sizeof *v);
    if (!v) {
        tb_op_fail(t, TB_ERR_NOMEM, "out of host memory for the tape");
        return NULL;
    }
    memset(v, 0, sizeof *v);
    return v;
}

tb_var *tb_tape_constant(tb_tape *t, const tb_tensor *value)
{
    if (!t || t->err.status != TB_OK) return NULL;
    if (!value) return tb_op_fail(t, TB_ERR_INVALID, "constant: the tensor is NULL");
    tb_var *v = new_var_struct(t);
    if (!v) return NULL;
    if (t->profiling) profile_lap(t); /* work before an input is not an op's */
    v->value = *value;
    v->grad = *value;
    v->grad.data = NULL;
    return v;
}

tb_var *tb_tape_new_var(tb_tape *t, tb_dtype dtype, int ndim, const int64_t *shape,
                        bool requires_grad)
{
    if (!t || t->err.status != TB_OK) return NULL;
    tb_tensor value;
    tb_error err = {0};
    if (tb_tensor_wrap(t->be, NULL, dtype, ndim, shape, &value, &err) != TB_OK)
        return tb_op_fail(t, err.status, "new variable: %s", err.message);
    tb_var *v = new_var_struct(t);
    if (!v) return NULL;
    v->value = value;
    v->value.data = tb_tape_scratch(t, tb_tensor_bytes(&v->value));
    if (!v->value.data) return NULL;
    v->grad = v->value;
    v->grad.data = NULL;
    v->requires_grad = requires_grad && dtype == TB_F32;
    return v;
}

tb_var *tb_tape_output(tb_tape *t, tb_dtype dtype, int ndim, const int64_t *shape, int n_in,
                       tb_var *const *inputs)
{
    bool rg = false;
    if (t->grad_enabled)
        for (int i = 0; i < n_in; i++)
            if (inputs[i] && inputs[i]->requires_grad) rg = true;
    return tb_tape_new_var(t, dtype, ndim, shape, rg);
}

float *tb_var_grad_for(tb_tape *t, tb_var *v, bool *acc)
{
    *acc = true;
    if (!v || !v->requires_grad) return NULL;
    if (v->grad_fresh) { /* a parameter's gradient buffer before its first gradient */
        v->grad_fresh = false;
        *acc = false;
        return (float *)v->grad.data;
    }
    if (!v->grad.data) {
        float *g = tb_tape_scratch(t, tb_tensor_bytes(&v->value));
        if (!g) return NULL;
        /* contiguous whatever the value's strides: a view's gradient is not a view (the
         * value's shape was checked when it was made: wrapping it cannot fail) */
        tb_error werr;
        if (tb_tensor_wrap(t->be, g, TB_F32, v->value.ndim, v->value.shape, &v->grad, &werr) !=
            TB_OK) {
            tb_op_fail(t, werr.status, "gradient: %s", werr.message);
            return NULL;
        }
        *acc = false;
    } else if (!tb_tensor_is_contiguous(&v->grad)) {
        tb_op_fail(t, TB_ERR_INVALID, "a variable's gradient buffer is not contiguous");
        return NULL;
    }
    return (float *)v->grad.data;
}

float *tb_var_grad(tb_tape *t, tb_var *v)
{
    bool acc;
    float *g = tb_var_grad_for(t, v, &acc);
    if (g && !acc) t->be->ops.fill(t->be, g, tb_tensor_numel(&v->value), 0.0f);
    return g;
}

bool tb_var_grad_adopt(tb_tape *t, tb_var *v, const tb_var *out)
{
    if (t->keep_grads || !v || !v->requires_grad || v->grad.data || !out->grad.data ||
        tb_tensor_numel(&v->value) != tb_tensor_numel(&out->value))
        return false;
    return tb_tensor_wrap(t->be, out->grad.data, TB_F32, v->value.ndim, v->value.shape, &v->grad,
                          NULL) == TB_OK;
}

bool tb_var_grad_pass(tb_tape *t, tb_var *v, const tb_var *out, bool may_adopt)
{
    if (may_adopt && tb_var_grad_adopt(t, v, out)) return true;
    bool acc;
    float *d = tb_var_grad_for(t, v, &acc);
    if (!d) return false;
    const int64_t numel = tb_tensor_numel(&out->value);
    if (acc)
        t->be->ops.axpy(t->be, numel, 1.0f, out->grad.data, d);
    else
        t->be->ops.copy(t->be, d, out->grad.data, (size_t)numel * sizeof(float));
    return false;
}

tb_var *tb_op_run(tb_tape *t, const tb_node *node)
{
    const tb_op_def *op = &tb_op_table[node->op];
    if (op->forward) op->forward(t, node);
    tb_var *out = node->out;
    if (t->err.status != TB_OK || !out->requires_grad) return out;
    if (node->n_in > TB_NODE_MAX_IN) {
        tb_op_fail(t, TB_ERR_INTERNAL, "%s: %d inputs (at most %d)", op->name, node->n_in,
                   TB_NODE_MAX_IN);
        return out;
    }
    if (t->n_nodes == t->cap_nodes) {
        int cap = t->cap_nodes ? 2 * t->cap_nodes : 256;
        tb_node **nodes = realloc(t->nodes, (size_t)cap * sizeof *nodes);
        if (!nodes) {
            tb_op_fail(t, TB_ERR_NOMEM, "out of memory for tape nodes");
            return out;
        }
        t->nodes = nodes;
        t->cap_nodes = cap;
    }
    tb_node *copy = tb_arena_alloc(t->host, sizeof *copy);
    if (!copy) {
        tb_op_fail(t, TB_ERR_NOMEM, "out of host memory for the tape");
        return out;
    }
    *copy = *node;
    t->nodes[t->n_nodes++] = copy;
    if (t->profiling) {
        double dt = profile_lap(t);
        tb_op_profile *e = profile_entry(t, op->name);
        if (e) {
            e->calls++;
            e->forward_s += dt;
        }
    }
    return out;
}

int tb_tape_mark(const tb_tape *t) { return t ? t->n_nodes : 0; }

void tb_tape_rewind(tb_tape *t, int mark)
{
    if (t && mark >= 0 && mark < t->n_nodes) {
        t->n_nodes = mark;
        if (t->backward_nodes > mark) t->backward_nodes = mark;
        /* no node the backward pass visited is left: the next pass starts afresh */
        if (t->backward_nodes == 0) t->backward_ran = false;
    }
}

tb_status tb_tape_backward(tb_tape *t, tb_var *loss)
{
    if (!t) return TB_ERR_INVALID;
    if (t->err.status != TB_OK) return t->err.status;
    if (!loss) return tb_fail(&t->err, TB_ERR_INVALID, "backward: no loss");
    if (tb_tensor_numel(&loss->value) != 1)
        return tb_fail(&t->err, TB_ERR_SHAPE, "backward: the loss must be a scalar");
    if (!loss->requires_grad)
        return tb_fail(&t->err, TB_ERR_INVALID,
                       "backward: the loss does not depend on anything that requires a gradient");
    if (t->backward_ran)
        return tb_fail(&t->err, TB_ERR_INVALID,
                       "backward already ran on this tape; reset it (tb_tape_reset) or rewind "
                       "it past that pass (tb_tape_rewind) and record the forward pass again");
    t->backward_ran = true;
    t->backward_nodes = t->n_nodes;
    float *seed = tb_var_grad(t, loss);
    if (!seed) return t->err.status;
    t->be->ops.fill(t->be, seed, 1, 1.0f);
    for (int i = t->n_nodes - 1; i >= 0 && t->err.status == TB_OK; i--) {
        tb_node *node = t->nodes[i];
        if (!node->out->grad.data) continue; /* no gradient reached this node */
        const tb_op_def *op = &tb_op_table[node->op];
        if (t->profiling) profile_lap(t);
        op->backward(t, node);
        if (t->profiling) {
            double dt = profile_lap(t);
            tb_op_profile *e = profile_entry(t, op->name);
            if (e) e->backward_s += dt;
        }
    }
    return t->err.status;
}
