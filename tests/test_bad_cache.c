/* test_bad_cache.c: the prepared-data cache of a text corpus (WordNet's, built here from the
 * first lines of the installed files) given the classes of bad input (bad_input.h): missing
 * (rebuilt), empty, a directory, a FIFO, truncated, corrupt (checksum), another corpus's kind,
 * a token outside the vocabulary, absurd sizes, a header of the other byte order. Skipped,
 * saying so, when WordNet is not installed. */
#include "bad_input.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "data/source.h"

#define WN_DIR "/usr/share/wordnet"

#define CACHE_FILE "wordnet-glosses.tbcache"
#define CACHE_HEADER 64 /* magic, version, kind, signature, five sizes, checksum */

static char cache_valid[1200]; /* a valid cache, built by main */

static tb_status load_cache(const char *dir, tb_error *err)
{
    tb_example_source src; /* the data files are dir/wordnet */
    char data[1200];
    snprintf(data, sizeof data, "%s/wordnet", dir);
    tb_status st = tb_wordnet_source_load(data, dir, "wordnet_sparse", 8, &src, err);
    tb_example_source_free(&src);
    return st;
}

static void restore_cache(const char *dir, const char *file, const char *valid_dir)
{
    (void)valid_dir;
    char to[1200];
    snprintf(to, sizeof to, "%s/%s", dir, file);
    bad_copy(cache_valid, to);
}

static uint64_t get64(const unsigned char *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

static void put64(unsigned char *p, uint64_t v)
{
    memcpy(p, &v, 8);
}

/* The header's FNV-1a checksum of the payload, recomputed (token_cache.h's format). */
static void fix_checksum(unsigned char *b, size_t n)
{
    uint64_t h = 14695981039346656037ull;
    for (size_t i = CACHE_HEADER; i < n; i++)
        h = (h ^ b[i]) * 1099511628211ull;
    put64(b + 56, h);
}

/* The valid cache with one change: what (a header field at offset at, or a token) */
static void cache_edit(const char *path, int at, uint64_t value, bool token, bool checksum)
{
    size_t n = 0;
    unsigned char *b = bad_slurp(cache_valid, &n);
    if (!b || n < CACHE_HEADER) abort();
    if (token) { /* the first token: after the vocabulary */
        int32_t t = (int32_t)value;
        memcpy(b + CACHE_HEADER + get64(b + 32), &t, 4);
    } else if (at == 8) {
        uint32_t v = (uint32_t)value;
        memcpy(b + 12, &v, 4); /* the kind */
    } else {
        put64(b + at, value);
    }
    if (checksum) fix_checksum(b, n);
    bad_write(path, b, n);
    free(b);
}

static void cache_kjv_kind(const char *path, const char *v)
{
    (void)v;
    cache_edit(path, 8, 1, false, false);
}
static void cache_token_out(const char *path, const char *v)
{
    (void)v;
    cache_edit(path, 0, 99999, true, true);
}
static void cache_huge(const char *path, const char *v)
{
    (void)v;
    cache_edit(path, 40, (uint64_t)1 << 40, false, false);
}

/* the header as another byte order would write it */
static void cache_swapped(const char *path, const char *valid)
{
    (void)valid;
    size_t n = 0;
    unsigned char *b = bad_slurp(cache_valid, &n);
    if (!b || n < CACHE_HEADER) abort();
    for (int f = 8; f < 16; f += 4)
        for (int i = 0; i < 2; i++) {
            unsigned char t = b[f + i];
            b[f + i] = b[f + 3 - i];
            b[f + 3 - i] = t;
        }
    bad_write(path, b, n);
    free(b);
}

static void cache_flip(const char *path, const char *valid)
{
    (void)valid;
    bad_flipped(path, cache_valid);
}
static void cache_cut(const char *path, const char *valid)
{
    (void)valid;
    bad_truncated(path, cache_valid);
}

static const bad_case cache_cases[] = {
    {"missing (rebuilt)", NULL, bad_missing, TB_OK, NULL},
    {"empty", NULL, bad_empty, TB_ERR_FORMAT, "is corrupt (truncated header)"},
    {"directory", NULL, bad_directory, TB_ERR_IO, "is a directory, not a regular file"},
    {"FIFO", NULL, bad_fifo, TB_ERR_IO, "is a FIFO, not a regular file"},
    {"truncated", NULL, cache_cut, TB_ERR_FORMAT, "the header implies"},
    {"corrupt", NULL, cache_flip, TB_ERR_FORMAT, "checksum mismatch"},
    {"wrong type", NULL, cache_kjv_kind, TB_ERR_FORMAT, "kind 1, expected version 1 kind 2"},
    {"out of range", NULL, cache_token_out, TB_ERR_FORMAT, "token 0 is 99999, outside"},
    {"huge", NULL, cache_huge, TB_ERR_FORMAT, "absurd sizes in the header"},
    {"invalid encoding", NULL, cache_swapped, TB_ERR_FORMAT, "expected version 1 kind 2"},
};

static const char *const wn_files[4] = {"data.noun", "data.verb", "data.adj", "data.adv"};

/* dir/wordnet: the first lines of WordNet's four files; cache_valid: their cache in dir. */
static bool make_cache(const char *dir)
{
    char wn[1200];
    snprintf(wn, sizeof wn, "%s/wordnet", dir);
    if (mkdir(wn, 0700) != 0) return false;
    for (int i = 0; i < 4; i++)
        bad_restore_head(wn, wn_files[i], WN_DIR);
    tb_prepare_report rep;
    tb_error err = {0};
    snprintf(cache_valid, sizeof cache_valid, "%s/valid.tbcache", dir);
    char built[1300];
    snprintf(built, sizeof built, "%s/%s", dir, CACHE_FILE);
    if (!CHECK_OK(tb_wordnet_prepare(wn, dir, false, &rep, &err), &err)) return false;
    return rename(built, cache_valid) == 0;
}

int main(void)
{
    if (!bad_have(WN_DIR "/data.adv")) {
        printf("test_bad_cache: skipped: %s is not installed\n", WN_DIR "/data.adv");
        return TB_TEST_SKIP;
    }
    char dir[] = "/tmp/tb_test_bad_cache_XXXXXX";
    if (!mkdtemp(dir)) return 1;
    if (make_cache(dir)) {
        const bad_reader r = {"data cache", {CACHE_FILE, NULL},
                              CACHE_FILE,   WN_DIR,
                              load_cache,   restore_cache,
                              cache_cases,  (int)(sizeof cache_cases / sizeof cache_cases[0])};
        bad_run_reader(&r, dir); /* the cache beside the data it is of, dir/wordnet */
    }
    char path[1300];
    for (int i = 0; i < 4; i++) {
        snprintf(path, sizeof path, "%s/wordnet/%s", dir, wn_files[i]);
        bad_remove(path);
    }
    snprintf(path, sizeof path, "%s/wordnet", dir);
    bad_remove(path);
    bad_remove(cache_valid);
    rmdir(dir);
    return tb_test_finish("test_bad_cache");
}
