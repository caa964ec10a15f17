/* collectives.c: what data-parallel training exchanges: the gradient average, rank 0's
 * decisions, and the check that every rank holds the same weights. */
#include "dist/dist_impl.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* elements per MPI call: counts are int */
#define DIST_PIECE (INT64_C(1) << 30)

tb_status tb_dist_average(tb_dist *d, float *buf, int64_t n, tb_error *err)
{
    if (!d || (!buf && n > 0) || n < 0)
        return tb_fail(err, TB_ERR_INVALID, "dist_average: %s",
                       !d ? "the context is NULL" : n < 0 ? "negative count" : "buf is NULL");
    if (d->size == 1) return TB_OK;
    for (int64_t at = 0; at < n; at += DIST_PIECE) {
        int count = (int)(n - at < DIST_PIECE ? n - at : DIST_PIECE);
        tb_status st = tb_dist_mpi_status(
            MPI_Allreduce(MPI_IN_PLACE, buf + at, count, MPI_FLOAT, MPI_SUM, d->comm),
            "averaging across ranks (MPI_Allreduce)", err);
        if (st != TB_OK) return st;
    }
    float scale = 1.0f / (float)d->size;
    for (int64_t i = 0; i < n; i++) buf[i] *= scale;
    return TB_OK;
}

tb_status tb_dist_broadcast(tb_dist *d, int *value, tb_error *err)
{
    if (!d || !value)
        return tb_fail(err, TB_ERR_INVALID, "dist_broadcast: %s is NULL",
                       d ? "value" : "the context");
    if (d->size == 1) return TB_OK;
    return tb_dist_mpi_status(MPI_Bcast(value, 1, MPI_INT, 0, d->comm),
                              "rank 0's decision (MPI_Bcast)", err);
}

tb_status tb_dist_max(tb_dist *d, int *value, tb_error *err)
{
    if (!d || !value)
        return tb_fail(err, TB_ERR_INVALID, "dist_max: %s is NULL", d ? "value" : "the context");
    if (d->size == 1) return TB_OK;
    return tb_dist_mpi_status(MPI_Allreduce(MPI_IN_PLACE, value, 1, MPI_INT, MPI_MAX, d->comm),
                              "the ranks' verdict (MPI_Allreduce)", err);
}

/* FNV-1a over the bytes: equal buffers give equal hashes on every rank. */
static uint64_t hash_bytes(const void *p, size_t n)
{
    const unsigned char *b = p;
    uint64_t h = UINT64_C(14695981039346656037);
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= UINT64_C(1099511628211);
    }
    return h;
}

tb_status tb_dist_check_identical(tb_dist *d, const float *buf, int64_t n, const char *what,
                                  tb_error *err)
{
    if (!d || (!buf && n > 0) || n < 0)
        return tb_fail(err, TB_ERR_INVALID, "dist_check_identical: %s",
                       !d ? "the context is NULL" : n < 0 ? "negative count" : "buf is NULL");
    if (d->size == 1) return TB_OK;
    uint64_t mine = hash_bytes(buf, (size_t)n * sizeof *buf);
    uint64_t *all = malloc((size_t)d->size * sizeof *all);
    if (!all) return tb_fail(err, TB_ERR_NOMEM, "cannot allocate %d hashes", d->size);
    tb_status st = tb_dist_mpi_status(
        MPI_Allgather(&mine, 1, MPI_UINT64_T, all, 1, MPI_UINT64_T, d->comm),
        "comparing across ranks (MPI_Allgather)", err);
    if (st != TB_OK) {
        free(all);
        return st;
    }
    char ranks[160] = "";
    int differ = 0;
    for (int r = 1; r < d->size; r++) {
        if (all[r] == all[0]) continue;
        size_t used = strlen(ranks);
        if (differ < 8)
            snprintf(ranks + used, sizeof ranks - used, "%s%d", differ ? ", " : "", r);
        differ++;
    }
    free(all);
    if (differ == 0) return TB_OK;
    return tb_fail(err, TB_ERR_INTERNAL,
                   "%s differ across ranks: %d of %d ranks (%s%s) hold other values than rank 0 "
                   "(%lld floats compared by hash)",
                   what ? what : "the buffers", differ, d->size, ranks, differ > 8 ? ", ..." : "",
                   (long long)n);
}
