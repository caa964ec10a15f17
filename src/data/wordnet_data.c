/* wordnet_data.c: WordNet's glosses (Debian wordnet-base, /usr/share/wordnet/data.{noun,verb,
 * adj,adv}) as next-word prediction examples.
 *
 * A data line is "offset lex_filenum ss_type ... | gloss"; license lines start with two
 * spaces. Glosses are lower-cased and split into words of [a-z0-9']; each gloss ends with
 * "</s>". The vocabulary is "<unk>", "</s>", then every word seen at least WN_MIN_COUNT times,
 * most frequent first, at most WN_MAX_VOCAB in all; rarer words become "<unk>". An example is
 * one position of the token stream: the input is the `context` previous tokens of the same
 * gloss ("</s>" before its start), the target the word there. Every 50th gloss is the official
 * test set (fixed). With TB_WORDNET_VOCAB_ALL the vocabulary is every word seen (about 54k;
 * nothing becomes "<unk>"), in a cache file of its own. */
#include "data/path_impl.h"
#include "data/source.h"
#include "data/token_cache.h"
#include "data/wordnet_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "trainbench/textfile.h"

#define WN_CACHE_FILE "wordnet-glosses.tbcache"
#define WN_CACHE_FILE_ALL "wordnet-glosses-all.tbcache"
#define WN_KIND 2
#define WN_MIN_COUNT 3
#define WN_MAX_VOCAB 30000
/* A data file larger than this is not WordNet's (data.noun, the largest, is 15 MB) */
#define WN_MAX_FILE_BYTES ((int64_t)256 << 20)

static const char *const wn_files[4] = {"data.noun", "data.verb", "data.adj", "data.adv"};

/* ---- a string -> count hash table ------------------------------------------------------- */

static uint64_t hash_str(const char *s)
{
    uint64_t h = 14695981039346656037ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

word_entry *tb_word_table_find(word_table *t, const char *w, bool insert)
{
    if (insert && 2 * (t->n + 1) > t->cap) {
        int64_t cap = t->cap ? 2 * t->cap : 1 << 16;
        word_entry *e = calloc((size_t)cap, sizeof *e);
        if (!e) return NULL;
        for (int64_t i = 0; i < t->cap; i++)
            if (t->e[i].word) {
                int64_t j = (int64_t)(hash_str(t->e[i].word) & (uint64_t)(cap - 1));
                while (e[j].word) j = (j + 1) & (cap - 1);
                e[j] = t->e[i];
            }
        free(t->e);
        t->e = e;
        t->cap = cap;
    }
    if (!t->cap) return NULL;
    int64_t j = (int64_t)(hash_str(w) & (uint64_t)(t->cap - 1));
    while (t->e[j].word && strcmp(t->e[j].word, w) != 0) j = (j + 1) & (t->cap - 1);
    if (t->e[j].word) return &t->e[j];
    if (!insert) return NULL;
    t->e[j].word = strdup(w);
    if (!t->e[j].word) return NULL;
    t->e[j].id = -1;
    t->n++;
    return &t->e[j];
}

void tb_word_table_free(word_table *t)
{
    for (int64_t i = 0; i < t->cap; i++) free(t->e[i].word);
    free(t->e);
}

int tb_word_by_count(const void *a, const void *b)
{
    const word_entry *x = *(const word_entry *const *)a, *y = *(const word_entry *const *)b;
    if (x->count != y->count) return x->count > y->count ? -1 : 1;
    return strcmp(x->word, y->word);
}

/* Calls fn(word) for each word of every gloss and fn(NULL) at each gloss end. */
typedef tb_status (*word_fn)(void *user, const char *word, tb_error *err);

/* Opens a data file for reading: a regular file of at most WN_MAX_FILE_BYTES (a FIFO is
 * opened without blocking and refused, never read). */
static tb_status open_data(const char *path, FILE **out, tb_error *err)
{
    *out = NULL;
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT || errno == ENOTDIR)
            return tb_fail(err, TB_ERR_MISSING, "%s (cannot open %s)", WN_MISSING, path);
        return tb_fail(err, TB_ERR_IO, "cannot open %s: %s", path, strerror(errno));
    }
    struct stat sb;
    tb_status st = TB_OK;
    if (fstat(fd, &sb) != 0)
        st = tb_fail(err, TB_ERR_IO, "cannot read %s: %s", path, strerror(errno));
    else if (!S_ISREG(sb.st_mode))
        st = tb_fail(err, TB_ERR_IO, "%s is %s, not a regular file", path,
                     tb_file_kind(sb.st_mode));
    else if ((int64_t)sb.st_size > WN_MAX_FILE_BYTES)
        st = tb_fail(err, TB_ERR_FORMAT, "%s has %lld bytes, more than the %lld a WordNet data "
                     "file may have", path, (long long)sb.st_size, (long long)WN_MAX_FILE_BYTES);
    int flags = fcntl(fd, F_GETFL);
    if (st == TB_OK && flags != -1) fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
    if (st == TB_OK && !(*out = fdopen(fd, "r")))
        st = tb_fail(err, TB_ERR_NOMEM, "cannot read %s: out of memory", path);
    if (st != TB_OK) close(fd);
    return st;
}

/* A line read whole as text: no NUL byte (it would cut the gloss short), valid UTF-8, ended
 * by a newline (a last line without one is a file cut short). */
static tb_status check_line(const char *path, int64_t lineno, const char *line, size_t n,
                            tb_error *err)
{
    const char *nul = memchr(line, '\0', n);
    if (nul)
        return tb_fail(err, TB_ERR_FORMAT, "%s line %lld holds a NUL byte (at byte %lld): "
                       "WordNet's data files are text", path, (long long)lineno,
                       (long long)(nul - line + 1));
    long bad = tb_utf8_invalid_at(line, n);
    if (bad >= 0)
        return tb_fail(err, TB_ERR_FORMAT, "%s line %lld is not valid UTF-8 (at byte %ld)",
                       path, (long long)lineno, bad + 1);
    if (line[n - 1] != '\n')
        return tb_fail(err, TB_ERR_FORMAT, "%s line %lld has no newline at the end: the file "
                       "is truncated", path, (long long)lineno);
    return TB_OK;
}

/* Calls fn for the words of one gloss (the text after " | "), then fn(NULL). */
static tb_status scan_gloss(const char *path, int64_t lineno, const char *gloss, word_fn fn,
                            void *user, tb_error *err)
{
    char word[WN_MAX_WORD + 1];
    size_t wl = 0;
    for (const char *p = gloss;; p++) {
        char c = *p;
        if (c >= 'A' && c <= 'Z') c = (char)(c - 'A' + 'a');
        bool in = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '\'';
        if (in && wl == WN_MAX_WORD)
            return tb_fail(err, TB_ERR_FORMAT, "%s line %lld: a word of more than %d "
                           "characters in the gloss", path, (long long)lineno, WN_MAX_WORD);
        if (in) {
            word[wl++] = c;
        } else if (wl) {
            word[wl] = '\0';
            wl = 0;
            tb_status st = fn(user, word, err);
            if (st != TB_OK) return st;
        }
        if (!*p) break;
    }
    return fn(user, NULL, err);
}

tb_status tb_wordnet_scan_lines(const char *dir, tb_wordnet_line_fn fn, void *user,
                                tb_error *err)
{
    char *line = NULL;
    size_t cap = 0;
    tb_status st = TB_OK;
    for (int f = 0; f < 4 && st == TB_OK; f++) {
        char path[1024];
        snprintf(path, sizeof path, "%.*s/%s", tb_dir_len(dir), dir, wn_files[f]);
        FILE *fp;
        if ((st = open_data(path, &fp, err)) != TB_OK) break;
        int64_t lineno = 0, glosses = 0;
        ssize_t n;
        while (st == TB_OK && (n = getline(&line, &cap, fp)) > 0) {
            lineno++;
            if ((st = check_line(path, lineno, line, (size_t)n, err)) != TB_OK) break;
            if (line[0] == ' ') continue; /* license header */
            st = fn(user, path, lineno, line, err);
            glosses++;
        }
        if (st == TB_OK && ferror(fp))
            st = tb_fail(err, TB_ERR_IO, "cannot read %s: %s", path, strerror(errno));
        fclose(fp);
        if (st == TB_OK && glosses == 0)
            st = tb_fail(err, TB_ERR_FORMAT, "%s has no glosses", path);
    }
    free(line);
    return st;
}

typedef struct gloss_scan {
    word_fn fn;
    void *user;
} gloss_scan;

/* A data line's gloss: the text after " | " */
static tb_status gloss_line(void *user, const char *path, int64_t lineno, const char *line,
                            tb_error *err)
{
    const gloss_scan *g = user;
    const char *bar = strstr(line, " | ");
    if (!bar)
        return tb_fail(err, TB_ERR_FORMAT, "%s line %lld: no gloss (\" | \") in a data line",
                       path, (long long)lineno);
    return scan_gloss(path, lineno, bar + 3, g->fn, g->user, err);
}

static tb_status scan(const char *dir, word_fn fn, void *user, tb_error *err)
{
    gloss_scan g = {fn, user};
    return tb_wordnet_scan_lines(dir, gloss_line, &g, err);
}

/* What wn_build reads: the directory and the vocabulary's bounds. */
typedef struct build_params {
    const char *dir;
    int64_t min_count, max_vocab;
} build_params;

typedef struct build_state {
    word_table t;
    tb_token_cache *out;
    int64_t tok_cap, seg_cap;
    int32_t eos;
} build_state;

static tb_status count_word(void *user, const char *w, tb_error *err)
{
    build_state *b = user;
    if (!w) return TB_OK;
    word_entry *e = tb_word_table_find(&b->t, w, true);
    if (!e) return tb_fail(err, TB_ERR_NOMEM, "out of memory counting WordNet's words");
    e->count++;
    return TB_OK;
}

static tb_status emit_word(void *user, const char *w, tb_error *err)
{
    build_state *b = user;
    tb_token_cache *c = b->out;
    if (c->n_tokens == b->tok_cap) {
        int32_t *t = realloc(c->tokens, (size_t)(b->tok_cap *= 2) * sizeof *t);
        if (!t) return tb_fail(err, TB_ERR_NOMEM, "out of memory for WordNet's tokens");
        c->tokens = t;
    }
    if (!w) {
        c->tokens[c->n_tokens++] = b->eos;
        if (c->n_segments == b->seg_cap) { /* doubling: a realloc per gloss is quadratic */
            int64_t *s = realloc(c->segments, (size_t)(b->seg_cap *= 2) * sizeof *s);
            if (!s) return tb_fail(err, TB_ERR_NOMEM, "out of memory for WordNet's glosses");
            c->segments = s;
        }
        c->segments[c->n_segments++] = c->n_tokens; /* the start of the next gloss */
        return TB_OK;
    }
    word_entry *e = tb_word_table_find(&b->t, w, false);
    c->tokens[c->n_tokens++] = e && e->id >= 0 ? e->id : 0;
    return TB_OK;
}

static tb_status wn_build(void *p, tb_token_cache *out, tb_error *err)
{
    const build_params *bp = p;
    const char *dir = bp->dir;
    build_state b = {.out = out, .eos = 1};
    tb_status st = scan(dir, count_word, &b, err);
    word_entry **sorted = NULL;
    if (st == TB_OK) {
        sorted = malloc((size_t)(b.t.n > 0 ? b.t.n : 1) * sizeof *sorted);
        if (!sorted) st = tb_fail(err, TB_ERR_NOMEM, "out of memory sorting WordNet's words");
    }
    if (st == TB_OK) {
        int64_t k = 0;
        for (int64_t i = 0; i < b.t.cap; i++)
            if (b.t.e[i].word) sorted[k++] = &b.t.e[i];
        qsort(sorted, (size_t)k, sizeof *sorted, tb_word_by_count);
        int64_t n_vocab = 2, bytes = 11; /* "<unk>\0</s>\0" */
        for (int64_t i = 0; i < k && n_vocab < bp->max_vocab && sorted[i]->count >= bp->min_count;
             i++) {
            sorted[i]->id = (int32_t)n_vocab++;
            bytes += (int64_t)strlen(sorted[i]->word) + 1;
        }
        out->vocab_blob = malloc((size_t)bytes);
        if (!out->vocab_blob) st = tb_fail(err, TB_ERR_NOMEM, "out of memory for the vocabulary");
        if (st == TB_OK) {
            memcpy(out->vocab_blob, "<unk>\0</s>", 11);
            int64_t off = 11;
            for (int64_t i = 0; i < n_vocab - 2; i++) {
                size_t l = strlen(sorted[i]->word) + 1;
                memcpy(out->vocab_blob + off, sorted[i]->word, l);
                off += (int64_t)l;
            }
            out->n_vocab = n_vocab;
            out->vocab_bytes = bytes;
        }
    }
    free(sorted);
    if (st == TB_OK) {
        b.tok_cap = 1 << 20;
        out->tokens = malloc((size_t)b.tok_cap * sizeof(int32_t));
        b.seg_cap = 1 << 12;
        out->segments = malloc((size_t)b.seg_cap * sizeof(int64_t));
        if (!out->tokens || !out->segments)
            st = tb_fail(err, TB_ERR_NOMEM, "out of memory for WordNet's tokens");
        else
            out->segments[out->n_segments++] = 0;
    }
    if (st == TB_OK) st = scan(dir, emit_word, &b, err);
    if (st == TB_OK) out->n_segments--; /* the last start is the end */
    tb_word_table_free(&b.t);
    return st;
}

tb_status tb_wordnet_signature(const char *data_dir, const char **dir, uint64_t *sig,
                               tb_error *err)
{
    *dir = data_dir ? data_dir : WN_DEFAULT_DIR;
    char paths[4][1024];
    const char *pp[4];
    for (int i = 0; i < 4; i++) {
        snprintf(paths[i], sizeof paths[i], "%.*s/%s", tb_dir_len(*dir), *dir, wn_files[i]);
        pp[i] = paths[i];
    }
    char hint[512] = WN_MISSING;
    if (data_dir) /* a directory the user chose */
        snprintf(hint, sizeof hint, "WordNet is not in the data directory %s (the Debian "
                 "package wordnet-base installs its data.* files in " WN_DEFAULT_DIR ")", *dir);
    return tb_source_signature(pp, 4, sig, hint, err);
}

tb_status tb_wordnet_obtain(const char *data_dir, const char *cache_dir, const char *id,
                            tb_wordnet_vocab vocab, bool force, tb_prepare_report *rep,
                            tb_token_cache *out, tb_error *err)
{
    const char *dir;
    uint64_t sig;
    tb_status st = tb_wordnet_signature(data_dir, &dir, &sig, err);
    if (st != TB_OK) return st;
    bool all = vocab == TB_WORDNET_VOCAB_ALL;
    build_params bp = {.dir = dir, .min_count = all ? 1 : WN_MIN_COUNT,
                       .max_vocab = all ? INT32_MAX : WN_MAX_VOCAB};
    tb_token_cache_where w = {.cache_dir = cache_dir, .file = all ? WN_CACHE_FILE_ALL
                                                                   : WN_CACHE_FILE,
                              .kind = WN_KIND, .workload = id, .data_dir = data_dir};
    return tb_token_cache_obtain(&w, sig, force, rep, wn_build, &bp, out, err);
}

tb_status tb_wordnet_prepare(const char *data_dir, const char *cache_dir, bool force,
                             tb_prepare_report *report, tb_error *err)
{
    tb_token_cache c;
    tb_status st = tb_wordnet_obtain(data_dir, cache_dir, NULL, TB_WORDNET_VOCAB_DEFAULT, force,
                                     report, &c, err);
    if (st == TB_OK) tb_token_cache_free(&c);
    return st;
}

tb_status tb_wordnet_prepare_all(const char *data_dir, const char *cache_dir, bool force,
                                 tb_prepare_report *report, tb_error *err)
{
    tb_token_cache c;
    tb_status st = tb_wordnet_obtain(data_dir, cache_dir, NULL, TB_WORDNET_VOCAB_ALL, force,
                                     report, &c, err);
    if (st == TB_OK) tb_token_cache_free(&c);
    return st;
}

typedef struct wn_data {
    tb_token_cache c;
    int64_t *pos;        /* token position of each example id */
    int64_t *gloss_start; /* of each token position */
    int context;
} wn_data;

static void wn_free(void *p)
{
    wn_data *d = p;
    if (!d) return;
    tb_token_cache_free(&d->c);
    free(d->pos);
    free(d->gloss_start);
    free(d);
}

static void wn_read(const void *p, int64_t id, void *x, void *y)
{
    const wn_data *d = p;
    int64_t at = d->pos[id], start = d->gloss_start[at];
    int32_t *xi = x;
    for (int k = 0; k < d->context; k++) {
        int64_t q = at - d->context + k;
        xi[k] = q >= start ? d->c.tokens[q] : 1; /* "</s>" before the gloss */
    }
    *(int32_t *)y = d->c.tokens[at];
}

tb_status tb_wordnet_source_load(const char *data_dir, const char *cache_dir,
                                 const char *workload, int context, tb_example_source *out,
                                 tb_error *err)
{
    return tb_wordnet_source_load_vocab(data_dir, cache_dir, workload, context,
                                        TB_WORDNET_VOCAB_DEFAULT, out, err);
}

tb_status tb_wordnet_source_load_vocab(const char *data_dir, const char *cache_dir,
                                       const char *workload, int context,
                                       tb_wordnet_vocab vocab, tb_example_source *out,
                                       tb_error *err)
{
    memset(out, 0, sizeof *out);
    wn_data *d = calloc(1, sizeof *d);
    if (!d) return tb_fail(err, TB_ERR_NOMEM, "cannot allocate WordNet");
    d->context = context;
    tb_status st =
        tb_wordnet_obtain(data_dir, cache_dir, workload, vocab, false, NULL, &d->c, err);
    int64_t n = d->c.n_tokens;
    if (st == TB_OK) {
        d->pos = malloc((size_t)n * sizeof *d->pos);
        d->gloss_start = malloc((size_t)n * sizeof *d->gloss_start);
        if (!d->pos || !d->gloss_start)
            st = tb_fail(err, TB_ERR_NOMEM, "out of memory for WordNet's examples");
    }
    if (st != TB_OK) {
        wn_free(d);
        return st;
    }
    int64_t k = 0, n_test = 0;
    for (int pass = 0; pass < 2; pass++)
        for (int64_t g = 0; g < d->c.n_segments; g++) {
            int64_t s = d->c.segments[g], e = g + 1 < d->c.n_segments ? d->c.segments[g + 1] : n;
            bool test = g % 50 == 49;
            for (int64_t q = s; q < e; q++) {
                d->gloss_start[q] = s;
                if (test == (pass == 1)) d->pos[k++] = q;
                if (test && pass == 1) n_test++;
            }
        }
    *out = (tb_example_source){
        .n = n,
        .n_official_train = n - n_test,
        .classes = (int)d->c.n_vocab,
        .layout = {.x_dtype = TB_I32, .x_ndim = 1, .x_shape = {context}, .y_dtype = TB_I32,
                   .y_ndim = 0},
        .read = wn_read,
        .data = d,
        .free_data = wn_free,
    };
    return TB_OK;
}
