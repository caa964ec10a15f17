/* cli.h: shared pieces of the trainbench command: subcommands, exit codes, option parsing. */
#ifndef TRAINBENCH_CLI_H
#define TRAINBENCH_CLI_H

#include <stdbool.h>
#include <stddef.h>
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
int tb_cli_study(int argc, char **argv);
int tb_cli_bench(int argc, char **argv);
/* bench --jobs/--cpus: checks them and sets spec->trial's jobs, cpus and threads (the cores
 * shared out among the jobs unless --threads gave them); TB_EXIT_USAGE after printing why. */
int tb_cli_bench_jobs(long jobs, const char *cpus, tb_bench_spec *spec);
/* bench --ranks-per-trial R: at least 1; false after printing why. */
bool tb_cli_parse_ranks_per_trial(const char *text, int *out);
/* `trainbench bench-trial FILE` (internal): one rank of a data-parallel trial that
 * bench --ranks-per-trial started with mpirun; the exit code. */
int tb_cli_bench_trial(int argc, char **argv);
/* bench under an MPI launcher (bench_dist.c): runs spec across the ranks and, on rank 0,
 * prints the summary and the scores; the exit code. */
int tb_cli_bench_ranks(const char *db, tb_bench_spec *spec, long jobs, const char *cpus,
                       tb_bench_progress_fn progress, bool json);
int tb_cli_score(int argc, char **argv);
int tb_cli_merge(int argc, char **argv);
int tb_cli_export(int argc, char **argv);
int tb_cli_report(int argc, char **argv);
int tb_cli_utility(int argc, char **argv);
int tb_cli_hw(int argc, char **argv);
/* Prints the score table(s) of a store (benchmark name NULL: all); returns an exit code. */
int tb_cli_print_scores(const char *db, const char *name, const char *reference,
                        bool variant_rule, tb_time_basis basis, bool json);
int tb_cli_prepare(int argc, char **argv);

/* Where the shipped files are (share.c): $TRAINBENCH_DATA_DIR, else share/trainbench beside
 * the executable's directory (installed), else the source tree (a build-tree binary), else
 * the install prefix's. Writes the directory, or the path rel inside it, to out (cap bytes)
 * and returns out. */
const char *tb_cli_share_dir(char *out, size_t cap);
const char *tb_cli_share_path(const char *rel, char *out, size_t cap);
/* The help line of options whose default is a shipped file or directory. */
#define TB_CLI_SHARE_HELP "the data directory (`trainbench version` names it)"

/* ---- options several commands share (options.c): one rule each --------------------------
 * getopt_long codes of the long-only shared options (the commands' own start at 1000). */
enum {
    TB_OPT_DATA_DIR = 900,
    TB_OPT_CACHE_DIR,
    TB_OPT_DEVICE,
    TB_OPT_PRECISION,
    TB_OPT_STEPS,
    TB_OPT_EVAL_EXAMPLES,
    TB_OPT_SPLIT,
    TB_OPT_DROPOUT_RATE,
    TB_OPT_FULL_BATCH,
};

/* The data options of every command that loads data (prepare, train, variance, compare,
 * bench), with their help lines. */
#define TB_CLI_DATA_OPTIONS                                                                     \
    {"data-dir", required_argument, 0, TB_OPT_DATA_DIR},                                        \
        {"cache-dir", required_argument, 0, TB_OPT_CACHE_DIR}
#define TB_CLI_DATA_HELP                                                                        \
    "      --data-dir DIR        the data package's directory (default: where Debian\n"        \
    "                            installs it)\n"                                               \
    "      --cache-dir DIR       prepared-data cache (default $XDG_CACHE_HOME/trainbench,\n"   \
    "                            or ~/.cache/trainbench when XDG_CACHE_HOME is unset or\n"    \
    "                            relative; with neither HOME nor XDG_CACHE_HOME the\n"        \
    "                            command exits 2 unless given)\n"
typedef struct tb_cli_data {
    const char *data_dir, *cache_dir; /* NULL: the defaults */
} tb_cli_data;
/* getopt_long's result c if it is a data option: true, with optarg stored in d. */
bool tb_cli_data_option(int c, tb_cli_data *d);
/* After the options: d->cache_dir given or the default (tb_cli_cache_dir); false, with the
 * message printed, when there is neither. */
bool tb_cli_data_finish(const char *cmd, tb_cli_data *d);
/* tb_default_cache_dir in a static buffer: $XDG_CACHE_HOME/trainbench (absolute only) or
 * ~/.cache/trainbench; NULL if neither is set. */
const char *tb_cli_default_cache_dir(void);
/* The cache directory of command cmd: given (--cache-dir) or the default; NULL, with the
 * message "cmd: no cache directory ...: give --cache-dir DIR", when there is neither (every
 * command with --cache-dir then exits 2, before any work). */
const char *tb_cli_cache_dir(const char *cmd, const char *given);

/* -t, --threads N of every command that trains: 1 to TB_CLI_THREADS_MAX (0 is refused: leave
 * the option out for all cores); --device NAME: cpu or cuda. Both print the error. */
#define TB_CLI_THREADS_MAX 4096
bool tb_cli_parse_threads(const char *text, int *out);
bool tb_cli_parse_device(const char *text, tb_device *out);
#define TB_CLI_THREADS_HELP                                                                     \
    "  -t, --threads N           CPU threads of the backend's kernels (1 to 4096; default:\n" \
    "                            all cores)\n"
#define TB_CLI_DEVICE_HELP                                                                      \
    "      --device NAME         cpu (default) or cuda\n"
#define TB_CLI_PRECISION_HELP                                                                   \
    "      --precision P         matrix products: fp32 (default), or on cuda tf32 or bf16\n"  \
    "                            (bf16 operands, fp32 accumulation and master weights)\n"
/* --eval-examples N: 1 to TB_CLI_EVAL_EXAMPLES_MAX examples of each split. */
#define TB_CLI_EVAL_EXAMPLES_MAX 1000000000L
bool tb_cli_parse_eval_examples(const char *text, int64_t *out);

/* The options of the commands that train (train, variance, compare): workload, length,
 * batch size, backend, evaluation subset, split and data. tb_cli_run_option takes getopt's
 * result c and applies it to every config of cfgs[0..n) (compare's two sides get the same
 * value): 0 handled, 1 not a run option, 2 a bad value (the message printed). */
#define TB_CLI_RUN_OPTIONS                                                                      \
    {"workload", required_argument, 0, 'w'}, {"epochs", required_argument, 0, 'e'},            \
        {"steps", required_argument, 0, TB_OPT_STEPS},                                          \
        {"batch-size", required_argument, 0, 'b'},                                              \
        {"eval-examples", required_argument, 0, TB_OPT_EVAL_EXAMPLES},                          \
        {"split", required_argument, 0, TB_OPT_SPLIT}, {"threads", required_argument, 0, 't'}, \
        {"device", required_argument, 0, TB_OPT_DEVICE},                                        \
        {"precision", required_argument, 0, TB_OPT_PRECISION},                                  \
        {"dropout-rate", required_argument, 0, TB_OPT_DROPOUT_RATE},                            \
        {"full-batch", required_argument, 0, TB_OPT_FULL_BATCH}, TB_CLI_DATA_OPTIONS
int tb_cli_run_option(int c, tb_run_config *const *cfgs, int n);
/* After the options: every config's cache directory given or the default; false, with the
 * message printed, when there is neither. */
bool tb_cli_run_finish(const char *cmd, tb_run_config *const *cfgs, int n);
/* Whether an algorithm name is a submission file (a Python file or a shared library). */
bool tb_cli_submission_file(const char *name);

/* The end of a command run with --dist (d from tb_dist_init): prints err's failure (rank 0;
 * another rank only a failure that may be its own, prefixed with its rank), then finalises
 * d, or for a failure the other ranks may not share (exit code 1) ends the whole job
 * (tb_dist_abort). Returns the exit code. */
int tb_cli_dist_finish(tb_dist *d, tb_status st, const tb_error *err);
/* Whether this rank prints its failure st (false for TB_OK): rank 0 always; another rank only
 * a failure that may be its alone (data or a device missing on its host, an I/O, memory or
 * MPI failure), not one every rank meets alike from the same command line (a bad option, a
 * refused configuration, a divergence) nor another rank's failure relayed to it. */
bool tb_cli_dist_prints(const tb_dist *d, tb_status st, const tb_error *err);
/* Under an MPI launcher with more than one process but without --dist, a warning (from the
 * launcher's rank 0 only, where the environment names it) that every process runs the whole
 * command on its own. */
void tb_cli_dist_warn_undistributed(const char *cmd);
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
