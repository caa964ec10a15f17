/* dist.c: the end of a command run with --dist under an MPI launcher: who prints the failure,
 * and whether the ranks finalise together or the job is ended. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

int tb_cli_dist_finish(tb_dist *d, tb_status st, const tb_error *err)
{
    int code = tb_cli_exit_code(st);
    int rank = tb_dist_rank(d);
    /* rank 0 prints its failure; another rank prints its own only where it may be its alone
     * (not a bad option, a refused configuration or a divergence, which every rank meets alike
     * from the same command line) */
    bool shared = tb_dist_size(d) > 1 && (st == TB_ERR_UNSUPPORTED ||
                                          strncmp(err->message, "another rank failed", 19) == 0);
    if (st != TB_OK && rank == 0)
        tb_cli_error("%s", err->message);
    else if (st != TB_OK && !shared && (code == TB_EXIT_FAILURE || code == TB_EXIT_MISSING))
        tb_cli_error("rank %d: %s", rank, err->message);
    /* training makes every rank return the same verdict, except for a failure in a step on one
     * rank (out of memory, an MPI error, a bug): the others may be waiting for it, so end the
     * job rather than wait in MPI_Finalize */
    if (st != TB_OK && code == TB_EXIT_FAILURE && !shared) {
        tb_dist_abort(d, code);
        return code;
    }
    tb_error ferr = {0};
    if (tb_dist_finalize(d, &ferr) != TB_OK) {
        tb_cli_error("rank %d: %s", rank, ferr.message);
        if (code == TB_EXIT_OK) code = TB_EXIT_FAILURE;
    }
    return code;
}

void tb_cli_dist_warn_undistributed(const char *cmd)
{
    const char *size = getenv("OMPI_COMM_WORLD_SIZE");
    if (!size) size = getenv("PMI_SIZE");
    if (!size || atoi(size) < 2) return;
    const char *rank = getenv("OMPI_COMM_WORLD_RANK");
    if (!rank) rank = getenv("PMIX_RANK");
    if (!rank) rank = getenv("PMI_RANK");
    if (rank && atoi(rank) != 0) return;
    tb_cli_error("warning: started by an MPI launcher as %s processes without --dist: each "
                 "runs the whole %s on its own (add --dist to run data-parallel)",
                 size, cmd);
}
