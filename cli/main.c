/* main.c: the trainbench command: dispatches git-style subcommands. */
#include "cli.h"
#include "blas_kernels.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char usage[] =
    "usage: trainbench <command> [options]\n"
    "\n"
    "trainbench benchmarks neural-network training algorithms on real data.\n"
    "\n"
    "commands:\n"
    "  prepare      build the prepared-data caches of the workloads\n"
    "  train        train one workload with one algorithm and report its result\n"
    "  variance     how much each source of variation moves a result\n"
    "  compare      is algorithm A better than B? P(A>B) over paired runs, with a verdict\n"
    "  study        run a study (a JSON file: a paper's claim, a grid of runs, a figure) and\n"
    "               say whether the claim reproduced; --list lists the shipped ones\n"
    "  workloads    list the workloads and variants with targets, budgets and data\n"
    "  algorithms   list the training algorithms and their hyperparameters\n"
    "  bench        plan and run a time-to-result benchmark (resumes when run again)\n"
    "  score        score the benchmarks in a results store\n"
    "  export       export a results store as CSV or JSON lines\n"
    "  utility      score candidate search spaces against a store's trials, by budget\n"
    "  hw           the hardware suite: throughput of the workloads, ratios to a reference\n"
    "               machine and a score (docs/HARDWARE.md)\n"
    "  version      print the version\n"
    "\n"
    "`trainbench <command> --help` (or `trainbench help <command>`) describes a command's\n"
    "options.\n"
    "\n"
    "exit codes: 0 success, 1 failure, 2 bad usage or value, 3 data or device missing,\n"
    "            4 training diverged\n";

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

static int run_command(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "help") == 0 && argv[2][0] != '-') {
        /* `trainbench help CMD` is `trainbench CMD --help` */
        char help[] = "--help";
        char *args[] = {argv[0], argv[2], help, NULL};
        return run_command(3, args);
    }
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        fputs(usage, argc < 2 ? stderr : stdout);
        return argc < 2 ? TB_EXIT_USAGE : TB_EXIT_OK;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "train") == 0) return tb_cli_train(argc - 1, argv + 1);
    if (strcmp(cmd, "variance") == 0) return tb_cli_variance(argc - 1, argv + 1);
    if (strcmp(cmd, "compare") == 0) return tb_cli_compare(argc - 1, argv + 1);
    if (strcmp(cmd, "study") == 0) return tb_cli_study(argc - 1, argv + 1);
    if (strcmp(cmd, "prepare") == 0) return tb_cli_prepare(argc - 1, argv + 1);
    if (strcmp(cmd, "workloads") == 0) return tb_cli_workloads(argc - 1, argv + 1);
    if (strcmp(cmd, "algorithms") == 0) return tb_cli_algorithms(argc - 1, argv + 1);
    if (strcmp(cmd, "bench") == 0) return tb_cli_bench(argc - 1, argv + 1);
    if (strcmp(cmd, "score") == 0) return tb_cli_score(argc - 1, argv + 1);
    if (strcmp(cmd, "export") == 0) return tb_cli_export(argc - 1, argv + 1);
    if (strcmp(cmd, "utility") == 0) return tb_cli_utility(argc - 1, argv + 1);
    if (strcmp(cmd, "hw") == 0) return tb_cli_hw(argc - 1, argv + 1);
    if (strcmp(cmd, "version") == 0 || strcmp(cmd, "--version") == 0) {
        printf("trainbench %s (code %s)\n", TB_VERSION, tb_code_version());
        return TB_EXIT_OK;
    }
    tb_cli_error("unknown command '%s' (try `trainbench --help`)", cmd);
    return TB_EXIT_USAGE;
}

int main(int argc, char **argv)
{
    tb_cli_choose_blas_kernels(argv);
    int rc = run_command(argc, argv);
    /* output that never arrived (a full disk, a closed pipe) is a failure, not success */
    errno = 0;
    int flushed = fflush(stdout);
    int e = errno;
    if (flushed != 0 || ferror(stdout)) {
        tb_cli_error("cannot write output: %s", e ? strerror(e) : "write error");
        if (rc == TB_EXIT_OK) rc = TB_EXIT_FAILURE;
    }
    return rc;
}
