/* dist.h: data-parallel training across MPI ranks (docs/DISTRIBUTED.md).
 *
 * A tb_dist is the process's place in a job: its rank and the number of ranks (the world).
 * It is created with MPI only when the process was started by an MPI launcher (mpirun, mpiexec,
 * srun with PMI/PMIx: recognised from the environment, tb_dist_launched); otherwise it is a
 * world of 1 and no MPI function is ever called, so plain runs and forked trials are untouched.
 *
 *     tb_dist *d;
 *     tb_dist_init(&d, &err);                      // MPI_Init_thread under a launcher
 *     ... backward ...
 *     tb_dist_average(d, grads, n, &err);          // every rank: the mean of the ranks' grads
 *     tb_dist_finalize(d, &err);
 *
 * The collectives work on host memory and must be called by every rank in the same order
 * (they are MPI collectives on a duplicate of MPI_COMM_WORLD whose errors return instead of
 * aborting: a failure comes back as TB_ERR_IO with MPI's error string). With a world of 1
 * they return at once. Nothing here prints; only tb_dist_abort exits (for a command). */
#ifndef TRAINBENCH_DIST_H
#define TRAINBENCH_DIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "trainbench/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tb_dist tb_dist;

/* Whether the environment says an MPI launcher started this process (OMPI_COMM_WORLD_SIZE,
 * PMIX_RANK, PMI_RANK or PMI_SIZE is set). */
bool tb_dist_launched(void);

/* A context for this process: under a launcher MPI is initialised (MPI_THREAD_FUNNELED: only
 * the thread that created the context calls MPI; if MPI is already initialised it is used and
 * left initialised); otherwise a world of 1 without MPI. TB_ERR_IO when MPI fails to start. */
tb_status tb_dist_init(tb_dist **out, tb_error *err);
/* Frees d; finalises MPI when tb_dist_init initialised it (a collective: every rank must get
 * here). d NULL: nothing to do. */
tb_status tb_dist_finalize(tb_dist *d, tb_error *err);
/* Ends every rank of the job with exit code `code` (MPI_Abort), for a command whose rank
 * failed where the other ranks may be waiting for it; with a world of 1 it only frees d and
 * returns. */
void tb_dist_abort(tb_dist *d, int code);

int tb_dist_rank(const tb_dist *d); /* 0 for NULL */
int tb_dist_size(const tb_dist *d); /* 1 for NULL */
/* The ranks on this rank's machine, itself included (those that share its memory:
 * MPI_COMM_TYPE_SHARED); 1 for NULL and a world of 1. */
int tb_dist_node_size(const tb_dist *d);
/* Whether d uses MPI (false for a world of 1 started without a launcher). */
bool tb_dist_uses_mpi(const tb_dist *d);

/* In place on every rank: buf[i] <- (sum over ranks of buf[i]) / size (MPI_Allreduce of the
 * sum, then the scale). n may exceed INT_MAX (sent in pieces). */
tb_status tb_dist_average(tb_dist *d, float *buf, int64_t n, tb_error *err);
/* Rank 0's *value on every rank (MPI_Bcast): the decisions rank 0 takes alone (stop, failed). */
tb_status tb_dist_broadcast(tb_dist *d, int *value, tb_error *err);
/* The largest *value over the ranks, on every rank (MPI_Allreduce of the maximum): a decision
 * any rank may raise (a failure) beside those rank 0 takes. */
tb_status tb_dist_max(tb_dist *d, int *value, tb_error *err);
/* Whether every rank holds bit-identical buf[0..n) (a 64-bit hash of the bytes, gathered from
 * every rank): TB_ERR_INTERNAL naming `what` and the ranks whose copy differs from rank 0's,
 * on every rank, otherwise TB_OK. */
tb_status tb_dist_check_identical(tb_dist *d, const float *buf, int64_t n, const char *what,
                                  tb_error *err);
/* Every rank leaves with the same verdict (one collective every rank calls): when a rank
 * failed, every other one fails too, with the failed status (theirs when several failed) and a
 * message saying another rank failed and reports why; a rank's own failure and message are
 * kept. With stop non-NULL, every rank gets rank 0's *stop (rank 0 decides when to stop). With
 * a world of 1, st is returned as it is. */
tb_status tb_dist_agree(tb_dist *d, tb_status st, bool *stop, tb_error *err);
/* tb_dist_agree with a decision code instead of the stop: every rank gets rank 0's *code
 * (0 to TB_DIST_AGREE_FAILED - 1; code NULL: none is carried). */
#define TB_DIST_AGREE_FAILED 1000
tb_status tb_dist_agree_code(tb_dist *d, tb_status st, int *code, tb_error *err);

/* ---- point-to-point messages (the benchmark's coordinator and workers) ----
 * Bytes from one rank to another, with a tag the caller chooses (>= 0). Only with MPI and
 * more than one rank (TB_ERR_INVALID otherwise). */
typedef struct tb_dist_message {
    bool waiting;   /* a message is there (the rest set only then) */
    int source, tag;
    size_t bytes;
} tb_dist_message;

tb_status tb_dist_send(tb_dist *d, int dest, int tag, const void *buf, size_t n, tb_error *err);
/* The next message from any rank, without receiving it: with wait, blocks until one comes;
 * without, m->waiting says whether one is there. */
tb_status tb_dist_probe(tb_dist *d, bool wait, tb_dist_message *m, tb_error *err);
/* Receives the message m describes into buf (cap bytes; TB_ERR_FORMAT when it is larger). */
tb_status tb_dist_recv(tb_dist *d, const tb_dist_message *m, void *buf, size_t cap,
                       tb_error *err);
/* This rank's place among the ranks of its machine (0 to tb_dist_node_size - 1). */
int tb_dist_node_rank(const tb_dist *d);

#ifdef __cplusplus
}
#endif
#endif
