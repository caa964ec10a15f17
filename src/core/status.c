/* status.c: status names, error messages, logging. */
#include "trainbench/status.h"

#include <stdio.h>
#include <string.h>

const char *tb_status_name(tb_status status)
{
    switch (status) {
    case TB_OK: return "ok";
    case TB_ERR_INVALID: return "invalid";
    case TB_ERR_SHAPE: return "shape";
    case TB_ERR_NOMEM: return "out-of-memory";
    case TB_ERR_IO: return "io";
    case TB_ERR_FORMAT: return "format";
    case TB_ERR_MISSING: return "missing";
    case TB_ERR_NUMERIC: return "numeric";
    case TB_ERR_UNSUPPORTED: return "unsupported";
    case TB_ERR_NO_DEVICE: return "no-device";
    case TB_ERR_INTERNAL: return "internal";
    case TB_ERR_CRASHED: return "crashed";
    }
    return "unknown";
}

tb_status tb_failv(tb_error *err, tb_status status, const char *fmt, va_list ap)
{
    if (err) {
        err->status = status;
        vsnprintf(err->message, sizeof err->message, fmt, ap);
    }
    return status;
}

tb_status tb_fail(tb_error *err, tb_status status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    tb_failv(err, status, fmt, ap);
    va_end(ap);
    return status;
}

tb_status tb_error_prefix(tb_error *err, const char *fmt, ...)
{
    if (!err) return TB_OK;
    char prefix[TB_ERROR_MESSAGE_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    char joined[2 * TB_ERROR_MESSAGE_MAX + 2];
    snprintf(joined, sizeof joined, "%s: %s", prefix, err->message);
    memcpy(err->message, joined, sizeof err->message - 1);
    err->message[sizeof err->message - 1] = '\0';
    return err->status;
}

void tb_log(const tb_logger *logger, tb_log_level level, const char *fmt, ...)
{
    if (!logger || !logger->fn || level < logger->min_level) return;
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    logger->fn(logger->user, level, line);
}
