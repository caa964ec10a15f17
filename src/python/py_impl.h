/* py_impl.h: the embedded interpreter's session (internal to src/python). */
#ifndef TRAINBENCH_PY_IMPL_H
#define TRAINBENCH_PY_IMPL_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "bench/pysub.h"
#include "bench/trial_impl.h"

/* The submission's functions, in the order of tb_py_function_names. */
typedef enum tb_py_fn {
    TB_PY_GET_BATCH_SIZE = 0,
    TB_PY_INIT,
    TB_PY_UPDATE,
    TB_PY_PREPARE,
    TB_PY_SELECT,
    TB_PY_FN_COUNT,
} tb_py_fn;
#define TB_PY_REQUIRED 3 /* the first three */
extern const char *const tb_py_function_names[TB_PY_FN_COUNT];

struct tb_py_session {
    PyObject *tbmod;    /* the trainbench module */
    PyObject *module;   /* the submission's */
    PyObject *fn[TB_PY_FN_COUNT]; /* NULL when not defined (optional ones) */
    PyObject *self;     /* a capsule of this session: the self of the C functions below */
    PyObject *loss_and_grad, *next_batch; /* the C functions, bound to self */
    /* made at init_optimizer_state, once the workload exists */
    PyObject *workload, *params, *types, *hparams, *rng, *loss_type, *queue;
    PyObject *state;    /* the submission's optimizer state */
    tb_trial_ctx *c;
    const tb_submission_api *api;
    int64_t token;      /* the step whose batches are valid (-1: none) */
    double loss;        /* the step's last loss_and_grad (NaN when its loss is) */
    bool graded;        /* loss_and_grad ran in this step */
    int64_t step;       /* the last step update_params ran */
    char error[TB_ERROR_MESSAGE_MAX]; /* get_batch_size's failure */
};

/* Starts the interpreter and imports the embedded trainbench module (a new reference).
 * NULL with err filled. */
PyObject *tb_py_start(tb_error *err);
/* The pending Python exception as TB_ERR_CRASHED with "where: Type: message (at file:line
 * in function; ...)", the exception cleared. */
tb_status tb_py_fail(tb_error *err, const char *where);
/* The C functions of a session, bound to s->self: loss_and_grad(batch), next_batch(). */
tb_status tb_py_bind(tb_py_session *s, tb_error *err);
/* A trainbench.Batch of b valid during step token (a new reference; owned: b is freed with
 * it), NULL with a Python exception set. */
PyObject *tb_py_batch(tb_py_session *s, const tb_batch *b, bool owned, int64_t token);

#endif
