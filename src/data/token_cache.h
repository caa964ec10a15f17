/* token_cache.h: the prepared-data cache of a text corpus (internal): a vocabulary, the token
 * stream and segment starts (e.g. one per WordNet gloss), in one validated file.
 *
 * File layout (host byte order): magic "TBTOKC01", u32 version, u32 kind, u64 source
 * signature, u64 vocabulary size, u64 vocabulary bytes, u64 tokens, u64 segments, u64
 * FNV-1a checksum of the payload; then the payload: the vocabulary (NUL-terminated strings),
 * int32 tokens, int64 segment starts. A reader checks every field, the file size and the
 * checksum. */
#ifndef TRAINBENCH_TOKEN_CACHE_H
#define TRAINBENCH_TOKEN_CACHE_H

#include <stdbool.h>
#include <stdint.h>

#include "trainbench/data.h"

#define TB_TOKEN_CACHE_VERSION 1

typedef struct tb_token_cache {
    int64_t n_vocab;
    char *vocab_blob;    /* n_vocab NUL-terminated strings */
    int64_t vocab_bytes;
    char **vocab;        /* n_vocab pointers into vocab_blob */
    int32_t *tokens;
    int64_t n_tokens;
    int64_t *segments;   /* start of each segment, increasing */
    int64_t n_segments;
} tb_token_cache;

void tb_token_cache_free(tb_token_cache *c);
/* Sets up c->vocab from c->vocab_blob (after a build fills blob, bytes and n_vocab). */
tb_status tb_token_cache_index_vocab(tb_token_cache *c, tb_error *err);

typedef tb_status (*tb_token_cache_build_fn)(void *ctx, tb_token_cache *out, tb_error *err);

/* Where a cache lives and what it is for: cache_dir/file, of the given kind; workload (an id
 * whose data it holds) and data_dir (NULL: the default) make the `trainbench prepare` command
 * that rebuilds it, named when a corrupt cache is refused. */
typedef struct tb_token_cache_where {
    const char *cache_dir, *file;
    uint32_t kind;
    const char *workload, *data_dir;
} tb_token_cache_where;

/* Gets the corpus: from w->cache_dir/w->file when valid for source signature sig, else by
 * build() (then written there, atomically). cache_dir NULL: built in memory, nothing written.
 * A path that is not a regular file (a FIFO, a directory) fails with TB_ERR_IO in every mode,
 * without being opened for reading. Before writing, and always in prepare mode, removes the
 * temporary files (<file>.tmp.<PID>) of processes that are gone.
 * prepare mode (report != NULL): a corrupt cache is rebuilt and force rebuilds anyway;
 * otherwise a corrupt cache fails with TB_ERR_FORMAT naming the file and the command that
 * rebuilds it (with --cache-dir and --data-dir where they are not the defaults). */
tb_status tb_token_cache_obtain(const tb_token_cache_where *w, uint64_t sig, bool force,
                                tb_prepare_report *report, tb_token_cache_build_fn build,
                                void *ctx, tb_token_cache *out, tb_error *err);

/* A signature of source files: their sizes and modification times. Fails with TB_ERR_MISSING
 * (message: missing_hint) when a file is absent. */
tb_status tb_source_signature(const char *const *paths, int n, uint64_t *sig,
                              const char *missing_hint, tb_error *err);

#endif
