/* p2p.c: point-to-point messages of bytes between two ranks (the benchmark's coordinator and
 * its workers): send, a look for any message waiting, and its receipt. */
#include "dist/dist_impl.h"

#include <limits.h>

static tb_status check(const tb_dist *d, const char *fn, tb_error *err)
{
    if (!d) return tb_fail(err, TB_ERR_INVALID, "%s: the context is NULL", fn);
    if (!d->mpi || d->size < 2)
        return tb_fail(err, TB_ERR_INVALID, "%s: a world of 1 has no other rank", fn);
    return TB_OK;
}

tb_status tb_dist_send(tb_dist *d, int dest, int tag, const void *buf, size_t n, tb_error *err)
{
    tb_status st = check(d, "dist_send", err);
    if (st != TB_OK) return st;
    if (n > INT_MAX || (n && !buf) || dest < 0 || dest >= d->size || tag < 0)
        return tb_fail(err, TB_ERR_INVALID, "dist_send: bad message (to %d, tag %d, %zu bytes)",
                       dest, tag, n);
    return tb_dist_mpi_status(MPI_Send(buf, (int)n, MPI_BYTE, dest, tag, d->comm),
                              "sending to another rank (MPI_Send)", err);
}

tb_status tb_dist_probe(tb_dist *d, bool wait, tb_dist_message *m, tb_error *err)
{
    tb_status st = check(d, "dist_probe", err);
    if (st != TB_OK) return st;
    m->waiting = false;
    MPI_Status s;
    int flag = 1, count = 0;
    if (wait)
        st = tb_dist_mpi_status(MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, d->comm, &s),
                                "waiting for a message (MPI_Probe)", err);
    else
        st = tb_dist_mpi_status(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, d->comm, &flag, &s),
                                "looking for a message (MPI_Iprobe)", err);
    if (st != TB_OK || !flag) return st;
    MPI_Get_count(&s, MPI_BYTE, &count);
    m->waiting = true;
    m->source = s.MPI_SOURCE;
    m->tag = s.MPI_TAG;
    m->bytes = (size_t)count;
    return TB_OK;
}

tb_status tb_dist_recv(tb_dist *d, const tb_dist_message *m, void *buf, size_t cap,
                       tb_error *err)
{
    tb_status st = check(d, "dist_recv", err);
    if (st != TB_OK) return st;
    if (m->bytes > cap || cap > INT_MAX)
        return tb_fail(err, TB_ERR_FORMAT, "a message of %zu bytes from rank %d (tag %d) does "
                       "not fit %zu: the ranks run different builds", m->bytes, m->source,
                       m->tag, cap);
    return tb_dist_mpi_status(MPI_Recv(buf, (int)m->bytes, MPI_BYTE, m->source, m->tag,
                                       d->comm, MPI_STATUS_IGNORE),
                              "receiving from another rank (MPI_Recv)", err);
}
