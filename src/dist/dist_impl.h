/* dist_impl.h: the tb_dist context and MPI's errors as tb_status (internal to src/dist). */
#ifndef TRAINBENCH_DIST_IMPL_H
#define TRAINBENCH_DIST_IMPL_H

#include "trainbench/dist.h"

#include <mpi.h>

struct tb_dist {
    int rank, size;
    int node_size;    /* ranks on this rank's machine (MPI_COMM_TYPE_SHARED) */
    int node_rank;    /* this rank's place among them */
    bool mpi;         /* false: a world of 1 started without a launcher, no MPI calls */
    bool owns_init;   /* tb_dist_init called MPI_Init_thread, so finalize calls MPI_Finalize */
    MPI_Comm comm;    /* a duplicate of MPI_COMM_WORLD with MPI_ERRORS_RETURN */
};

/* TB_OK for MPI_SUCCESS, else TB_ERR_IO with "what: MPI's error string". */
tb_status tb_dist_mpi_status(int code, const char *what, tb_error *err);

#endif
