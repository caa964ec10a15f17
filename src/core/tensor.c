/* tensor.c: tensor descriptors, views and owning allocations. */
#include "trainbench/tensor.h"

#include <stdio.h>
#include <string.h>

size_t tb_dtype_size(tb_dtype dtype)
{
    return dtype == TB_I32 ? sizeof(int32_t) : sizeof(float);
}

/* a * b for a, b >= 0 into *out; false if the product does not fit in int64. The one checked
 * multiply of the library's shape arithmetic. */
static bool mul_checked(int64_t a, int64_t b, int64_t *out)
{
    if (a < 0 || b < 0 || (a != 0 && b > INT64_MAX / a)) return false;
    *out = a * b;
    return true;
}

/* "[2, 3, 4]" for any number of dimensions. */
static const char *dims_str(int ndim, const int64_t *shape, char *buf, size_t size)
{
    size_t used = 0;
    if (size == 0) return buf;
    buf[0] = '\0';
    used += (size_t)snprintf(buf + used, size - used, "[");
    for (int d = 0; d < ndim && used < size; d++)
        used += (size_t)snprintf(buf + used, size - used, d ? ", %lld" : "%lld",
                                 (long long)shape[d]);
    if (used < size) snprintf(buf + used, size - used, "]");
    return buf;
}

/* Checks a shape entering the library (see tensor.h): ndim in [0, TB_MAX_DIMS], a known
 * dtype, no negative dimension, and the product of the non-zero dimensions times the element
 * size within int64 (so that numel, every stride and every byte offset is representable
 * whatever the order of the products). TB_ERR_INVALID naming what and the shape otherwise. */
static tb_status shape_check(const char *what, tb_dtype dtype, int ndim, const int64_t *shape,
                             tb_error *err)
{
    if (ndim < 0 || ndim > TB_MAX_DIMS)
        return tb_fail(err, TB_ERR_INVALID, "%s of %d dimensions (at most TB_MAX_DIMS = %d)",
                       what, ndim, TB_MAX_DIMS);
    if (ndim > 0 && !shape) return tb_fail(err, TB_ERR_INVALID, "%s: shape is NULL", what);
    if (dtype != TB_F32 && dtype != TB_I32)
        return tb_fail(err, TB_ERR_INVALID, "%s of unknown dtype %d", what, (int)dtype);
    char buf[192];
    int64_t extent = (int64_t)tb_dtype_size(dtype);
    for (int d = 0; d < ndim; d++) {
        if (shape[d] < 0)
            return tb_fail(err, TB_ERR_INVALID, "%s shape %s has a negative dimension", what,
                           dims_str(ndim, shape, buf, sizeof buf));
        if (shape[d] > 0 && !mul_checked(extent, shape[d], &extent))
            return tb_fail(err, TB_ERR_INVALID,
                           "%s shape %s is too large (its size in bytes exceeds 2^63 - 1)",
                           what, dims_str(ndim, shape, buf, sizeof buf));
    }
    return TB_OK;
}

/* The contiguous descriptor of a shape shape_check accepted. */
static tb_tensor make_contiguous(tb_backend *be, void *data, tb_dtype dtype, int ndim,
                                 const int64_t *shape)
{
    tb_tensor t;
    memset(&t, 0, sizeof t);
    t.data = data;
    t.backend = be;
    t.dtype = dtype;
    t.ndim = ndim;
    int64_t s = 1;
    for (int d = ndim - 1; d >= 0; d--) {
        t.shape[d] = shape[d];
        t.stride[d] = s;
        s *= shape[d];
    }
    return t;
}

tb_status tb_tensor_wrap(tb_backend *be, void *data, tb_dtype dtype, int ndim,
                         const int64_t *shape, tb_tensor *out, tb_error *err)
{
    if (!out) return tb_fail(err, TB_ERR_INVALID, "tensor_wrap: out is NULL");
    tb_status st = shape_check("tensor", dtype, ndim, shape, err);
    if (st != TB_OK) return st;
    *out = make_contiguous(be, data, dtype, ndim, shape);
    return TB_OK;
}

int64_t tb_tensor_numel(const tb_tensor *t)
{
    int64_t n = 1;
    for (int d = 0; d < t->ndim; d++) n *= t->shape[d];
    return n;
}

size_t tb_tensor_bytes(const tb_tensor *t)
{
    return (size_t)tb_tensor_numel(t) * tb_dtype_size(t->dtype);
}

bool tb_tensor_is_contiguous(const tb_tensor *t)
{
    int64_t s = 1;
    for (int d = t->ndim - 1; d >= 0; d--) {
        if (t->shape[d] != 1 && t->stride[d] != s) return false;
        s *= t->shape[d];
    }
    return true;
}

bool tb_tensor_same_shape(const tb_tensor *a, const tb_tensor *b)
{
    if (a->ndim != b->ndim) return false;
    for (int d = 0; d < a->ndim; d++)
        if (a->shape[d] != b->shape[d]) return false;
    return true;
}

const char *tb_shape_str(const tb_tensor *t, char *buf, size_t size)
{
    return dims_str(t->ndim, t->shape, buf, size);
}

tb_status tb_tensor_reshape(const tb_tensor *t, int ndim, const int64_t *shape, tb_tensor *out,
                            tb_error *err)
{
    if (!t || !out)
        return tb_fail(err, TB_ERR_INVALID, "reshape: %s is NULL", t ? "out" : "the tensor");
    if (ndim < 0 || ndim > TB_MAX_DIMS)
        return tb_fail(err, TB_ERR_INVALID, "reshape: %d dimensions (at most TB_MAX_DIMS = %d)",
                       ndim, TB_MAX_DIMS);
    if (ndim > 0 && !shape) return tb_fail(err, TB_ERR_INVALID, "reshape: shape is NULL");
    if (!tb_tensor_is_contiguous(t))
        return tb_fail(err, TB_ERR_SHAPE, "reshape: the tensor is not contiguous");
    char buf[192];
    /* known: the product of the given non-zero dimensions (checked), zero if one is zero */
    int64_t known = 1, numel = tb_tensor_numel(t);
    bool zero = false;
    int infer = -1;
    for (int d = 0; d < ndim; d++) {
        if (shape[d] == -1) {
            if (infer >= 0) return tb_fail(err, TB_ERR_SHAPE, "reshape: more than one -1");
            infer = d;
        } else if (shape[d] < 0) {
            return tb_fail(err, TB_ERR_INVALID, "reshape: shape %s has a negative dimension",
                           dims_str(ndim, shape, buf, sizeof buf));
        } else if (shape[d] == 0) {
            zero = true;
        } else if (!mul_checked(known, shape[d], &known)) {
            return tb_fail(err, TB_ERR_INVALID,
                           "reshape: shape %s is too large (its element count exceeds 2^63 - 1)",
                           dims_str(ndim, shape, buf, sizeof buf));
        }
    }
    if (zero) known = 0;
    int64_t resolved[TB_MAX_DIMS];
    for (int d = 0; d < ndim; d++) resolved[d] = shape[d];
    if (infer >= 0) {
        if (known == 0 || numel % known != 0)
            return tb_fail(err, TB_ERR_SHAPE, "reshape: cannot infer a dimension for %lld "
                           "elements", (long long)numel);
        resolved[infer] = numel / known;
        known = numel;
    }
    if (known != numel) {
        char tbuf[192];
        return tb_fail(err, TB_ERR_SHAPE, "reshape: %s has %lld elements, the new shape %s %lld",
                       tb_shape_str(t, tbuf, sizeof tbuf), (long long)numel,
                       dims_str(ndim, shape, buf, sizeof buf), (long long)known);
    }
    tb_status st = shape_check("reshape: the new", t->dtype, ndim, resolved, err);
    if (st != TB_OK) return st;
    *out = make_contiguous(t->backend, t->data, t->dtype, ndim, resolved);
    return TB_OK;
}

tb_status tb_tensor_transpose(const tb_tensor *t, int d0, int d1, tb_tensor *out, tb_error *err)
{
    if (!t || !out)
        return tb_fail(err, TB_ERR_INVALID, "transpose: %s is NULL", t ? "out" : "the tensor");
    if (d0 < 0 || d0 >= t->ndim || d1 < 0 || d1 >= t->ndim)
        return tb_fail(err, TB_ERR_SHAPE, "transpose: dimensions %d, %d of a %d-d tensor", d0,
                       d1, t->ndim);
    tb_tensor v = *t;
    v.shape[d0] = t->shape[d1];
    v.shape[d1] = t->shape[d0];
    v.stride[d0] = t->stride[d1];
    v.stride[d1] = t->stride[d0];
    *out = v;
    return TB_OK;
}

tb_status tb_tensor_narrow(const tb_tensor *t, int dim, int64_t start, int64_t len,
                           tb_tensor *out, tb_error *err)
{
    if (!t || !out)
        return tb_fail(err, TB_ERR_INVALID, "narrow: %s is NULL", t ? "out" : "the tensor");
    if (dim < 0 || dim >= t->ndim)
        return tb_fail(err, TB_ERR_SHAPE, "narrow: dimension %d of a %d-d tensor", dim, t->ndim);
    /* start + len is not formed: it may overflow */
    if (start < 0 || len < 0 || start > t->shape[dim] || len > t->shape[dim] - start)
        return tb_fail(err, TB_ERR_SHAPE, "narrow: %lld elements from %lld are outside [0, %lld)",
                       (long long)len, (long long)start, (long long)t->shape[dim]);
    tb_tensor v = *t;
    if (t->data)
        v.data = (char *)t->data + (size_t)(start * t->stride[dim]) * tb_dtype_size(t->dtype);
    v.shape[dim] = len;
    *out = v;
    return TB_OK;
}

tb_status tb_tensor_alloc(tb_backend *be, tb_dtype dtype, int ndim, const int64_t *shape,
                          tb_tensor *out, tb_error *err)
{
    if (!be || !out)
        return tb_fail(err, TB_ERR_INVALID, "tensor_alloc: %s is NULL", be ? "out" : "backend");
    tb_tensor t;
    tb_status st = tb_tensor_wrap(be, NULL, dtype, ndim, shape, &t, err);
    if (st != TB_OK) return st;
    size_t bytes = tb_tensor_bytes(&t);
    t.data = tb_backend_alloc(be, bytes ? bytes : 1);
    if (!t.data)
        return tb_fail(err, TB_ERR_NOMEM, "cannot allocate %zu bytes on %s", bytes,
                       tb_backend_name(be));
    if (bytes) {
        /* zero through the backend: upload zeros in chunks without a large host buffer */
        static const char zeros[4096];
        for (size_t off = 0; off < bytes; off += sizeof zeros) {
            size_t chunk = bytes - off < sizeof zeros ? bytes - off : sizeof zeros;
            tb_backend_upload(be, (char *)t.data + off, zeros, chunk);
        }
    }
    *out = t;
    return TB_OK;
}

void tb_tensor_free(tb_tensor *t)
{
    if (t && t->data) tb_backend_free(t->backend, t->data);
    if (t) t->data = NULL;
}

/* What a whole-tensor copy to or from host needs; op is "upload" or "download". */
static tb_status host_copy_check(const char *op, const tb_tensor *t, const void *host,
                                 tb_error *err)
{
    if (!t) return tb_fail(err, TB_ERR_INVALID, "%s: the tensor is NULL", op);
    if (!tb_tensor_is_contiguous(t))
        return tb_fail(err, TB_ERR_SHAPE, "%s: the tensor is not contiguous", op);
    if (tb_tensor_bytes(t) == 0) return TB_OK;
    char buf[96];
    if (!host) return tb_fail(err, TB_ERR_INVALID, "%s: host is NULL", op);
    if (!t->data || !t->backend)
        return tb_fail(err, TB_ERR_INVALID, "%s: the tensor %s has no %s", op,
                       tb_shape_str(t, buf, sizeof buf), t->data ? "backend" : "memory");
    return TB_OK;
}

tb_status tb_tensor_upload(tb_tensor *t, const void *host, tb_error *err)
{
    tb_status st = host_copy_check("upload", t, host, err);
    if (st != TB_OK || tb_tensor_bytes(t) == 0) return st;
    tb_backend_upload(t->backend, t->data, host, tb_tensor_bytes(t));
    return TB_OK;
}

tb_status tb_tensor_download(const tb_tensor *t, void *host, tb_error *err)
{
    tb_status st = host_copy_check("download", t, host, err);
    if (st != TB_OK || tb_tensor_bytes(t) == 0) return st;
    tb_backend_download(t->backend, host, t->data, tb_tensor_bytes(t));
    return TB_OK;
}
