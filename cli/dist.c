/* dist.c: the end of a command run with --dist under an MPI launcher: who prints the failure,
 * and whether the ranks finalise together or the job is ended. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

/* A failure another rank had, relayed to this one (tb_dist_agree words it so). */
static bool relayed(const tb_error *err)
{
    return strncmp(err->message, "another rank failed", 19) == 0;
}

bool tb_cli_dist_prints(const tb_dist *d, tb_status st, const tb_error *err)
{
    if (st == TB_OK) return false;
    if (tb_dist_rank(d) == 0) return true;
    return !relayed(err) && (st == TB_ERR_MISSING || st == TB_ERR_NO_DEVICE ||
                             tb_cli_exit_code(st) == TB_EXIT_FAILURE);
}

int tb_cli_dist_finish(tb_dist *d, tb_status st, const tb_error *err)
{
    int code = tb_cli_exit_code(st);
    int rank = tb_dist_rank(d);
    if (tb_cli_dist_prints(d, st, err)) {
        if (rank == 0)
            tb_cli_error("%s", err->message);
        else
            tb_cli_error("rank %d: %s", rank, err->message);
    }
    /* training makes every rank return the same verdict, except for a failure in a step on one
     * rank (out of memory, an MPI error, a bug): the others may be waiting for it, so end the
     * job rather than wait in MPI_Finalize */
    if (code == TB_EXIT_FAILURE && !relayed(err)) {
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
