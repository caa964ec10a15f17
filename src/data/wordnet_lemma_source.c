/* wordnet_lemma_source.c: WordNet's synsets as examples (tb_wordnet_lemma_source_load): the
 * input is the start of the synset's gloss, as word ids of the glosses' default vocabulary
 * (wordnet_data.c), the target the lemmas the synset defines, as ids of the lemma vocabulary
 * (wordnet_lemma.c), a K-sparse target (K = 1 .. 28 in WordNet 3.0) padded with -1. The two
 * caches are made from the same data lines in the same order: synset n is gloss n. */
#include "data/wordnet_impl.h"

#include <stdlib.h>
#include <string.h>

typedef struct lemma_data {
    tb_token_cache glosses, lemmas;
    int64_t *synset; /* of each example id */
    int words, k;
} lemma_data;

static void lemma_free(void *p)
{
    lemma_data *d = p;
    if (!d) return;
    tb_token_cache_free(&d->glosses);
    tb_token_cache_free(&d->lemmas);
    free(d->synset);
    free(d);
}

/* segment s of c: its first token and its length */
static int64_t segment(const tb_token_cache *c, int64_t s, int64_t *len)
{
    int64_t end = s + 1 < c->n_segments ? c->segments[s + 1] : c->n_tokens;
    *len = end - c->segments[s];
    return c->segments[s];
}

static void lemma_read(const void *p, int64_t id, void *x, void *y)
{
    const lemma_data *d = p;
    int64_t s = d->synset[id], n;
    int64_t at = segment(&d->glosses, s, &n);
    int32_t *xi = x, *yi = y;
    for (int j = 0; j < d->words; j++) xi[j] = j < n ? d->glosses.tokens[at + j] : 1; /* </s> */
    at = segment(&d->lemmas, s, &n);
    for (int j = 0; j < d->k; j++) yi[j] = j < n ? d->lemmas.tokens[at + j] : -1;
}

/* The two caches describe the same synsets, every synset has a lemma, every id is in its
 * vocabulary; sets d->k, the most lemmas of a synset. */
static tb_status check_caches(lemma_data *d, const char *workload, tb_error *err)
{
    const tb_token_cache *g = &d->glosses, *l = &d->lemmas;
    const char *w = workload ? workload : "wordnet_sparse_sq_exact_lemma";
    if (g->n_segments != l->n_segments || l->n_segments < 1)
        return tb_fail(err, TB_ERR_FORMAT, "WordNet: the glosses' cache has %lld glosses and "
                       "the lemmas' cache %lld synsets: rebuild them with `trainbench prepare "
                       "--force %s`", (long long)g->n_segments, (long long)l->n_segments, w);
    d->k = 0;
    for (int64_t s = 0; s < l->n_segments; s++) {
        int64_t n, at = segment(l, s, &n);
        if (n < 1 || n > 255 || at < 0 || at + n > l->n_tokens)
            return tb_fail(err, TB_ERR_FORMAT, "WordNet: synset %lld has %lld lemmas in the "
                           "lemmas' cache (1..255): rebuild it with `trainbench prepare "
                           "--force %s`", (long long)s, (long long)n, w);
        if (n > d->k) d->k = (int)n;
    }
    for (int64_t i = 0; i < l->n_tokens; i++)
        if (l->tokens[i] < 0 || l->tokens[i] >= l->n_vocab)
            return tb_fail(err, TB_ERR_FORMAT, "WordNet: lemma id %d outside the %lld lemmas "
                           "of the lemmas' cache: rebuild it with `trainbench prepare "
                           "--force %s`", (int)l->tokens[i], (long long)l->n_vocab, w);
    return TB_OK;
}

tb_status tb_wordnet_lemma_source_load(const char *data_dir, const char *cache_dir,
                                       const char *workload, int words, tb_example_source *out,
                                       tb_error *err)
{
    memset(out, 0, sizeof *out);
    if (words < 1 || words > 64)
        return tb_fail(err, TB_ERR_INVALID, "WordNet lemmas: %d gloss words as input (1..64)",
                       words);
    lemma_data *d = calloc(1, sizeof *d);
    if (!d) return tb_fail(err, TB_ERR_NOMEM, "cannot allocate WordNet");
    d->words = words;
    tb_status st = tb_wordnet_lemma_obtain(data_dir, cache_dir, workload, false, NULL,
                                           &d->lemmas, err);
    if (st == TB_OK)
        st = tb_wordnet_obtain(data_dir, cache_dir, workload, TB_WORDNET_VOCAB_DEFAULT, false,
                               NULL, &d->glosses, err);
    if (st == TB_OK) st = check_caches(d, workload, err);
    int64_t n = d->lemmas.n_segments;
    if (st == TB_OK && !(d->synset = malloc((size_t)n * sizeof *d->synset)))
        st = tb_fail(err, TB_ERR_NOMEM, "out of memory for WordNet's synsets");
    if (st != TB_OK) {
        lemma_free(d);
        return st;
    }
    int64_t k = 0, n_test = 0; /* the official training synsets, then every 50th */
    for (int pass = 0; pass < 2; pass++)
        for (int64_t s = 0; s < n; s++)
            if ((s % 50 == 49) == (pass == 1)) {
                d->synset[k++] = s;
                n_test += pass;
            }
    *out = (tb_example_source){
        .n = n,
        .n_official_train = n - n_test,
        .classes = (int)d->lemmas.n_vocab,
        .input_vocab = d->glosses.n_vocab,
        .layout = {.x_dtype = TB_I32, .x_ndim = 1, .x_shape = {words}, .y_dtype = TB_I32,
                   .y_ndim = 1, .y_shape = {d->k}},
        .read = lemma_read,
        .data = d,
        .free_data = lemma_free,
    };
    return TB_OK;
}

const char *tb_wordnet_lemma_name(const tb_example_source *src, int32_t id)
{
    if (!src || src->read != lemma_read) return NULL;
    const lemma_data *d = src->data;
    return id >= 0 && id < d->lemmas.n_vocab ? d->lemmas.vocab[id] : NULL;
}

int32_t tb_wordnet_lemma_id(const tb_example_source *src, const char *lemma)
{
    if (!src || !lemma || src->read != lemma_read) return -1;
    const lemma_data *d = src->data;
    for (int64_t i = 0; i < d->lemmas.n_vocab; i++)
        if (strcmp(d->lemmas.vocab[i], lemma) == 0) return (int32_t)i;
    return -1;
}
