/* tensor.h: n-dimensional float32 (or int32) arrays with shape and strides, and arenas.
 *
 * A tb_tensor is a plain descriptor (data pointer, dtype, shape, strides, backend). It does not
 * own its memory: parameters live in one flat buffer, step-scoped tensors in an arena, and views
 * share the memory of what they view. */
#ifndef TRAINBENCH_TENSOR_H
#define TRAINBENCH_TENSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "trainbench/backend.h"
#include "trainbench/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TB_MAX_DIMS 6

typedef enum tb_dtype {
    TB_F32 = 0,
    TB_I32 = 1,
} tb_dtype;

typedef struct tb_tensor {
    void *data;                  /* device memory of the backend below; NULL if unset */
    tb_backend *backend;         /* where data lives */
    tb_dtype dtype;
    int ndim;
    int64_t shape[TB_MAX_DIMS];
    int64_t stride[TB_MAX_DIMS]; /* in elements */
} tb_tensor;

size_t tb_dtype_size(tb_dtype dtype);

/* Shapes. Every shape entering the library (tb_tensor_wrap, tb_tensor_alloc, tb_tensor_reshape,
 * tape variables, parameters) must have ndim in [0, TB_MAX_DIMS], no negative dimension, and
 * a size that int64 can count in bytes: the product of its non-zero dimensions times the
 * element size at most 2^63 - 1. Otherwise the call fails with TB_ERR_INVALID naming the
 * shape (an unrepresentable size is a bad argument, not an allocation failure: TB_ERR_NOMEM
 * is for allocations that were tried). */

/* A contiguous (row-major) descriptor over existing memory into *out. be and data may be NULL
 * (a descriptor only: such a tensor cannot be allocated, uploaded or downloaded). */
tb_status tb_tensor_wrap(tb_backend *be, void *data, tb_dtype dtype, int ndim,
                         const int64_t *shape, tb_tensor *out, tb_error *err);
int64_t tb_tensor_numel(const tb_tensor *t);
size_t tb_tensor_bytes(const tb_tensor *t);
bool tb_tensor_is_contiguous(const tb_tensor *t);
bool tb_tensor_same_shape(const tb_tensor *a, const tb_tensor *b);
static inline float *tb_tensor_f32(const tb_tensor *t) { return (float *)t->data; }
static inline int32_t *tb_tensor_i32(const tb_tensor *t) { return (int32_t *)t->data; }

/* Writes "[2, 3, 4]" into buf. Returns buf. */
const char *tb_shape_str(const tb_tensor *t, char *buf, size_t size);

/* Views: share memory, change shape or strides. */
/* Reshape of a contiguous tensor; one dimension may be -1 (inferred). */
tb_status tb_tensor_reshape(const tb_tensor *t, int ndim, const int64_t *shape, tb_tensor *out,
                            tb_error *err);
/* Swaps two dimensions (strides only; the view is not contiguous). */
tb_status tb_tensor_transpose(const tb_tensor *t, int d0, int d1, tb_tensor *out, tb_error *err);
/* Elements [start, start + len) along dim (TB_ERR_SHAPE if not inside [0, shape[dim])). */
tb_status tb_tensor_narrow(const tb_tensor *t, int dim, int64_t start, int64_t len,
                           tb_tensor *out, tb_error *err);

/* Owning allocation on the backend, for tensors that outlive a step (free with
 * tb_tensor_free). Contents are zeroed. */
tb_status tb_tensor_alloc(tb_backend *be, tb_dtype dtype, int ndim, const int64_t *shape,
                          tb_tensor *out, tb_error *err);
void tb_tensor_free(tb_tensor *t);

/* Host <-> tensor copies of the whole (contiguous) tensor. A tensor with elements needs memory
 * and a backend, and host must not be NULL (TB_ERR_INVALID naming what is missing). */
tb_status tb_tensor_upload(tb_tensor *t, const void *host, tb_error *err);
tb_status tb_tensor_download(const tb_tensor *t, void *host, tb_error *err);

/* ---- arenas: bump allocation of step-scoped memory ---------------------------------------
 * An arena hands out 64-byte-aligned chunks from large blocks, taking as many blocks as memory
 * allows (a request larger than the block size gets a block of its own size), so a round is
 * limited by available memory only. tb_arena_reset releases every chunk at once; if a round
 * needed more than one block, the blocks are merged into one of the peak size, so from the
 * second round of the same work on no allocation happens. */
typedef struct tb_arena tb_arena;

/* be == NULL: host memory (malloc). The other arena calls accept a NULL arena (alloc returns
 * NULL, the counts are 0). */
tb_status tb_arena_create(tb_backend *be, size_t block_bytes, tb_arena **out, tb_error *err);
void tb_arena_destroy(tb_arena *arena);
/* NULL if out of memory (or if bytes rounded up to the alignment would exceed SIZE_MAX). */
void *tb_arena_alloc(tb_arena *arena, size_t bytes);
void tb_arena_reset(tb_arena *arena);
size_t tb_arena_used(const tb_arena *arena);
size_t tb_arena_peak(const tb_arena *arena);
/* How many blocks the arena has obtained from its allocator since creation. */
uint64_t tb_arena_block_allocations(const tb_arena *arena);

#ifdef __cplusplus
}
#endif
#endif
