/* bench_trial.c: `bench --ranks-per-trial R` on the command line, and `trainbench bench-trial
 * FILE`, the internal command each rank of such a trial runs (mpirun -np R started it: see
 * src/bench/rank_trial.c). Rank 0's error goes back to the benchmark through FILE, which
 * records it; a rank prints only a failure of its own that rank 0 cannot know of. */
#include "cli.h"

#include <stdio.h>
#include <string.h>

bool tb_cli_parse_ranks_per_trial(const char *text, int *out)
{
    long r = 0;
    if (!tb_cli_parse_int("--ranks-per-trial", text, 0, TB_BENCH_CPUS_MAX, &r)) return false;
    if (r < 1) {
        tb_cli_error("--ranks-per-trial: %ld ranks train nothing: give 1 (the default, one "
                     "process per trial) or more", r);
        return false;
    }
    *out = (int)r;
    return true;
}

int tb_cli_bench_trial(int argc, char **argv)
{
    if (argc != 2 || argv[1][0] == '-') {
        tb_cli_error("bench-trial FILE: the internal command of one rank of a trial of "
                     "`bench --ranks-per-trial` (started by it, not by hand)");
        return TB_EXIT_USAGE;
    }
    tb_error err = {0};
    tb_status st = tb_bench_trial_ranks_main(argv[1], &err);
    if (st != TB_OK && strncmp(err.message, "another rank failed", 19) != 0)
        tb_cli_error("bench-trial: %s", err.message);
    return tb_cli_exit_code(st);
}
