/* bench_dist.c: `trainbench bench` under mpirun or srun: rank 0 plans, owns the store and
 * hands the trials to the other ranks (tb_bench_run_ranks); it alone prints. A job of one
 * rank runs as one process, --jobs included. */
#include "cli.h"

#include <stdio.h>

int tb_cli_bench_ranks(const char *db, tb_bench_spec *spec, long jobs, const char *cpus,
                       tb_bench_progress_fn progress, bool json)
{
    tb_dist *d = NULL;
    tb_error err = {0};
    tb_status st = tb_dist_init(&d, &err);
    if (st != TB_OK) {
        tb_cli_error("%s", err.message);
        return tb_cli_exit_code(st);
    }
    const int rank = tb_dist_rank(d), size = tb_dist_size(d);
    if (size > 1 && (jobs > 1 || cpus)) {
        if (rank == 0)
            tb_cli_error("--jobs and --cpus are for one machine without a launcher: under "
                         "mpirun each rank above 0 runs one trial at a time (start one rank "
                         "more than the trials to run at once)");
        tb_dist_finalize(d, NULL);
        return TB_EXIT_USAGE;
    }
    if (size == 1 && tb_cli_bench_jobs(jobs, cpus, spec) != TB_EXIT_OK) {
        tb_dist_finalize(d, NULL);
        return TB_EXIT_USAGE;
    }
    if (size == 1)
        fprintf(stderr, "note: started by an MPI launcher as 1 rank: the benchmark runs as one "
                        "process (rank 0 hands trials to the other ranks when there are some)\n");
    tb_bench_summary sum;
    st = tb_bench_run_ranks(db, spec, d, rank == 0 ? progress : NULL, NULL, &sum, &err);
    if (rank > 0) {
        if (st != TB_OK) {
            /* rank 0 may be waiting for this rank: the job ends */
            tb_cli_error("rank %d: %s", rank, err.message);
            tb_dist_abort(d, tb_cli_exit_code(st));
            return tb_cli_exit_code(st);
        }
        tb_dist_finalize(d, NULL);
        return TB_EXIT_OK;
    }
    tb_dist_finalize(d, NULL); /* every worker was told to stop */
    if (st != TB_OK) {
        tb_cli_error("%s", err.message);
        return tb_cli_exit_code(st);
    }
    fprintf(stderr, "%d trials: %d run now (on %d worker rank%s), %d reused from %s, %d failed\n",
            sum.planned, sum.ran, size > 1 ? size - 1 : 0, size == 2 ? "" : "s", sum.reused, db,
            sum.failed);
    if (sum.skipped)
        fprintf(stderr, "%d submission%s skipped, not scored: %s\n", sum.skipped,
                sum.skipped > 1 ? "s" : "", sum.skipped_reasons);
    fputc('\n', stderr);
    return tb_cli_print_scores(db, spec->name, NULL, false, TB_TIME_WALL, json);
}
