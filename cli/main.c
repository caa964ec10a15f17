/* main.c: the trainbench command: the usage text and the dispatch to the git-style
 * subcommands (their shared helpers: common.c). */
#include "cli.h"
#include "blas_kernels.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

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
    "  merge        merge the stores of a benchmark's shards (bench --shard) into one\n"
    "  export       export a results store as CSV or JSON lines\n"
    "  report       one HTML report of a results store, with charts (docs/REPORT.md)\n"
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
    if (strcmp(cmd, "bench-trial") == 0) return tb_cli_bench_trial(argc - 1, argv + 1);
    if (strcmp(cmd, "score") == 0) return tb_cli_score(argc - 1, argv + 1);
    if (strcmp(cmd, "merge") == 0) return tb_cli_merge(argc - 1, argv + 1);
    if (strcmp(cmd, "export") == 0) return tb_cli_export(argc - 1, argv + 1);
    if (strcmp(cmd, "report") == 0) return tb_cli_report(argc - 1, argv + 1);
    if (strcmp(cmd, "utility") == 0) return tb_cli_utility(argc - 1, argv + 1);
    if (strcmp(cmd, "hw") == 0) return tb_cli_hw(argc - 1, argv + 1);
    if (strcmp(cmd, "version") == 0 || strcmp(cmd, "--version") == 0) {
        char share[4096];
        printf("trainbench %s (code %s)\ndata: %s\n", TB_VERSION, tb_code_version(),
               tb_cli_share_dir(share, sizeof share));
        return TB_EXIT_OK;
    }
    tb_cli_error("unknown command '%s' (try `trainbench --help`)", cmd);
    return TB_EXIT_USAGE;
}

int main(int argc, char **argv)
{
    tb_cli_choose_runtime(argv);
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
