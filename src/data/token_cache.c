/* token_cache.c: reading, validating and writing the prepared-data cache of a text corpus. */
#include "data/token_cache.h"
#include "data/path_impl.h"
#include "trainbench/textfile.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char magic[8] = {'T', 'B', 'T', 'O', 'K', 'C', '0', '1'};

typedef struct header {
    char magic[8];
    uint32_t version, kind;
    uint64_t sig, n_vocab, vocab_bytes, n_tokens, n_segments, checksum;
} header;

void tb_token_cache_free(tb_token_cache *c)
{
    if (!c) return;
    free(c->vocab_blob);
    free(c->vocab);
    free(c->tokens);
    free(c->segments);
    memset(c, 0, sizeof *c);
}

tb_status tb_token_cache_index_vocab(tb_token_cache *c, tb_error *err)
{
    free(c->vocab);
    c->vocab = malloc((size_t)(c->n_vocab > 0 ? c->n_vocab : 1) * sizeof *c->vocab);
    if (!c->vocab) return tb_fail(err, TB_ERR_NOMEM, "out of memory for the vocabulary");
    int64_t k = 0;
    for (int64_t i = 0; i < c->vocab_bytes && k < c->n_vocab;) {
        c->vocab[k++] = c->vocab_blob + i;
        i += (int64_t)strlen(c->vocab_blob + i) + 1;
    }
    return k == c->n_vocab ? TB_OK
                           : tb_fail(err, TB_ERR_FORMAT, "vocabulary has %lld of %lld words",
                                     (long long)k, (long long)c->n_vocab);
}

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

static uint64_t checksum(const tb_token_cache *c)
{
    uint64_t h = 14695981039346656037ull;
    h = fnv(h, c->vocab_blob, (size_t)c->vocab_bytes);
    h = fnv(h, c->tokens, (size_t)c->n_tokens * sizeof(int32_t));
    return fnv(h, c->segments, (size_t)c->n_segments * sizeof(int64_t));
}

typedef enum { CACHE_OK, CACHE_MISSING, CACHE_STALE, CACHE_CORRUPT, CACHE_NOT_FILE } cache_state;

/* Reads and validates path; on CACHE_CORRUPT why says what is wrong, on CACHE_NOT_FILE what
 * the path is (a FIFO, a directory...: never read, and opened without blocking). */
static cache_state cache_read(const char *path, uint32_t kind, uint64_t sig, tb_token_cache *c,
                              char *why, size_t why_size)
{
    memset(c, 0, sizeof *c);
    /* O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer forever */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return CACHE_MISSING;
    struct stat sb;
    if (fstat(fd, &sb) == 0 && !S_ISREG(sb.st_mode)) {
        snprintf(why, why_size, "%s", tb_file_kind(sb.st_mode));
        close(fd);
        return CACHE_NOT_FILE;
    }
    int flags = fcntl(fd, F_GETFL);
    if (flags != -1) fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        close(fd);
        return CACHE_MISSING;
    }
    header h;
    cache_state s = CACHE_CORRUPT;
    if (fstat(fileno(f), &sb) != 0 || fread(&h, sizeof h, 1, f) != 1) {
        snprintf(why, why_size, "truncated header");
        goto done;
    }
    if (memcmp(h.magic, magic, sizeof magic) != 0) {
        snprintf(why, why_size, "bad magic number (not a trainbench cache)");
        goto done;
    }
    if (h.version != TB_TOKEN_CACHE_VERSION || h.kind != kind) {
        snprintf(why, why_size, "version %u kind %u, expected version %u kind %u", h.version,
                 h.kind, TB_TOKEN_CACHE_VERSION, kind);
        goto done;
    }
    uint64_t limit = (uint64_t)1 << 34;
    if (h.n_vocab == 0 || h.n_vocab > limit || h.vocab_bytes > limit || h.n_tokens > limit ||
        h.n_segments > limit) {
        snprintf(why, why_size, "absurd sizes in the header");
        goto done;
    }
    uint64_t want = sizeof h + h.vocab_bytes + 4 * h.n_tokens + 8 * h.n_segments;
    if ((uint64_t)sb.st_size != want) {
        snprintf(why, why_size, "size %lld bytes, the header implies %llu",
                 (long long)sb.st_size, (unsigned long long)want);
        goto done;
    }
    c->n_vocab = (int64_t)h.n_vocab;
    c->vocab_bytes = (int64_t)h.vocab_bytes;
    c->n_tokens = (int64_t)h.n_tokens;
    c->n_segments = (int64_t)h.n_segments;
    c->vocab_blob = malloc(h.vocab_bytes + 1);
    c->tokens = malloc(4 * h.n_tokens + 1);
    c->segments = malloc(8 * h.n_segments + 1);
    if (!c->vocab_blob || !c->tokens || !c->segments ||
        fread(c->vocab_blob, 1, h.vocab_bytes, f) != h.vocab_bytes ||
        fread(c->tokens, 4, h.n_tokens, f) != h.n_tokens ||
        fread(c->segments, 8, h.n_segments, f) != h.n_segments) {
        snprintf(why, why_size, "cannot read the payload");
        goto done;
    }
    if (checksum(c) != h.checksum) {
        snprintf(why, why_size, "checksum mismatch");
        goto done;
    }
    if (c->vocab_bytes == 0 || c->vocab_blob[c->vocab_bytes - 1] != '\0' ||
        tb_token_cache_index_vocab(c, NULL) != TB_OK) {
        snprintf(why, why_size, "malformed vocabulary");
        goto done;
    }
    for (int64_t i = 0; i < c->n_tokens; i++)
        if (c->tokens[i] < 0 || c->tokens[i] >= c->n_vocab) {
            snprintf(why, why_size, "token %lld is %d, outside the vocabulary of %lld",
                     (long long)i, c->tokens[i], (long long)c->n_vocab);
            goto done;
        }
    for (int64_t i = 0; i < c->n_segments; i++)
        if (c->segments[i] < (i ? c->segments[i - 1] : 0) || c->segments[i] > c->n_tokens) {
            snprintf(why, why_size, "segment %lld starts at %lld", (long long)i,
                     (long long)c->segments[i]);
            goto done;
        }
    s = h.sig == sig ? CACHE_OK : CACHE_STALE;
done:
    fclose(f);
    if (s != CACHE_OK) tb_token_cache_free(c);
    return s;
}

static tb_status mkdirs(const char *dir, tb_error *err)
{
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", dir);
    for (char *p = buf + 1;; p++) {
        if (*p == '/' || *p == '\0') {
            char saved = *p;
            *p = '\0';
            if (mkdir(buf, 0777) != 0 && errno != EEXIST)
                return tb_fail(err, TB_ERR_IO, "cannot create the cache directory %s: %s", buf,
                               strerror(errno));
            *p = saved;
            if (!saved) break;
        }
    }
    return TB_OK;
}

/* Removes the temporary files dir/<file>.tmp.<PID> (cache_write's) of processes that are gone,
 * e.g. a prepare killed while writing: only where no process has that PID on this machine
 * (kill(PID, 0) fails with ESRCH). Returns how many were removed. */
static int remove_stale_temps(const char *dir, const char *file)
{
    DIR *d = opendir(dir);
    if (!d) return 0;
    size_t len = strlen(file);
    int removed = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        const char *name = e->d_name;
        if (strncmp(name, file, len) != 0 || strncmp(name + len, ".tmp.", 5) != 0) continue;
        const char *digits = name + len + 5;
        char *end;
        errno = 0;
        long pid = strtol(digits, &end, 10);
        if (!isdigit((unsigned char)digits[0]) || *end || errno || pid <= 0 ||
            (long)(pid_t)pid != pid || (pid_t)pid == getpid())
            continue;
        if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue; /* running (or not ours) */
        char path[1400];
        snprintf(path, sizeof path, "%s/%s", dir, name);
        if (unlink(path) == 0) removed++;
    }
    closedir(d);
    return removed;
}

static tb_status cache_write(const char *dir, const char *path, uint32_t kind, uint64_t sig,
                             const tb_token_cache *c, tb_error *err)
{
    tb_status st = mkdirs(dir, err);
    if (st != TB_OK) return st;
    char tmp[1100];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "wb");
    if (!f) return tb_fail(err, TB_ERR_IO, "cannot write the cache %s: %s", tmp, strerror(errno));
    header h = {{0}, TB_TOKEN_CACHE_VERSION, kind, sig, (uint64_t)c->n_vocab,
                (uint64_t)c->vocab_bytes, (uint64_t)c->n_tokens, (uint64_t)c->n_segments,
                checksum(c)};
    memcpy(h.magic, magic, sizeof magic);
    bool ok = fwrite(&h, sizeof h, 1, f) == 1 &&
              fwrite(c->vocab_blob, 1, (size_t)c->vocab_bytes, f) == (size_t)c->vocab_bytes &&
              fwrite(c->tokens, 4, (size_t)c->n_tokens, f) == (size_t)c->n_tokens &&
              fwrite(c->segments, 8, (size_t)c->n_segments, f) == (size_t)c->n_segments;
    ok = (fclose(f) == 0) && ok;
    if (!ok || rename(tmp, path) != 0) {
        int e = errno;
        remove(tmp);
        return tb_fail(err, TB_ERR_IO, "cannot write the cache %s: %s", path, strerror(e));
    }
    return TB_OK;
}

bool tb_default_cache_dir(char *buf, size_t size)
{
    if (!buf) return false;
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    int n = -1;
    /* the XDG Base Directory spec: a relative path in XDG_CACHE_HOME is invalid, ignored */
    if (xdg && xdg[0] == '/') n = snprintf(buf, size, "%s/trainbench", xdg);
    else if (home && *home) n = snprintf(buf, size, "%s/.cache/trainbench", home);
    if (n < 0 || (size_t)n >= size) {
        if (size) buf[0] = '\0';
        return false;
    }
    return true;
}

/* Appends " text" to out, single-quoted for a POSIX shell unless it needs no quotes. */
static void append_arg(char *out, size_t size, const char *text)
{
    size_t n = strlen(out);
    static const char safe[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                               "0123456789/._+-=,:@";
    bool plain = *text != '\0';
    for (const char *q = text; *q; q++)
        if (!strchr(safe, *q)) plain = false;
    if (n + 1 < size) out[n++] = ' ';
    if (!plain && n + 1 < size) out[n++] = '\'';
    for (const char *q = text; *q && n + 5 < size; q++) {
        if (*q == '\'' && !plain) { /* close, escaped quote, reopen */
            memcpy(out + n, "'\\''", 4);
            n += 4;
        } else {
            out[n++] = *q;
        }
    }
    if (!plain && n + 1 < size) out[n++] = '\'';
    out[n] = '\0';
}

/* `trainbench prepare --force [--cache-dir DIR] [--data-dir DIR] WORKLOAD`: the command that
 * rebuilds w's cache, naming each directory that is not the default. */
static void prepare_command(const tb_token_cache_where *w, char *out, size_t size)
{
    char def[1024];
    snprintf(out, size, "trainbench prepare --force");
    if (!tb_default_cache_dir(def, sizeof def) || strcmp(def, w->cache_dir) != 0) {
        append_arg(out, size, "--cache-dir");
        append_arg(out, size, w->cache_dir);
    }
    if (w->data_dir) {
        append_arg(out, size, "--data-dir");
        append_arg(out, size, w->data_dir);
    }
    if (w->workload) append_arg(out, size, w->workload);
}

tb_status tb_token_cache_obtain(const tb_token_cache_where *w, uint64_t sig, bool force,
                                tb_prepare_report *report, tb_token_cache_build_fn build,
                                void *ctx, tb_token_cache *out, tb_error *err)
{
    const char *cache_dir = w->cache_dir, *file = w->file;
    uint32_t kind = w->kind;
    memset(out, 0, sizeof *out);
    char path[1024] = "", why[200] = "", reason[256] = "no cache directory (in memory)";
    /* prepare cleans up after interrupted writers even when the cache is valid */
    int stale = cache_dir && report ? remove_stale_temps(cache_dir, file) : 0;
    if (cache_dir) {
        snprintf(path, sizeof path, "%.*s/%s", tb_dir_len(cache_dir), cache_dir, file);
        /* something else than a file where the cache goes is refused, even with force: it is
         * never opened for reading (a FIFO would block) nor replaced */
        struct stat sb;
        memset(&sb, 0, sizeof sb);
        cache_state s = stat(path, &sb) == 0 && !S_ISREG(sb.st_mode) ? CACHE_NOT_FILE
                        : force ? CACHE_MISSING
                                : cache_read(path, kind, sig, out, why, sizeof why);
        if (s == CACHE_NOT_FILE) {
            if (!why[0]) snprintf(why, sizeof why, "%s", tb_file_kind(sb.st_mode));
            return tb_fail(err, TB_ERR_IO,
                           "the data cache %s is %s, not a regular file: remove it, or give "
                           "another --cache-dir",
                           path, why);
        }
        if (s == CACHE_OK) {
            snprintf(reason, sizeof reason, "valid");
        } else if (s == CACHE_CORRUPT && !report) {
            char cmd[2600];
            prepare_command(w, cmd, sizeof cmd);
            return tb_fail(err, TB_ERR_FORMAT,
                           "the data cache %s is corrupt (%s): run `%s` to rebuild it", path,
                           why, cmd);
        } else {
            snprintf(reason, sizeof reason, "%s%s", force ? "forced"
                                                    : s == CACHE_MISSING ? "missing"
                                                    : s == CACHE_STALE   ? "stale (the package's "
                                                                           "files changed)"
                                                                         : "corrupt: ",
                     s == CACHE_CORRUPT && !force ? why : "");
        }
        if (s == CACHE_OK) {
            if (report) {
                snprintf(report->path, sizeof report->path, "%s", path);
                report->rebuilt = false;
                snprintf(report->reason, sizeof report->reason, "%s", reason);
                report->stale_temps_removed = stale;
            }
            goto fill;
        }
    }
    tb_status st = build(ctx, out, err);
    if (st == TB_OK) st = tb_token_cache_index_vocab(out, err);
    if (st == TB_OK && cache_dir && !report) remove_stale_temps(cache_dir, file);
    if (st == TB_OK && cache_dir) st = cache_write(cache_dir, path, kind, sig, out, err);
    if (st != TB_OK) {
        tb_token_cache_free(out);
        return st;
    }
    if (report) {
        snprintf(report->path, sizeof report->path, "%s", path);
        report->rebuilt = true;
        snprintf(report->reason, sizeof report->reason, "%s", reason);
        report->stale_temps_removed = stale;
    }
fill:
    if (report) {
        struct stat sb;
        report->tokens = out->n_tokens;
        report->vocabulary = out->n_vocab;
        report->bytes = cache_dir && stat(path, &sb) == 0 ? (int64_t)sb.st_size : 0;
    }
    return TB_OK;
}

tb_status tb_source_signature(const char *const *paths, int n, uint64_t *sig,
                              const char *missing_hint, tb_error *err)
{
    uint64_t h = 14695981039346656037ull;
    for (int i = 0; i < n; i++) {
        struct stat sb;
        if (stat(paths[i], &sb) != 0)
            return tb_fail(err, TB_ERR_MISSING, "%s (no %s)", missing_hint, paths[i]);
        int64_t v[2] = {(int64_t)sb.st_size, (int64_t)sb.st_mtime};
        h = fnv(h, v, sizeof v);
    }
    *sig = h;
    return TB_OK;
}
