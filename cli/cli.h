/* cli.h: shared pieces of the trainbench command: subcommands, exit codes, option parsing. */
#ifndef TRAINBENCH_CLI_H
#define TRAINBENCH_CLI_H

#include <stdbool.h>
#include <stdint.h>

#include "trainbench/trainbench.h"

/* Exit codes (documented in `trainbench --help`). */
enum {
    TB_EXIT_OK = 0,
    TB_EXIT_FAILURE = 1,  /* the work failed (I/O, out of memory, internal) */
    TB_EXIT_USAGE = 2,    /* bad command line or invalid value */
    TB_EXIT_MISSING = 3,  /* data or a device is not installed */
    TB_EXIT_DIVERGED = 4, /* training diverged (NaN/inf loss) */
};

int tb_cli_train(int argc, char **argv);
int tb_cli_workloads(int argc, char **argv);
int tb_cli_algorithms(int argc, char **argv);
int tb_cli_variance(int argc, char **argv);
int tb_cli_compare(int argc, char **argv);
int tb_cli_bench(int argc, char **argv);
int tb_cli_score(int argc, char **argv);
int tb_cli_export(int argc, char **argv);
/* Prints the score table(s) of a store (benchmark name NULL: all); returns an exit code. */
int tb_cli_print_scores(const char *db, const char *name, const char *reference,
                        bool variant_rule, bool json);
int tb_cli_prepare(int argc, char **argv);
/* tb_default_cache_dir in a static buffer: $XDG_CACHE_HOME/trainbench (absolute only) or
 * ~/.cache/trainbench; NULL if neither is set. */
const char *tb_cli_default_cache_dir(void);
/* The cache directory of command cmd: given (--cache-dir) or the default; NULL, with the
 * message "cmd: no cache directory ...: give --cache-dir DIR", when there is neither (every
 * command with --cache-dir then exits 2, before any work). */
const char *tb_cli_cache_dir(const char *cmd, const char *given);

/* Maps a library status to an exit code. */
int tb_cli_exit_code(tb_status st);
/* Parses a whole non-negative integer / finite number; prints an error naming the option. */
bool tb_cli_parse_u64(const char *opt, const char *text, uint64_t *out);
bool tb_cli_parse_int(const char *opt, const char *text, long min, long max, long *out);
bool tb_cli_parse_double(const char *opt, const char *text, double *out);
/* --db FILE: refuses "" and ":memory:" (a store that would not outlive the command, nor be
 * seen by a trial's process), printing the error. */
bool tb_cli_check_db(const char *path);
/* JSON on stdout: a number in fmt, or null where it is NaN or infinite (JSON has neither); a
 * string's characters escaped (quotes, backslashes; control characters dropped). */
void tb_cli_json_number(const char *fmt, double v);
void tb_cli_json_text(const char *text);
/* Prints "trainbench: <message>" to stderr. */
void tb_cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* For getopt_long's ':' (a missing value) or any unknown option of subcommand cmd: prints
 * "cmd: OPTION needs a value" or "cmd: unknown option 'OPTION' (see `trainbench cmd --help`)"
 * and returns TB_EXIT_USAGE. */
int tb_cli_option_error(const char *cmd, int getopt_result, char **argv);
/* TB_EXIT_OK when argv has nothing after the options, else prints "cmd: unexpected argument
 * 'X'" and returns TB_EXIT_USAGE. */
int tb_cli_no_arguments(const char *cmd, int argc, char **argv);

#endif
