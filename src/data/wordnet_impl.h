/* wordnet_impl.h: what WordNet's two readers share (internal): wordnet_data.c (the glosses as
 * words) and wordnet_lemma.c (the lemmas each synset defines). Both read the data lines of
 * /usr/share/wordnet/data.{noun,verb,adj,adv} through one scanner that checks each file and
 * line, in the same order: the n-th data line is the n-th gloss and the n-th synset. */
#ifndef TRAINBENCH_WORDNET_IMPL_H
#define TRAINBENCH_WORDNET_IMPL_H

#include "data/source.h"
#include "data/token_cache.h"

#define WN_DEFAULT_DIR "/usr/share/wordnet"
/* The longest word kept whole (WordNet's longest gloss word has 31 letters, its longest
 * lemma 71) */
#define WN_MAX_WORD 255
#define WN_MISSING                                                                               \
    "WordNet is not installed: install the Debian package wordnet-base (apt-get install "        \
    "wordnet-base)"

/* Calls fn for each data line (license lines, starting with a space, skipped) of the four
 * files in dir, each a regular file of text ending in a newline; a file without data lines
 * fails ("has no glosses"). */
typedef tb_status (*tb_wordnet_line_fn)(void *user, const char *path, int64_t lineno,
                                        const char *line, tb_error *err);
tb_status tb_wordnet_scan_lines(const char *dir, tb_wordnet_line_fn fn, void *user,
                                tb_error *err);

/* The directory (data_dir, or where the package installs WordNet) and the signature of its
 * four data files (TB_ERR_MISSING naming the package or the directory when one is absent). */
tb_status tb_wordnet_signature(const char *data_dir, const char **dir, uint64_t *sig,
                               tb_error *err);

/* The glosses' token cache (vocabulary, tokens, one segment per gloss), from cache_dir or
 * built (see tb_token_cache_obtain). */
tb_status tb_wordnet_obtain(const char *data_dir, const char *cache_dir, const char *id,
                            tb_wordnet_vocab vocab, bool force, tb_prepare_report *rep,
                            tb_token_cache *out, tb_error *err);

/* The lemmas' token cache (wordnet_lemma.c: the lemmas the vocabulary, each synset's lemma
 * ids a segment), from cache_dir or built. */
tb_status tb_wordnet_lemma_obtain(const char *data_dir, const char *cache_dir, const char *id,
                                  bool force, tb_prepare_report *rep, tb_token_cache *out,
                                  tb_error *err);

/* ---- a string -> count hash table (open addressing, power-of-two capacity) ---- */
typedef struct word_entry {
    char *word;
    int64_t count;
    int32_t id;
} word_entry;

typedef struct word_table {
    word_entry *e;
    int64_t cap, n;
} word_table;

/* The entry of w, inserted (count 0, id -1) when insert; NULL when absent or out of memory. */
word_entry *tb_word_table_find(word_table *t, const char *w, bool insert);
void tb_word_table_free(word_table *t);
/* qsort order of word_entry pointers: most frequent first, then by the word */
int tb_word_by_count(const void *a, const void *b);

#endif
