/* py_calls.c: the tb_submission callbacks of a Python submission: each calls the file's
 * function of the same name with AlgoPerf's arguments, as far as they map (docs/SUBMISSIONS.md,
 * "Python submissions"), and turns a Python exception into the trial's failure. */
#include "python/py_impl.h"

#include <limits.h>
#include <math.h>
#include <string.h>

/* A dict of the point's hyperparameters as trainbench._hparams makes them (attributes). */
static PyObject *hparams_of(tb_py_session *s, const tb_hparams *hp)
{
    PyObject *d = PyDict_New();
    for (int i = 0; d && hp && i < hp->count; i++) {
        PyObject *v = PyFloat_FromDouble(hp->values[i]);
        if (!v || PyDict_SetItemString(d, hp->names[i], v) != 0) Py_CLEAR(d);
        Py_XDECREF(v);
    }
    PyObject *fn = d ? PyObject_GetAttrString(s->tbmod, "_hparams") : NULL;
    PyObject *out = fn ? PyObject_CallOneArg(fn, d) : NULL;
    Py_XDECREF(fn);
    Py_XDECREF(d);
    return out;
}

/* trainbench.Params over the flat buffers: memoryviews of exactly numel floats each (numpy
 * cannot index past them), and each tensor's name, kind, offset and shape. */
static PyObject *params_of(tb_py_session *s)
{
    const tb_submission_api *api = s->api;
    tb_trial_ctx *c = s->c;
    Py_ssize_t bytes = (Py_ssize_t)api->numel(c) * (Py_ssize_t)sizeof(float);
    PyObject *values = PyMemoryView_FromMemory((char *)api->values(c), bytes, PyBUF_WRITE);
    PyObject *grads = values ? PyMemoryView_FromMemory((char *)api->grads(c), bytes, PyBUF_WRITE)
                             : NULL;
    PyObject *layout = grads ? PyList_New(0) : NULL;
    for (int i = 0; layout && i < api->param_count(c); i++) {
        const tb_param *p = api->param_at(c, i);
        PyObject *shape = PyTuple_New(p->var.value.ndim);
        for (int d = 0; shape && d < p->var.value.ndim; d++)
            PyTuple_SET_ITEM(shape, d, PyLong_FromLongLong(p->var.value.shape[d]));
        PyObject *row = shape ? Py_BuildValue("(siLO)", p->name, (int)p->kind,
                                              (long long)p->offset, shape)
                              : NULL;
        if (!row || PyList_Append(layout, row) != 0) Py_CLEAR(layout);
        Py_XDECREF(row);
        Py_XDECREF(shape);
    }
    PyObject *make = layout ? PyObject_GetAttrString(s->tbmod, "_make_params") : NULL;
    PyObject *out = make ? PyObject_CallFunctionObjArgs(make, values, grads, layout, NULL) : NULL;
    Py_XDECREF(make);
    Py_XDECREF(layout);
    Py_XDECREF(grads);
    Py_XDECREF(values);
    return out;
}

/* The workload's facts, a dict for trainbench.Workload. */
static PyObject *facts_of(tb_py_session *s)
{
    const tb_workload_info *w = s->api->workload_info(s->c);
    const tb_run_config *rc = tb_run_get_config(s->c->run);
    return Py_BuildValue(
        "{s:s,s:s,s:s,s:s,s:O,s:i,s:L,s:d,s:d,s:s,s:i,s:i,s:L,s:L}", "name", w->id, "base",
        w->base, "variant", w->variant, "metric", w->metric, "lower_is_better",
        w->lower_is_better ? Py_True : Py_False, "default_batch_size", w->default_batch_size,
        "step_hint", (long long)s->api->step_hint(s->c), "max_runtime_s", w->max_runtime_s,
        "validation_target", w->validation_target, "loss", w->loss_desc ? w->loss_desc : "",
        "threads", tb_backend_threads(tb_run_backend(s->c->run)), "param_count",
        s->api->param_count(s->c), "numel", (long long)s->api->numel(s->c), "seed",
        (long long)(rc->seeds[TB_STREAM_INIT] & 0x7fffffffffffffffull));
}

/* What init_optimizer_state needs, made once the workload exists. */
static tb_status make_objects(tb_py_session *s, const tb_hparams *hp, tb_error *err)
{
    if (!s->api->on_host(s->c))
        return tb_fail(err, TB_ERR_UNSUPPORTED,
                       "Python submissions run on the cpu backend only (their numpy arrays "
                       "are views of host memory)");
    PyObject *facts = facts_of(s);
    PyObject *cls = facts ? PyObject_GetAttrString(s->tbmod, "Workload") : NULL;
    s->workload = cls ? PyObject_CallFunctionObjArgs(cls, facts, s->loss_and_grad, NULL) : NULL;
    Py_XDECREF(cls);
    if (s->workload) s->params = params_of(s);
    if (s->params) s->types = PyObject_GetAttrString(s->params, "types");
    if (s->types) s->hparams = hparams_of(s, hp);
    if (s->hparams && facts) s->rng = PyDict_GetItemString(facts, "seed"); /* borrowed */
    Py_XINCREF(s->rng);
    if (s->rng) s->loss_type = PyDict_GetItemString(facts, "loss");
    Py_XINCREF(s->loss_type);
    PyObject *qcls = s->loss_type ? PyObject_GetAttrString(s->tbmod, "InputQueue") : NULL;
    if (qcls) s->queue = PyObject_CallOneArg(qcls, s->next_batch);
    Py_XDECREF(qcls);
    Py_XDECREF(facts);
    return s->queue ? TB_OK : tb_py_fail(err, "setting up the Python objects");
}

/* AlgoPerf's (optimizer_state, current_param_container, model_state): the state is kept; the
 * parameters must be the ones given (updated in place: the engine reads its own buffers). */
static tb_status take_result(tb_py_session *s, PyObject *res, const char *fn, tb_error *err)
{
    if (!PyTuple_Check(res) || PyTuple_GET_SIZE(res) != 3) {
        tb_status st = tb_fail(err, TB_ERR_CRASHED,
                               "%s returned %s, not AlgoPerf's (optimizer_state, "
                               "current_param_container, model_state)", fn, Py_TYPE(res)->tp_name);
        Py_DECREF(res);
        return st;
    }
    if (PyTuple_GET_ITEM(res, 1) != s->params) {
        Py_DECREF(res);
        return tb_fail(err, TB_ERR_CRASHED,
                       "%s returned other parameters than the container it was given: update "
                       "its arrays in place (they are the engine's buffers)", fn);
    }
    PyObject *state = PyTuple_GET_ITEM(res, 0);
    Py_INCREF(state);
    Py_XSETREF(s->state, state);
    Py_DECREF(res);
    return TB_OK;
}

static int get_batch_size(const tb_submission_api *api, tb_trial_ctx *c, const tb_hparams *hp)
{
    (void)hp;
    tb_py_session *s = c->py;
    s->api = api;
    s->c = c;
    PyObject *res = PyObject_CallFunction(s->fn[TB_PY_GET_BATCH_SIZE], "s",
                                          api->workload_info(c)->id);
    /* None: the workload's default batch size */
    long long n = res == Py_None ? api->workload_info(c)->default_batch_size
                  : res && PyLong_Check(res) ? PyLong_AsLongLong(res) : -1;
    tb_error err = {0};
    if (!res) {
        tb_py_fail(&err, "get_batch_size");
    } else if (n < 1 || n > INT_MAX) {
        PyErr_Clear();
        tb_fail(&err, TB_ERR_CRASHED, "get_batch_size returned %s, not a batch size (an int "
                "from 1, or None for the workload's)",
                PyLong_Check(res) ? "an int out of range" : Py_TYPE(res)->tp_name);
    }
    Py_XDECREF(res);
    snprintf(s->error, sizeof s->error, "%s", err.message);
    return err.status ? 0 : (int)n;
}

static tb_status init_optimizer_state(const tb_submission_api *api, tb_trial_ctx *c,
                                      const tb_hparams *hp, void **state, tb_error *err)
{
    tb_py_session *s = c->py;
    s->api = api;
    s->c = c;
    *state = s;
    tb_status st = s->workload ? TB_OK : make_objects(s, hp, err);
    if (st != TB_OK) return st;
    PyObject *res = PyObject_CallFunctionObjArgs(s->fn[TB_PY_INIT], s->workload, s->params,
                                                 Py_None, s->hparams, s->rng, NULL);
    if (!res) return tb_py_fail(err, "Python");
    Py_XSETREF(s->state, res);
    return TB_OK;
}

static tb_status update_params(const tb_submission_api *api, tb_trial_ctx *c, void *state,
                               const tb_hparams *hp, const tb_batch *batch, int64_t step,
                               tb_step_report *report, tb_error *err)
{
    (void)api;
    (void)hp;
    tb_py_session *s = state;
    s->token = step;
    s->step = step;
    s->loss = NAN;
    s->graded = false;
    PyObject *b = tb_py_batch(s, batch, false, step);
    PyObject *gs = b ? PyLong_FromLongLong(step - 1) : NULL; /* AlgoPerf's global_step: 0 first */
    PyObject *evals = gs ? PyList_New(0) : NULL;
    PyObject *res = evals ? PyObject_CallFunctionObjArgs(
                                s->fn[TB_PY_UPDATE], s->workload, s->params, s->types, Py_None,
                                s->hparams, b, s->loss_type, s->state, evals, gs, s->rng, NULL)
                          : NULL;
    Py_XDECREF(evals);
    Py_XDECREF(gs);
    Py_XDECREF(b);
    s->token = -1;
    (void)c;
    if (!res) return tb_py_fail(err, "Python");
    tb_status st = take_result(s, res, "update_params", err);
    if (st != TB_OK) return st;
    if (!s->graded)
        return tb_fail(err, TB_ERR_CRASHED,
                       "update_params did not call workload.loss_and_grad(batch) (the step's "
                       "forward and backward passes, and its loss)");
    report->loss = s->loss;
    return TB_OK;
}

static tb_status prepare_for_eval(const tb_submission_api *api, tb_trial_ctx *c, void *state,
                                  tb_error *err)
{
    (void)api;
    (void)c;
    tb_py_session *s = state;
    if (!s->fn[TB_PY_PREPARE]) return TB_OK;
    PyObject *gs = PyLong_FromLongLong(s->step);
    PyObject *evals = gs ? PyList_New(0) : NULL;
    PyObject *res = evals ? PyObject_CallFunctionObjArgs(
                                s->fn[TB_PY_PREPARE], s->workload, s->params, s->types, Py_None,
                                s->hparams, s->loss_type, s->state, evals, gs, s->rng, NULL)
                          : NULL;
    Py_XDECREF(evals);
    Py_XDECREF(gs);
    if (!res) return tb_py_fail(err, "Python");
    return take_result(s, res, "prepare_for_eval", err);
}

static tb_status data_selection(const tb_submission_api *api, tb_trial_ctx *c, void *state,
                                tb_batch *out, tb_error *err)
{
    tb_py_session *s = state;
    if (!s->fn[TB_PY_SELECT]) return api->next_batch(c, out, err);
    s->token = s->step + 1;
    PyObject *gs = PyLong_FromLongLong(s->step);
    PyObject *res = gs ? PyObject_CallFunctionObjArgs(
                             s->fn[TB_PY_SELECT], s->workload, s->queue, s->state, s->params,
                             Py_None, s->hparams, gs, s->rng, NULL)
                       : NULL;
    Py_XDECREF(gs);
    if (!res) return tb_py_fail(err, "Python");
    PyObject *handle = PyObject_GetAttrString(res, "_handle");
    const tb_batch *b = handle && PyCapsule_IsValid(handle, "trainbench.batch")
                            ? PyCapsule_GetPointer(handle, "trainbench.batch") : NULL;
    PyErr_Clear();
    Py_XDECREF(handle);
    if (!b) {
        tb_status st = tb_fail(err, TB_ERR_CRASHED, "data_selection returned %s, not a batch "
                               "of its input_queue", Py_TYPE(res)->tp_name);
        Py_DECREF(res);
        return st;
    }
    *out = *b;
    Py_DECREF(res);
    return TB_OK;
}

static void free_state(void *state) { (void)state; /* the session's, closed with the trial */ }

void tb_py_table(tb_submission *t)
{
    t->get_batch_size = get_batch_size;
    t->init_optimizer_state = init_optimizer_state;
    t->update_params = update_params;
    t->free_state = free_state;
    t->prepare_for_eval = prepare_for_eval;
    t->data_selection = data_selection;
}
