/* wordnet_lemma.c: the lemmas WordNet's synsets define, read from the word fields of each
 * data line of /usr/share/wordnet/data.{noun,verb,adj,adv} (wndb(5)): "offset lex_filenum
 * ss_type w_cnt word lex_id [word lex_id ...] p_cnt ... | gloss", offset 8 digits, lex_filenum
 * 2, ss_type one of n v a s r, w_cnt 2 hexadecimal digits (at least 1), each lex_id 1
 * hexadecimal digit. A lemma is lower-cased (the index files' form: "Paris" and "paris" are one
 * lemma) and loses an adjective's syntactic marker ("(a)", "(p)", "(ip)"); a synset naming one
 * twice (by case) keeps it once. The vocabulary is every lemma, most synsets first, then by
 * the lemma (147,306 in WordNet 3.0: as many as the index files' distinct lemmas). Kept as a
 * token cache (wordnet-lemmas.tbcache): the lemmas are the vocabulary, the tokens each
 * synset's lemma ids, one segment per synset, in the order of the data lines. */
#include "data/wordnet_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WN_LEMMA_CACHE_FILE "wordnet-lemmas.tbcache"
#define WN_LEMMA_KIND 3

/* the next space-separated field of *p (its length in *n; 0 at the end of the line) */
static const char *next_field(const char **p, size_t *n)
{
    const char *s = *p;
    while (*s == ' ') s++;
    size_t k = 0;
    while (s[k] && s[k] != ' ' && s[k] != '\n') k++;
    *n = k;
    *p = s + k;
    return s;
}

static bool all_of(const char *s, size_t n, const char *set)
{
    for (size_t i = 0; i < n; i++)
        if (!strchr(set, s[i]) || !s[i]) return false;
    return n > 0;
}

#define HEX "0123456789abcdefABCDEF"

/* A field that must be n characters of set: refused naming the file, line and field. */
static tb_status expect(const char *path, int64_t lineno, const char *what, const char *f,
                        size_t n, size_t want, const char *set, const char *form, tb_error *err)
{
    if (n == want && all_of(f, n, set)) return TB_OK;
    if (n == 0)
        return tb_fail(err, TB_ERR_FORMAT, "%s line %lld: the line ends before its %s: not a "
                       "WordNet data line", path, (long long)lineno, what);
    return tb_fail(err, TB_ERR_FORMAT, "%s line %lld: the %s \"%.*s\" is not %s: not a WordNet "
                   "data line", path, (long long)lineno, what, (int)(n < 40 ? n : 40), f, form);
}

/* w (n bytes) lower-cased, without an adjective's marker, into out (WN_MAX_WORD + 1) */
static void lemma_form(const char *w, size_t n, char *out)
{
    static const char *const marks[] = {"(a)", "(p)", "(ip)"};
    for (int i = 0; i < 3; i++) {
        size_t m = strlen(marks[i]);
        if (n > m && memcmp(w + n - m, marks[i], m) == 0) {
            n -= m;
            break;
        }
    }
    for (size_t i = 0; i < n; i++) out[i] = w[i] >= 'A' && w[i] <= 'Z' ? (char)(w[i] + 32) : w[i];
    out[n] = '\0';
}

typedef tb_status (*lemma_fn)(void *user, const char *lemma, tb_error *err);

/* Calls fn for each lemma of the data line, then fn(NULL) (the end of the synset). */
static tb_status scan_lemmas(const char *path, int64_t lineno, const char *line, lemma_fn fn,
                             void *user, tb_error *err)
{
    const char *p = line, *f;
    size_t n;
    f = next_field(&p, &n);
    tb_status st = expect(path, lineno, "synset offset", f, n, 8, "0123456789", "8 digits", err);
    f = next_field(&p, &n);
    if (st == TB_OK)
        st = expect(path, lineno, "lexicographer file number", f, n, 2, "0123456789",
                    "2 digits", err);
    f = next_field(&p, &n);
    if (st == TB_OK)
        st = expect(path, lineno, "synset type", f, n, 1, "nvasr", "one of n v a s r", err);
    f = next_field(&p, &n);
    if (st == TB_OK)
        st = expect(path, lineno, "lemma count (w_cnt)", f, n, 2, HEX,
                    "2 hexadecimal digits", err);
    if (st != TB_OK) return st;
    int count = (int)strtol(f, NULL, 16);
    if (count < 1)
        return tb_fail(err, TB_ERR_FORMAT, "%s line %lld: a synset of 0 lemmas (w_cnt 00): "
                       "every synset names at least one", path, (long long)lineno);
    char lemma[WN_MAX_WORD + 1];
    for (int i = 0; i < count && st == TB_OK; i++) {
        f = next_field(&p, &n);
        if (n == 0 || *f == '|')
            return tb_fail(err, TB_ERR_FORMAT, "%s line %lld: lemma %d of the %d its w_cnt "
                           "gives is missing", path, (long long)lineno, i + 1, count);
        if (n > WN_MAX_WORD)
            return tb_fail(err, TB_ERR_FORMAT, "%s line %lld: lemma %d has more than %d "
                           "characters", path, (long long)lineno, i + 1, WN_MAX_WORD);
        lemma_form(f, n, lemma);
        const char *id = next_field(&p, &n);
        char what[WN_MAX_WORD + 48];
        snprintf(what, sizeof what, "lex_id of lemma %d (\"%s\")", i + 1, lemma);
        st = expect(path, lineno, what, id, n, 1, HEX, "1 hexadecimal digit", err);
        if (st == TB_OK) st = fn(user, lemma, err);
    }
    return st == TB_OK ? fn(user, NULL, err) : st;
}

/* ---- building the cache: count the lemmas, then emit each synset's ids ---- */
typedef struct lemma_build {
    word_table t;
    tb_token_cache *out;
    int64_t tok_cap, seg_cap;
    int64_t synset_start; /* the first token of the synset being emitted */
    bool emit;
} lemma_build;

static tb_status add_segment(lemma_build *b, tb_error *err)
{
    tb_token_cache *c = b->out;
    if (c->n_segments == b->seg_cap) { /* doubling: a realloc per synset is quadratic */
        int64_t *s = realloc(c->segments, (size_t)(b->seg_cap *= 2) * sizeof *s);
        if (!s) return tb_fail(err, TB_ERR_NOMEM, "out of memory for WordNet's synsets");
        c->segments = s;
    }
    c->segments[c->n_segments++] = c->n_tokens;
    b->synset_start = c->n_tokens;
    return TB_OK;
}

static tb_status on_lemma(void *user, const char *lemma, tb_error *err)
{
    lemma_build *b = user;
    if (!b->emit) {
        if (!lemma) return TB_OK;
        word_entry *e = tb_word_table_find(&b->t, lemma, true);
        if (!e) return tb_fail(err, TB_ERR_NOMEM, "out of memory counting WordNet's lemmas");
        e->count++;
        return TB_OK;
    }
    tb_token_cache *c = b->out;
    if (!lemma) return add_segment(b, err);
    word_entry *e = tb_word_table_find(&b->t, lemma, false); /* counted in the first pass */
    if (!e)
        return tb_fail(err, TB_ERR_IO, "WordNet's data files changed while they were read "
                       "(lemma \"%s\")", lemma);
    int32_t id = e->id;
    for (int64_t q = b->synset_start; q < c->n_tokens; q++)
        if (c->tokens[q] == id) return TB_OK; /* named twice (by case) */
    if (c->n_tokens == b->tok_cap) {
        int32_t *t = realloc(c->tokens, (size_t)(b->tok_cap *= 2) * sizeof *t);
        if (!t) return tb_fail(err, TB_ERR_NOMEM, "out of memory for WordNet's lemmas");
        c->tokens = t;
    }
    c->tokens[c->n_tokens++] = id;
    return TB_OK;
}

static tb_status lemma_line(void *user, const char *path, int64_t lineno, const char *line,
                            tb_error *err)
{
    return scan_lemmas(path, lineno, line, on_lemma, user, err);
}

/* the vocabulary: ids by count, the blob of NUL-terminated lemmas */
static tb_status number_lemmas(lemma_build *b, tb_error *err)
{
    int64_t k = 0, bytes = 0;
    word_entry **sorted = malloc((size_t)(b->t.n > 0 ? b->t.n : 1) * sizeof *sorted);
    if (!sorted) return tb_fail(err, TB_ERR_NOMEM, "out of memory sorting WordNet's lemmas");
    for (int64_t i = 0; i < b->t.cap; i++)
        if (b->t.e[i].word) {
            sorted[k++] = &b->t.e[i];
            bytes += (int64_t)strlen(b->t.e[i].word) + 1;
        }
    qsort(sorted, (size_t)k, sizeof *sorted, tb_word_by_count);
    tb_token_cache *c = b->out;
    c->vocab_blob = malloc((size_t)(bytes > 0 ? bytes : 1));
    if (!c->vocab_blob) {
        free(sorted);
        return tb_fail(err, TB_ERR_NOMEM, "out of memory for the lemma vocabulary");
    }
    int64_t off = 0;
    for (int64_t i = 0; i < k; i++) {
        sorted[i]->id = (int32_t)i;
        size_t l = strlen(sorted[i]->word) + 1;
        memcpy(c->vocab_blob + off, sorted[i]->word, l);
        off += (int64_t)l;
    }
    c->n_vocab = k;
    c->vocab_bytes = bytes;
    free(sorted);
    return TB_OK;
}

static tb_status lemma_build_fn(void *p, tb_token_cache *out, tb_error *err)
{
    const char *dir = p;
    lemma_build b = {.out = out};
    tb_status st = tb_wordnet_scan_lines(dir, lemma_line, &b, err);
    if (st == TB_OK) st = number_lemmas(&b, err);
    if (st == TB_OK) {
        b.tok_cap = 1 << 18;
        out->tokens = malloc((size_t)b.tok_cap * sizeof *out->tokens);
        b.seg_cap = 1 << 12;
        out->segments = malloc((size_t)b.seg_cap * sizeof *out->segments);
        if (!out->tokens || !out->segments)
            st = tb_fail(err, TB_ERR_NOMEM, "out of memory for WordNet's lemmas");
        else
            out->segments[out->n_segments++] = 0;
    }
    b.emit = true;
    if (st == TB_OK) st = tb_wordnet_scan_lines(dir, lemma_line, &b, err);
    if (st == TB_OK) out->n_segments--; /* the last start is the end */
    tb_word_table_free(&b.t);
    return st;
}

tb_status tb_wordnet_lemma_obtain(const char *data_dir, const char *cache_dir, const char *id,
                                  bool force, tb_prepare_report *rep, tb_token_cache *out,
                                  tb_error *err)
{
    const char *dir;
    uint64_t sig;
    tb_status st = tb_wordnet_signature(data_dir, &dir, &sig, err);
    if (st != TB_OK) return st;
    tb_token_cache_where w = {.cache_dir = cache_dir, .file = WN_LEMMA_CACHE_FILE,
                              .kind = WN_LEMMA_KIND, .workload = id, .data_dir = data_dir};
    return tb_token_cache_obtain(&w, sig, force, rep, lemma_build_fn, (void *)dir, out, err);
}

tb_status tb_wordnet_prepare_lemma(const char *data_dir, const char *cache_dir, bool force,
                                   tb_prepare_report *report, tb_error *err)
{
    tb_prepare_report glosses = {0};
    tb_token_cache c;
    tb_status st = tb_wordnet_obtain(data_dir, cache_dir, NULL, TB_WORDNET_VOCAB_DEFAULT, force,
                                     &glosses, &c, err);
    if (st != TB_OK) return st;
    tb_token_cache_free(&c);
    st = tb_wordnet_lemma_obtain(data_dir, cache_dir, NULL, force, report, &c, err);
    if (st == TB_OK) tb_token_cache_free(&c);
    return st;
}
