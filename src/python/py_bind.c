/* py_bind.c: what Python calls back into: workload.loss_and_grad(batch) (the forward pass,
 * the loss and the backward pass on the engine) and the input queue's next batch, as C
 * functions bound to a session; trainbench.Batch objects around the engine's batches. */
#include "python/py_impl.h"

#include <math.h>
#include <stdlib.h>

#define SESSION_CAPSULE "trainbench.session"
#define BATCH_CAPSULE "trainbench.batch"

static tb_py_session *session_of(PyObject *self)
{
    return PyCapsule_GetPointer(self, SESSION_CAPSULE);
}

static void free_batch(PyObject *capsule)
{
    free(PyCapsule_GetPointer(capsule, BATCH_CAPSULE));
}

PyObject *tb_py_batch(tb_py_session *s, const tb_batch *b, bool owned, int64_t token)
{
    PyObject *cls = PyObject_GetAttrString(s->tbmod, "Batch");
    /* a batch the engine lends for a call is not the capsule's to free */
    PyObject *handle = cls ? PyCapsule_New((void *)b, BATCH_CAPSULE, owned ? free_batch : NULL)
                           : NULL;
    if (!handle && owned) free((void *)b);
    PyObject *obj = handle ? PyObject_CallFunction(cls, "OLL", handle, (long long)token,
                                                   (long long)b->n)
                           : NULL;
    Py_XDECREF(handle);
    Py_XDECREF(cls);
    return obj;
}

/* The engine's batch behind a trainbench.Batch of the step now running; NULL with a Python
 * exception (not a Batch, or one of another step: its data on the tape is gone). */
static tb_batch *batch_of(tb_py_session *s, PyObject *obj)
{
    PyObject *handle = PyObject_GetAttrString(obj, "_handle");
    PyObject *token = handle ? PyObject_GetAttrString(obj, "_token") : NULL;
    tb_batch *b = NULL;
    if (!token || !PyCapsule_IsValid(handle, BATCH_CAPSULE)) {
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError, "expected a trainbench.Batch, got %s",
                     Py_TYPE(obj)->tp_name);
    } else if (PyLong_AsLongLong(token) != s->token || s->token < 0) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError,
                            "this batch belongs to another step (a batch is valid only in "
                            "the step it was given or selected for)");
    } else {
        b = PyCapsule_GetPointer(handle, BATCH_CAPSULE);
    }
    Py_XDECREF(token);
    Py_XDECREF(handle);
    return b;
}

/* workload.loss_and_grad(batch): the forward pass in training mode, the loss, the backward
 * pass into the gradient buffer (zeroed first); the loss as a float. */
static PyObject *loss_and_grad(PyObject *self, PyObject *batch)
{
    tb_py_session *s = session_of(self);
    tb_batch *b = s ? batch_of(s, batch) : NULL;
    if (!b) return NULL;
    const tb_submission_api *api = s->api;
    tb_var *loss = api->loss_fn(s->c, api->model_fn(s->c, b->inputs), b->targets);
    tb_error err = {0};
    if (api->backward(s->c, loss, &err) != TB_OK) {
        PyErr_Format(PyExc_RuntimeError, "loss_and_grad: %s", err.message);
        return NULL;
    }
    s->loss = api->scalar(s->c, loss);
    s->graded = true;
    return PyFloat_FromDouble(s->loss);
}

/* next(input_queue): the next batch in the workload's order, valid in this step. */
static PyObject *next_batch(PyObject *self, PyObject *unused)
{
    (void)unused;
    tb_py_session *s = session_of(self);
    if (!s) return NULL;
    if (s->token < 0) {
        PyErr_SetString(PyExc_RuntimeError, "the input queue gives batches in data_selection only");
        return NULL;
    }
    tb_batch *b = calloc(1, sizeof *b);
    if (!b) return PyErr_NoMemory();
    tb_error err = {0};
    if (s->api->next_batch(s->c, b, &err) != TB_OK) {
        free(b);
        PyErr_Format(PyExc_RuntimeError, "input_queue: %s", err.message);
        return NULL;
    }
    b->rows = NULL; /* valid only until the next call: not kept */
    return tb_py_batch(s, b, true, s->token);
}

/* CPython keeps a pointer to each method definition in the function objects made from it, so
 * these live as long as the process: static, never written after start. */
static PyMethodDef loss_and_grad_def = {"loss_and_grad", loss_and_grad, METH_O,
                                        "forward, loss and backward on a batch; the loss"};
static PyMethodDef next_batch_def = {"next_batch", next_batch, METH_NOARGS,
                                     "the next batch in the workload's order"};

tb_status tb_py_bind(tb_py_session *s, tb_error *err)
{
    s->self = PyCapsule_New(s, SESSION_CAPSULE, NULL);
    if (s->self) s->loss_and_grad = PyCFunction_New(&loss_and_grad_def, s->self);
    if (s->loss_and_grad) s->next_batch = PyCFunction_New(&next_batch_def, s->self);
    return s->next_batch ? TB_OK : tb_py_fail(err, "the session's functions");
}
