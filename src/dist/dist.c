/* dist.c: the tb_dist context: started by an MPI launcher or not, rank and size, finalize. */
#include "dist/dist_impl.h"

#include <stdlib.h>

bool tb_dist_launched(void)
{
    static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK",
                                       "PMI_SIZE"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        if (getenv(vars[i])) return true;
    return false;
}

tb_status tb_dist_mpi_status(int code, const char *what, tb_error *err)
{
    if (code == MPI_SUCCESS) return TB_OK;
    char text[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    if (MPI_Error_string(code, text, &len) != MPI_SUCCESS) text[0] = '\0';
    return tb_fail(err, TB_ERR_IO, "%s: MPI error %d (%s)", what, code,
                   text[0] ? text : "no description");
}

/* The communicator: MPI_COMM_WORLD duplicated, errors returned instead of aborting. */
static tb_status open_comm(tb_dist *d, tb_error *err)
{
    tb_status st = tb_dist_mpi_status(MPI_Comm_dup(MPI_COMM_WORLD, &d->comm),
                                      "MPI_Comm_dup of the world", err);
    if (st != TB_OK) return st;
    st = tb_dist_mpi_status(MPI_Comm_set_errhandler(d->comm, MPI_ERRORS_RETURN),
                            "MPI_Comm_set_errhandler", err);
    if (st == TB_OK)
        st = tb_dist_mpi_status(MPI_Comm_rank(d->comm, &d->rank), "MPI_Comm_rank", err);
    if (st == TB_OK)
        st = tb_dist_mpi_status(MPI_Comm_size(d->comm, &d->size), "MPI_Comm_size", err);
    MPI_Comm node = MPI_COMM_NULL; /* the ranks that share this rank's memory: its machine */
    if (st == TB_OK)
        st = tb_dist_mpi_status(MPI_Comm_split_type(d->comm, MPI_COMM_TYPE_SHARED, d->rank,
                                                    MPI_INFO_NULL, &node),
                                "MPI_Comm_split_type (the ranks of this machine)", err);
    if (st == TB_OK)
        st = tb_dist_mpi_status(MPI_Comm_size(node, &d->node_size), "MPI_Comm_size", err);
    if (st == TB_OK)
        st = tb_dist_mpi_status(MPI_Comm_rank(node, &d->node_rank), "MPI_Comm_rank", err);
    if (node != MPI_COMM_NULL) MPI_Comm_free(&node);
    if (st != TB_OK) MPI_Comm_free(&d->comm);
    return st;
}

tb_status tb_dist_init(tb_dist **out, tb_error *err)
{
    if (!out) return tb_fail(err, TB_ERR_INVALID, "dist_init: out is NULL");
    *out = NULL;
    tb_dist *d = calloc(1, sizeof *d);
    if (!d) return tb_fail(err, TB_ERR_NOMEM, "cannot allocate the distributed context");
    d->rank = 0;
    d->size = d->node_size = 1;
    if (tb_dist_launched()) {
        int initialised = 0;
        MPI_Initialized(&initialised);
        if (!initialised) {
            /* errors of MPI_Init abort under most MPIs; the status is checked all the same */
            int provided = 0;
            tb_status st = tb_dist_mpi_status(
                MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided),
                "MPI_Init_thread (started by an MPI launcher)", err);
            if (st != TB_OK) {
                free(d);
                return st;
            }
            d->owns_init = true;
        }
        d->mpi = true;
        tb_status st = open_comm(d, err);
        if (st != TB_OK) {
            if (d->owns_init) MPI_Finalize();
            free(d);
            return st;
        }
    }
    *out = d;
    return TB_OK;
}

tb_status tb_dist_finalize(tb_dist *d, tb_error *err)
{
    if (!d) return TB_OK;
    tb_status st = TB_OK;
    if (d->mpi) {
        st = tb_dist_mpi_status(MPI_Comm_free(&d->comm), "MPI_Comm_free", err);
        if (d->owns_init) {
            tb_status fst = tb_dist_mpi_status(MPI_Finalize(), "MPI_Finalize", err);
            if (st == TB_OK) st = fst;
        }
    }
    free(d);
    return st;
}

void tb_dist_abort(tb_dist *d, int code)
{
    if (d && d->mpi && d->size > 1) MPI_Abort(MPI_COMM_WORLD, code);
    tb_dist_finalize(d, NULL);
}

int tb_dist_rank(const tb_dist *d) { return d ? d->rank : 0; }
int tb_dist_size(const tb_dist *d) { return d ? d->size : 1; }
int tb_dist_node_size(const tb_dist *d) { return d ? d->node_size : 1; }
int tb_dist_node_rank(const tb_dist *d) { return d ? d->node_rank : 0; }
bool tb_dist_uses_mpi(const tb_dist *d) { return d && d->mpi; }
