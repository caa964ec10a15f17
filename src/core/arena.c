/* arena.c: bump allocation of step-scoped memory from host or backend blocks. */
#include "trainbench/tensor.h"

#include <stdint.h>
#include <stdlib.h>

#define ARENA_ALIGN 64

typedef struct arena_block {
    char *base;
    size_t size;
    size_t used;
} arena_block;

struct tb_arena {
    tb_backend *be; /* NULL: host */
    size_t block_bytes;
    arena_block *blocks; /* as many as memory allows: a round is not limited by a count */
    int n_blocks, cap_blocks;
    size_t used;    /* bytes handed out this round, including alignment */
    size_t peak;
    uint64_t block_allocations;
};

static void *raw_alloc(tb_arena *a, size_t bytes)
{
    a->block_allocations++;
    if (a->be) return tb_backend_alloc(a->be, bytes);
    if (bytes > SIZE_MAX - (ARENA_ALIGN - 1)) return NULL;
    return aligned_alloc(ARENA_ALIGN, (bytes + ARENA_ALIGN - 1) / ARENA_ALIGN * ARENA_ALIGN);
}

static void raw_free(tb_arena *a, void *p)
{
    if (a->be)
        tb_backend_free(a->be, p);
    else
        free(p);
}

tb_status tb_arena_create(tb_backend *be, size_t block_bytes, tb_arena **out, tb_error *err)
{
    if (!out) return tb_fail(err, TB_ERR_INVALID, "arena_create: out is NULL");
    tb_arena *a = calloc(1, sizeof *a);
    if (!a) return tb_fail(err, TB_ERR_NOMEM, "cannot allocate an arena");
    a->be = be;
    a->block_bytes = block_bytes < (1u << 16) ? (1u << 16) : block_bytes;
    *out = a;
    return TB_OK;
}

void tb_arena_destroy(tb_arena *a)
{
    if (!a) return;
    for (int i = 0; i < a->n_blocks; i++) raw_free(a, a->blocks[i].base);
    free(a->blocks);
    free(a);
}

void *tb_arena_alloc(tb_arena *a, size_t bytes)
{
    if (!a || bytes > SIZE_MAX - (ARENA_ALIGN - 1)) return NULL; /* rounding would wrap */
    size_t need = (bytes + ARENA_ALIGN - 1) / ARENA_ALIGN * ARENA_ALIGN;
    if (need == 0) need = ARENA_ALIGN;
    for (int i = 0; i < a->n_blocks; i++) {
        arena_block *b = &a->blocks[i];
        if (b->size - b->used >= need) {
            void *p = b->base + b->used;
            b->used += need;
            a->used += need;
            if (a->used > a->peak) a->peak = a->used;
            return p;
        }
    }
    if (a->n_blocks == a->cap_blocks) {
        if (a->cap_blocks > INT32_MAX / 2) return NULL;
        int cap = a->cap_blocks ? 2 * a->cap_blocks : 8;
        arena_block *blocks = realloc(a->blocks, (size_t)cap * sizeof *blocks);
        if (!blocks) return NULL;
        a->blocks = blocks;
        a->cap_blocks = cap;
    }
    /* a request larger than the block size gets a block of its own size */
    size_t size = need > a->block_bytes ? need : a->block_bytes;
    void *base = raw_alloc(a, size);
    if (!base) return NULL;
    arena_block *b = &a->blocks[a->n_blocks++];
    b->base = base;
    b->size = size;
    b->used = need;
    a->used += need;
    if (a->used > a->peak) a->peak = a->used;
    return base;
}

void tb_arena_reset(tb_arena *a)
{
    if (!a) return;
    if (a->n_blocks > 1) {
        /* merge: one block big enough for the peak round, so the next round allocates nothing */
        size_t total = 0;
        for (int i = 0; i < a->n_blocks; i++) total += a->blocks[i].size;
        size_t want = a->peak > total ? a->peak : total;
        void *base = raw_alloc(a, want);
        if (base) {
            for (int i = 0; i < a->n_blocks; i++) raw_free(a, a->blocks[i].base);
            a->blocks[0].base = base;
            a->blocks[0].size = want;
            a->n_blocks = 1;
            if (want > a->block_bytes) a->block_bytes = want;
        }
    }
    for (int i = 0; i < a->n_blocks; i++) a->blocks[i].used = 0;
    a->used = 0;
}

size_t tb_arena_used(const tb_arena *a) { return a ? a->used : 0; }
size_t tb_arena_peak(const tb_arena *a) { return a ? a->peak : 0; }
uint64_t tb_arena_block_allocations(const tb_arena *a) { return a ? a->block_allocations : 0; }
