/* pysub.h: Python submissions (internal to the benchmark): a .py file defining AlgoPerf's
 * submission functions, run by CPython embedded in the trial's own process (src/python/).
 *
 * The parent never starts an interpreter: a file is checked in a probe child process (it is
 * parsed, not run), and each trial's process starts its own interpreter and runs the file
 * there, so an exception, a crash or a hang in Python is that trial's failure. The one piece
 * of state that is not the caller's is CPython's own interpreter, which is per process: once
 * started in a process it stays until the process ends (numpy cannot be started twice), and
 * every session in that process (a trial run in-process, one after another) shares it, each
 * with a module of its own. In a build without Python (TB_WITH_PYTHON off) every call fails
 * with TB_ERR_UNSUPPORTED saying so. */
#ifndef TRAINBENCH_BENCH_PYSUB_H
#define TRAINBENCH_BENCH_PYSUB_H

#include "trainbench/submission.h"

#include <stdbool.h>
#include <stddef.h>

typedef struct tb_py_session tb_py_session;

/* Whether a spec names a Python submission (ends in ".py"). */
bool tb_py_is_spec(const char *spec);

/* Checks the file at path (spec: as the user named it) in a probe child process: it parses,
 * and defines get_batch_size, init_optimizer_state and update_params at its top level (as
 * functions, assignments or imports). *name gets its SUBMISSION_NAME (default: the file's
 * name without .py), *space its TUNING_SEARCH_SPACE as JSON text (malloc'd; NULL without
 * one). TB_ERR_INVALID naming the file and the cause (a syntax error with its line, a
 * function missing, named); TB_ERR_CRASHED when the probe crashed or hung; TB_ERR_UNSUPPORTED
 * in a build without Python. The caller must not have started threads. */
tb_status tb_py_probe(const char *path, const char *spec, char *name, size_t cap,
                      char **space, tb_error *err);

/* Fills the callbacks of t with those that call a session's Python functions (the session
 * is the trial context's, made by tb_py_session_open). */
void tb_py_table(tb_submission *t);

/* Starts the interpreter in this process if it is not running, and runs the file at path as a
 * module of its own. TB_ERR_CRASHED with the Python error (its type, message and where) when
 * it raised; TB_ERR_UNSUPPORTED without Python. */
tb_status tb_py_session_open(const char *path, tb_py_session **out, tb_error *err);
/* Drops the session's objects (the interpreter stays). NULL: nothing. */
void tb_py_session_close(tb_py_session *s);
/* The error of the session's last failed get_batch_size ("" when none). */
const char *tb_py_session_error(const tb_py_session *s);

/* The Python file of a Python submission's ref, or NULL for another (submissions.c). */
const char *tb_submission_ref_python(const tb_submission_ref *ref);

#endif
