/* idx.c: reads gzip-compressed unsigned-byte IDX files (the MNIST file format) with zlib,
 * validating the gzip stream, the magic number, the dimensions and the payload length. */
#include "trainbench/data.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

/* Bytes asked of gzread at once (it takes an unsigned int). */
#define IDX_READ_CHUNK ((int64_t)1 << 24)
/* First allocation for the payload; it doubles as data arrives, up to the declared size. */
#define IDX_FIRST_ALLOC ((int64_t)1 << 20)

void tb_idx_free(tb_idx *idx)
{
    if (!idx) return;
    free(idx->data);
    memset(idx, 0, sizeof *idx);
}

/* Reads up to len bytes, stopping early only at the end of the stream. Returns the bytes read,
 * or -1 after recording a TB_ERR_FORMAT (corrupt gzip) in err. */
static int64_t read_full(gzFile f, const char *path, uint8_t *buf, int64_t len, tb_error *err)
{
    int64_t got = 0;
    while (got < len) {
        int64_t want = len - got < IDX_READ_CHUNK ? len - got : IDX_READ_CHUNK;
        int n = gzread(f, buf + got, (unsigned)want);
        int zerr = Z_OK;
        const char *zmsg = gzerror(f, &zerr);
        if (n < 0 || (zerr != Z_OK && zerr != Z_STREAM_END)) {
            /* zlib's message starts with the path it was opened with; drop that */
            size_t plen = strlen(path);
            if (zmsg && strncmp(zmsg, path, plen) == 0 && strncmp(zmsg + plen, ": ", 2) == 0)
                zmsg += plen + 2;
            tb_fail(err, TB_ERR_FORMAT, "%s: corrupt gzip stream: %s (zlib code %d)", path,
                    zmsg && *zmsg ? zmsg : "unknown zlib error", zerr);
            return -1;
        }
        if (n == 0) break;
        got += n;
    }
    return got;
}

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

/* Opens path for gzip reading, telling a missing file from other failures. */
static tb_status open_gz(const char *path, gzFile *out, tb_error *err)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        int e = errno;
        if (e == ENOENT || e == ENOTDIR)
            return tb_fail(err, TB_ERR_MISSING, "%s: no such file", path);
        char why[128];
        if (strerror_r(e, why, sizeof why) != 0) snprintf(why, sizeof why, "errno %d", e);
        return tb_fail(err, TB_ERR_IO, "%s: cannot open: %s", path, why);
    }
    if (!S_ISREG(st.st_mode))
        return tb_fail(err, TB_ERR_IO, "%s: cannot open: not a regular file", path);
    errno = 0;
    gzFile f = gzopen(path, "rb");
    if (!f) {
        int e = errno;
        char why[128] = "out of memory";
        if (e != 0 && strerror_r(e, why, sizeof why) != 0)
            snprintf(why, sizeof why, "errno %d", e);
        return tb_fail(err, e == ENOENT ? TB_ERR_MISSING : TB_ERR_IO, "%s: cannot open: %s", path,
                       why);
    }
    gzbuffer(f, 1u << 17);
    *out = f;
    return TB_OK;
}

/* Reads header and payload from an open stream into out (zeroed on entry); want_ndim > 0: the
 * magic number must declare that many dimensions. */
static tb_status read_idx(gzFile f, const char *path, int want_ndim, tb_idx *out, tb_error *err)
{
    /* the magic number; gzdirect() after the first read tells a gzip stream from a plain file */
    uint8_t head[4 + 4 * TB_IDX_MAX_DIMS];
    int64_t got = read_full(f, path, head, 4, err);
    if (got < 0) return TB_ERR_FORMAT;
    if (gzdirect(f))
        return tb_fail(err, TB_ERR_FORMAT,
                       "%s: not a gzip file (IDX files are read gzip-compressed)", path);
    if (got < 4)
        return tb_fail(err, TB_ERR_FORMAT,
                       "%s: truncated header: expected 4 bytes of magic number, data ended at "
                       "byte offset %lld",
                       path, (long long)got);
    uint32_t magic = be32(head);
    int ndim = head[3];
    if (head[0] != 0 || head[1] != 0 || head[2] != 0x08 || ndim < 1 || ndim > TB_IDX_MAX_DIMS)
        return tb_fail(err, TB_ERR_FORMAT,
                       "%s: wrong magic 0x%08x, expected 0x00000801 to 0x%08x (unsigned bytes, "
                       "type 0x08, with 1 to %d dimensions)",
                       path, (unsigned)magic, 0x800u + TB_IDX_MAX_DIMS, TB_IDX_MAX_DIMS);
    /* before the dimensions: a file of the wrong kind (labels for images) must not be read as
     * one of its own kind and then blamed for its length */
    if (want_ndim > 0 && ndim != want_ndim)
        return tb_fail(err, TB_ERR_FORMAT,
                       "%s: wrong magic 0x%08x, expected 0x%08x (an array of %d dimension%s; "
                       "the file declares %d)",
                       path, (unsigned)magic, 0x800u + (unsigned)want_ndim, want_ndim,
                       want_ndim == 1 ? "" : "s", ndim);

    /* dimensions, guarding the product against overflow and absurd sizes */
    int64_t header_bytes = 4 + 4 * (int64_t)ndim;
    got = read_full(f, path, head + 4, 4 * (int64_t)ndim, err);
    if (got < 0) return TB_ERR_FORMAT;
    if (got < 4 * ndim)
        return tb_fail(err, TB_ERR_FORMAT,
                       "%s: truncated header: expected %lld bytes, data ended at byte offset %lld",
                       path, (long long)header_bytes, (long long)(4 + got));
    int64_t size = 1;
    bool absurd = false;
    for (int d = 0; d < ndim; d++) {
        int64_t dim = be32(head + 4 + 4 * d);
        out->dims[d] = dim;
        if (absurd || (dim != 0 && size > TB_IDX_MAX_BYTES / dim))
            absurd = true;
        else
            size *= dim;
    }
    if (absurd) {
        /* every dimension, as the product is what is absurd, not the one that overflowed */
        char dims[TB_IDX_MAX_DIMS * 14] = "";
        for (int d = 0, n = 0; d < ndim; d++)
            n += snprintf(dims + n, sizeof dims - (size_t)n, "%s%lld", d ? " x " : "",
                          (long long)out->dims[d]);
        memset(out, 0, sizeof *out);
        return tb_fail(err, TB_ERR_FORMAT,
                       "%s: absurd dimensions %s: the data would exceed %lld bytes", path,
                       dims, (long long)TB_IDX_MAX_BYTES);
    }
    out->ndim = ndim;
    out->size = size;

    /* the payload, allocated as it arrives so a lying header cannot make us allocate */
    int64_t cap = size < IDX_FIRST_ALLOC ? size : IDX_FIRST_ALLOC;
    out->data = malloc((size_t)(cap > 0 ? cap : 1));
    if (!out->data) return tb_fail(err, TB_ERR_NOMEM, "%s: out of memory", path);
    int64_t have = 0;
    while (have < size) {
        if (have == cap) {
            int64_t next = cap <= size / 2 ? 2 * cap : size;
            uint8_t *grown = realloc(out->data, (size_t)next);
            if (!grown)
                return tb_fail(err, TB_ERR_NOMEM, "%s: out of memory for %lld bytes", path,
                               (long long)next);
            out->data = grown;
            cap = next;
        }
        int64_t n = read_full(f, path, out->data + have, cap - have, err);
        if (n < 0) return TB_ERR_FORMAT;
        have += n;
        if (have < cap) break; /* end of stream */
    }
    if (have < size)
        return tb_fail(err, TB_ERR_FORMAT,
                       "%s: truncated payload: expected %lld bytes of data after the %lld-byte "
                       "header (%lld in all), data ended at byte offset %lld",
                       path, (long long)size, (long long)header_bytes,
                       (long long)(header_bytes + size), (long long)(header_bytes + have));

    /* nothing may follow the data */
    uint8_t rest[4096];
    int64_t extra = 0;
    for (;;) {
        int64_t n = read_full(f, path, rest, (int64_t)sizeof rest, err);
        if (n < 0) return TB_ERR_FORMAT;
        extra += n;
        if (n < (int64_t)sizeof rest) break;
    }
    if (extra > 0)
        return tb_fail(err, TB_ERR_FORMAT,
                       "%s: %lld bytes after the end of the data (byte offset %lld)", path,
                       (long long)extra, (long long)(header_bytes + size));
    return TB_OK;
}

tb_status tb_idx_read_ndim(const char *path, int ndim, tb_idx *out, tb_error *err)
{
    if (!out) return tb_fail(err, TB_ERR_INVALID, "tb_idx_read: out is NULL");
    memset(out, 0, sizeof *out);
    if (!path) return tb_fail(err, TB_ERR_INVALID, "tb_idx_read: path is NULL");
    if (ndim < 0 || ndim > TB_IDX_MAX_DIMS)
        return tb_fail(err, TB_ERR_INVALID, "tb_idx_read: %d dimensions (0 to %d)", ndim,
                       TB_IDX_MAX_DIMS);
    gzFile f = NULL;
    tb_status st = open_gz(path, &f, err);
    if (st != TB_OK) return st;
    st = read_idx(f, path, ndim, out, err);
    int close_rc = gzclose_r(f);
    if (st == TB_OK && close_rc != Z_OK)
        st = tb_fail(err, TB_ERR_IO, "%s: error closing the file (zlib code %d)", path, close_rc);
    if (st != TB_OK) tb_idx_free(out);
    return st;
}

tb_status tb_idx_read(const char *path, tb_idx *out, tb_error *err)
{
    return tb_idx_read_ndim(path, 0, out, err);
}
