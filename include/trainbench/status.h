/* status.h: status codes, error messages and the log callback.
 *
 * Every library call that can fail returns a tb_status and, when given a tb_error, writes a
 * human-readable message naming the cause. The library never prints and never exits; it hands
 * messages to the caller, and log lines to an optional callback.
 *
 * NULL arguments: a pointer argument must not be NULL unless its header says it may be. The
 * engine's calls (tensor.h, backend.h, rng.h, nn.h, optim.h, curvature.h) check anyway where
 * they can report it: one that returns a tb_status fails with TB_ERR_INVALID naming the NULL
 * argument, a tape op or other call that returns a tb_var returns NULL (recording the failure
 * on the tape when there is one), and destroy and free functions accept NULL. Plain queries
 * and kernels without a status (tb_tensor_numel, tb_rng_*, tb_backend_alloc...) need valid
 * pointers. The harness's calls (data.h, pipeline.h, step.h, workload.h, train.h, study.h,
 * store.h, score.h, stats.h, tune.h, submission.h, benchmark.h) check every pointer: those
 * with a status fail with TB_ERR_INVALID naming it, those that build on a tape as tape ops do,
 * and queries and writers given a NULL object return an empty answer (NULL, "", 0, false,
 * -1 for a class, NaN for a number, a zeroed struct) or do nothing. err itself may always be
 * NULL. */
#ifndef TRAINBENCH_STATUS_H
#define TRAINBENCH_STATUS_H

#include <stdarg.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum tb_status {
    TB_OK = 0,
    TB_ERR_INVALID,     /* a bad argument, option or hyperparameter value */
    TB_ERR_SHAPE,       /* tensor shapes that do not fit together */
    TB_ERR_NOMEM,       /* an allocation failed */
    TB_ERR_IO,          /* a file could not be opened, read or written */
    TB_ERR_FORMAT,      /* a file or document is corrupt or malformed */
    TB_ERR_MISSING,     /* a data package or file is not installed */
    TB_ERR_NUMERIC,     /* NaN or inf where a finite number was needed (divergence) */
    TB_ERR_UNSUPPORTED, /* a feature this build or backend does not have */
    TB_ERR_NO_DEVICE,   /* a device (e.g. a GPU) was asked for and none is present */
    TB_ERR_INTERNAL,    /* a bug: please report it */
    TB_ERR_CRASHED,     /* code trainbench ran on a user's behalf (a submission library)
                           crashed or hung, in a process of its own */
} tb_status;

#define TB_ERROR_MESSAGE_MAX 512

/* A status with its message. Zero-initialise it ({0}) before use. */
typedef struct tb_error {
    tb_status status;
    char message[TB_ERROR_MESSAGE_MAX];
} tb_error;

/* Short stable name of a status ("invalid", "io", ...). Never NULL. */
const char *tb_status_name(tb_status status);

/* Records status and a printf-style message in err (if err is not NULL) and returns status,
 * so a failing call can be written `return tb_fail(err, TB_ERR_IO, "...", ...);`. */
tb_status tb_fail(tb_error *err, tb_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
tb_status tb_failv(tb_error *err, tb_status status, const char *fmt, va_list ap);

/* Prefixes the message already in err with "context: ". Returns err->status (TB_OK if err is
 * NULL). Use it to add where a failure happened as it travels up. */
tb_status tb_error_prefix(tb_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

typedef enum tb_log_level {
    TB_LOG_DEBUG = 0,
    TB_LOG_INFO = 1,
    TB_LOG_WARN = 2,
    TB_LOG_ERROR = 3,
} tb_log_level;

typedef void (*tb_log_fn)(void *user, tb_log_level level, const char *message);

/* Where the library sends log lines. A zeroed logger drops everything. */
typedef struct tb_logger {
    tb_log_fn fn;
    void *user;
    tb_log_level min_level;
} tb_logger;

void tb_log(const tb_logger *logger, tb_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#ifdef __cplusplus
}
#endif
#endif
