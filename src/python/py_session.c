/* py_session.c: the embedded interpreter of a Python submission: started once per process
 * (the trial's), with the embedded trainbench module; the submission file run as a module of
 * its own; Python exceptions as trainbench errors. */
#include "python/py_impl.h"

#include "tb_py_module.h" /* tb_py_module_src: src/python/trainbench.py */

#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *const tb_py_function_names[TB_PY_FN_COUNT] = {
    "get_batch_size", "init_optimizer_state", "update_params", "prepare_for_eval",
    "data_selection",
};

bool tb_py_is_spec(const char *spec)
{
    size_t n = spec ? strlen(spec) : 0;
    return n > 3 && strcmp(spec + n - 3, ".py") == 0;
}

/* The interpreter, once per process (CPython's own state). Its signal handlers are not
 * installed: the trial's process keeps the default actions (a SIGINT or SIGTERM ends it, as
 * it ends a C submission's). PYTHONPATH and the site directories apply as for python3. */
static tb_status interpreter(tb_error *err)
{
    if (Py_IsInitialized()) return TB_OK;
    PyConfig config;
    PyConfig_InitPythonConfig(&config);
    config.install_signal_handlers = 0;
    config.parse_argv = 0;
    config.safe_path = 1; /* the current directory is not on sys.path */
    PyStatus ps = Py_InitializeFromConfig(&config);
    PyConfig_Clear(&config);
    if (PyStatus_Exception(ps))
        return tb_fail(err, TB_ERR_UNSUPPORTED, "cannot start the Python interpreter: %s%s%s",
                       ps.func ? ps.func : "", ps.func ? ": " : "",
                       ps.err_msg ? ps.err_msg : "unknown error");
    return TB_OK;
}

PyObject *tb_py_start(tb_error *err)
{
    if (interpreter(err) != TB_OK) return NULL;
    PyObject *mod = PyImport_AddModule("trainbench"); /* borrowed; new and empty, or ours */
    if (mod && PyObject_HasAttrString(mod, "_describe")) {
        Py_INCREF(mod);
        return mod;
    }
    PyObject *code = Py_CompileString(tb_py_module_src, "trainbench.py", Py_file_input);
    mod = code ? PyImport_ExecCodeModule("trainbench", code) : NULL;
    Py_XDECREF(code);
    if (!mod) tb_py_fail(err, "the embedded trainbench module");
    return mod;
}

/* The exception value's description by trainbench._describe, or its str(). */
static void describe(PyObject *value, char *out, size_t cap)
{
    PyObject *mod = PyImport_AddModule("trainbench");
    PyObject *fn = mod ? PyObject_GetAttrString(mod, "_describe") : NULL;
    PyObject *text = fn ? PyObject_CallOneArg(fn, value) : NULL;
    if (!text) {
        PyErr_Clear();
        text = PyObject_Str(value);
    }
    const char *s = text ? PyUnicode_AsUTF8(text) : NULL;
    snprintf(out, cap, "%s", s ? s : "an exception that cannot be printed");
    PyErr_Clear();
    Py_XDECREF(text);
    Py_XDECREF(fn);
}

tb_status tb_py_fail(tb_error *err, const char *where)
{
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    char text[TB_ERROR_MESSAGE_MAX];
    if (!value) {
        snprintf(text, sizeof text, "an error without a Python exception");
    } else {
        if (tb) PyException_SetTraceback(value, tb);
        describe(value, text, sizeof text);
    }
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(tb);
    return tb_fail(err, TB_ERR_CRASHED, "%s: %s", where, text);
}

/* Runs the file as a module (importlib: tracebacks name the file), its directory first on
 * sys.path so that it can import its own helpers. A new reference, or NULL with an
 * exception. A file that imported torch also gets torch._dynamo imported here, in the
 * untimed set-up: torch imports it lazily on the first optimizer made, which would charge
 * seconds of imports to the timed init_optimizer_state. */
static PyObject *run_file(const char *path)
{
    static const char loader[] =
        "def _load(path):\n"
        "    import importlib.util, os, sys\n"
        "    d = os.path.dirname(os.path.abspath(path))\n"
        "    if d not in sys.path:\n"
        "        sys.path.insert(0, d)\n"
        "    spec = importlib.util.spec_from_file_location('submission', path)\n"
        "    mod = importlib.util.module_from_spec(spec)\n"
        "    spec.loader.exec_module(mod)\n"
        "    if 'torch' in sys.modules:\n"
        "        import torch._dynamo\n"
        "    return mod\n";
    PyObject *globals = PyDict_New();
    PyObject *done = globals ? PyRun_String(loader, Py_file_input, globals, globals) : NULL;
    PyObject *fn = done ? PyDict_GetItemString(globals, "_load") : NULL; /* borrowed */
    PyObject *arg = fn ? PyUnicode_DecodeFSDefault(path) : NULL;
    PyObject *mod = arg ? PyObject_CallOneArg(fn, arg) : NULL;
    Py_XDECREF(arg);
    Py_XDECREF(done);
    Py_XDECREF(globals);
    return mod;
}

/* The submission's functions: the required ones must be callable (the probe saw them bound,
 * but not to what). */
static tb_status find_functions(tb_py_session *s, const char *path, tb_error *err)
{
    for (int i = 0; i < TB_PY_FN_COUNT; i++) {
        const char *name = tb_py_function_names[i];
        PyObject *f = PyObject_HasAttrString(s->module, name)
                          ? PyObject_GetAttrString(s->module, name) : NULL;
        if (!f) {
            PyErr_Clear();
            if (i < TB_PY_REQUIRED)
                return tb_fail(err, TB_ERR_CRASHED, "Python submission %s does not define %s",
                               path, name);
            continue;
        }
        if (!PyCallable_Check(f)) {
            Py_DECREF(f);
            return tb_fail(err, TB_ERR_CRASHED, "Python submission %s: %s is not a function",
                           path, name);
        }
        s->fn[i] = f;
    }
    return TB_OK;
}

tb_status tb_py_session_open(const char *path, tb_py_session **out, tb_error *err)
{
    *out = NULL;
    tb_py_session *s = calloc(1, sizeof *s);
    if (!s) return tb_fail(err, TB_ERR_NOMEM, "out of memory");
    s->token = -1;
    s->loss = NAN;
    s->tbmod = tb_py_start(err);
    tb_status st = s->tbmod ? TB_OK : err && err->status ? err->status : TB_ERR_CRASHED;
    if (st == TB_OK) st = tb_py_bind(s, err);
    if (st == TB_OK && !(s->module = run_file(path))) {
        char where[600];
        snprintf(where, sizeof where, "running %s", path);
        st = tb_py_fail(err, where);
    }
    if (st == TB_OK) st = find_functions(s, path, err);
    if (st != TB_OK) {
        tb_py_session_close(s);
        return st;
    }
    *out = s;
    return TB_OK;
}

void tb_py_session_close(tb_py_session *s)
{
    if (!s) return;
    for (int i = 0; i < TB_PY_FN_COUNT; i++) Py_XDECREF(s->fn[i]);
    PyObject *objs[] = {s->state, s->queue, s->loss_type, s->rng, s->hparams, s->types,
                        s->params, s->workload, s->next_batch, s->loss_and_grad, s->self,
                        s->module, s->tbmod};
    for (size_t i = 0; i < sizeof objs / sizeof *objs; i++) Py_XDECREF(objs[i]);
    free(s);
}

const char *tb_py_session_error(const tb_py_session *s) { return s ? s->error : ""; }
