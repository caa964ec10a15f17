/* py_probe.c: checking a Python submission file in a probe child process: it is parsed (not
 * run) by the embedded interpreter, and must bind the required functions at its top level;
 * its SUBMISSION_NAME and TUNING_SEARCH_SPACE literals are read. The parent starts no
 * interpreter. */
#include "python/py_impl.h"

#include "bench/child.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* Parsing is quick; a probe that takes longer hangs (starting the interpreter). */
#define PROBE_LIMIT_S 60.0
/* The most search-space text that comes back through the pipe (it holds 64 KiB). */
#define SPACE_MAX 32768

typedef struct probe_answer {
    tb_error err;
    char name[128];
    int space_len; /* -1: none */
} probe_answer;

/* The file's name without its directory and .py. */
static void default_name(const char *path, char *out, size_t cap)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t n = strlen(base) - 3;
    snprintf(out, cap, "%.*s", (int)(n < cap ? n : cap - 1), base);
}

/* In the child: trainbench._check_bindings on the file's text. */
static void check(const char *path, const char *spec, probe_answer *a, char *space)
{
    a->space_len = -1;
    PyObject *tbmod = tb_py_start(&a->err);
    if (!tbmod) return;
    PyObject *fn = PyObject_GetAttrString(tbmod, "_check_bindings");
    PyObject *io = fn ? PyImport_ImportModule("io") : NULL;
    PyObject *text = io ? PyObject_CallMethod(io, "open", "ss", path, "rb") : NULL;
    PyObject *src = text ? PyObject_CallMethod(text, "read", NULL) : NULL;
    if (text) Py_XDECREF(PyObject_CallMethod(text, "close", NULL));
    PyObject *res = src ? PyObject_CallFunction(fn, "Os", src, path) : NULL;
    PyObject *names = NULL, *name = NULL, *sp = NULL;
    if (!res || !PyArg_ParseTuple(res, "OOO", &names, &name, &sp)) {
        char where[600];
        snprintf(where, sizeof where, "Python submission %s cannot be read", spec);
        tb_py_fail(&a->err, where);
        a->err.status = TB_ERR_INVALID;
    } else {
        for (int i = 0; i < TB_PY_REQUIRED && !a->err.status; i++) {
            PyObject *want = PyUnicode_FromString(tb_py_function_names[i]);
            if (want && PySequence_Contains(names, want) != 1)
                tb_fail(&a->err, TB_ERR_INVALID,
                        "Python submission %s does not define %s (a required function; see "
                        "docs/SUBMISSIONS.md)", spec, tb_py_function_names[i]);
            Py_XDECREF(want);
        }
        const char *n = name != Py_None ? PyUnicode_AsUTF8(name) : NULL;
        if (n && n[0]) snprintf(a->name, sizeof a->name, "%s", n);
        else default_name(path, a->name, sizeof a->name);
        const char *s = sp != Py_None ? PyUnicode_AsUTF8(sp) : NULL;
        size_t len = s ? strlen(s) : 0;
        if (s && len >= SPACE_MAX && !a->err.status)
            tb_fail(&a->err, TB_ERR_INVALID, "Python submission %s: its TUNING_SEARCH_SPACE "
                    "has %zu characters, more than %d", spec, len, SPACE_MAX - 1);
        else if (s) {
            memcpy(space, s, len + 1);
            a->space_len = (int)len;
        }
    }
    PyErr_Clear();
    Py_XDECREF(res);
    Py_XDECREF(src);
    Py_XDECREF(text);
    Py_XDECREF(io);
    Py_XDECREF(fn);
    Py_DECREF(tbmod);
}

static ssize_t read_all(int fd, void *buf, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, (char *)buf + got, n - got);
        if (r <= 0) return r < 0 && errno == EINTR ? (ssize_t)got : (got ? (ssize_t)got : r);
        got += (size_t)r;
    }
    return (ssize_t)got;
}

tb_status tb_py_probe(const char *path, const char *spec, char *name, size_t cap,
                      char **space, tb_error *err)
{
    *space = NULL;
    char *text = malloc(SPACE_MAX);
    if (!text) return tb_fail(err, TB_ERR_NOMEM, "out of memory");
    int fd;
    pid_t pid = tb_child_fork(&fd);
    if (pid < 0) {
        free(text);
        return tb_fail(err, TB_ERR_IO, "cannot probe Python submission %s: %s", spec,
                       strerror(errno));
    }
    if (pid == 0) {
        probe_answer a = {0};
        text[0] = 0;
        check(path, spec, &a, text);
        bool ok = write(fd, &a, sizeof a) == (ssize_t)sizeof a &&
                  (a.space_len < 0 || write(fd, text, (size_t)a.space_len + 1) ==
                                          (ssize_t)a.space_len + 1);
        _exit(ok ? 0 : 4);
    }
    int wstatus;
    bool timed_out = tb_child_wait(pid, PROBE_LIMIT_S, NULL, &wstatus) == TB_CHILD_TIMED_OUT;
    probe_answer a = {0};
    bool answered = WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0 &&
                    read_all(fd, &a, sizeof a) == (ssize_t)sizeof a &&
                    (a.space_len < 0 ||
                     (a.space_len < SPACE_MAX &&
                      read_all(fd, text, (size_t)a.space_len + 1) == a.space_len + 1));
    close(fd);
    if (!answered) {
        free(text);
        char how[160];
        if (timed_out) snprintf(how, sizeof how, "still running after %g s, killed", PROBE_LIMIT_S);
        else tb_child_describe(wstatus, how, sizeof how);
        return tb_fail(err, TB_ERR_CRASHED, "checking Python submission %s crashed: %s; caught "
                       "in a probe process", spec, how);
    }
    a.err.message[sizeof a.err.message - 1] = 0;
    a.name[sizeof a.name - 1] = 0;
    if (a.err.status != TB_OK) {
        free(text);
        return tb_fail(err, a.err.status, "%s", a.err.message);
    }
    snprintf(name, cap, "%s", a.name);
    if (a.space_len >= 0) {
        text[a.space_len] = 0;
        *space = text;
    } else {
        free(text);
    }
    return TB_OK;
}
