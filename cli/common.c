/* common.c: the helpers every command shares: errors on stderr, option values, exit codes,
 * JSON fragments on stdout (declared in cli.h). */
#include "cli.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void tb_cli_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("trainbench: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

int tb_cli_option_error(const char *cmd, int getopt_result, char **argv)
{
    if (getopt_result == ':')
        tb_cli_error("%s: %s needs a value", cmd, argv[optind - 1]);
    else
        tb_cli_error("%s: unknown option '%s' (see `trainbench %s --help`)", cmd,
                     argv[optind - 1], cmd);
    return TB_EXIT_USAGE;
}

int tb_cli_no_arguments(const char *cmd, int argc, char **argv)
{
    if (optind >= argc) return TB_EXIT_OK;
    tb_cli_error("%s: unexpected argument '%s'", cmd, argv[optind]);
    return TB_EXIT_USAGE;
}

int tb_cli_exit_code(tb_status st)
{
    switch (st) {
    case TB_OK: return TB_EXIT_OK;
    case TB_ERR_INVALID:
    case TB_ERR_SHAPE: return TB_EXIT_USAGE;
    case TB_ERR_MISSING:
    case TB_ERR_NO_DEVICE:
    case TB_ERR_UNSUPPORTED: return TB_EXIT_MISSING;
    case TB_ERR_NUMERIC: return TB_EXIT_DIVERGED;
    default: return TB_EXIT_FAILURE;
    }
}

void tb_cli_json_number(const char *fmt, double v)
{
    if (isfinite(v))
        printf(fmt, v);
    else
        fputs("null", stdout);
}

void tb_cli_json_text(const char *text)
{
    for (const char *q = text; *q; q++) {
        if (*q == '"' || *q == '\\') putchar('\\');
        if ((unsigned char)*q >= 0x20) putchar(*q);
    }
}

bool tb_cli_check_db(const char *path)
{
    if (!path[0] || strcmp(path, ":memory:") == 0) {
        tb_cli_error("--db: '%s' is not a results file (give a file path; the store must "
                     "outlive the command)", path);
        return false;
    }
    return true;
}

bool tb_cli_parse_u64(const char *opt, const char *text, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    /* strtoull skips leading white space and accepts a sign: ' -1' would be 2^64 - 1 */
    if (!*text || *end || errno || !isdigit((unsigned char)text[0])) {
        tb_cli_error("%s: '%s' is not a non-negative whole number", opt, text);
        return false;
    }
    *out = v;
    return true;
}

bool tb_cli_parse_int(const char *opt, const char *text, long min, long max, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (!*text || *end || errno) {
        tb_cli_error("%s: '%s' is not a whole number", opt, text);
        return false;
    }
    if (v < min || v > max) {
        tb_cli_error("%s: %ld is outside [%ld, %ld]", opt, v, min, max);
        return false;
    }
    *out = v;
    return true;
}

bool tb_cli_parse_double(const char *opt, const char *text, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (!*text || *end || errno || !isfinite(v)) {
        tb_cli_error("%s: '%s' is not a number", opt, text);
        return false;
    }
    *out = v;
    return true;
}
