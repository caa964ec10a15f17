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

#include "trainbench/workload.h"

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

/* Gets the corpus: from cache_dir/file when valid for source signature sig, else by build()
 * (then written there, atomically). cache_dir NULL: built in memory, nothing written.
 * prepare mode (report != NULL): a corrupt cache is rebuilt and force rebuilds anyway;
 * otherwise a corrupt cache fails with TB_ERR_FORMAT naming the file and the fix. */
tb_status tb_token_cache_obtain(const char *cache_dir, const char *file, uint32_t kind,
                                uint64_t sig, bool force, tb_prepare_report *report,
                                tb_token_cache_build_fn build, void *ctx, tb_token_cache *out,
                                tb_error *err);

/* A signature of source files: their sizes and modification times. Fails with TB_ERR_MISSING
 * (message: missing_hint) when a file is absent. */
tb_status tb_source_signature(const char *const *paths, int n, uint64_t *sig,
                              const char *missing_hint, tb_error *err);

#endif
