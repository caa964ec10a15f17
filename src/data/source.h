/* source.h: the data layer as the workloads see it (not public): a data set as numbered
 * examples on the host, and the data sources that make one: Fashion-MNIST (fmnist_data.c), the
 * King James Bible as characters (kjv_data.c), WordNet's glosses as words (wordnet_data.c).
 *
 * A source is plain data: a workload gets one from a source's loader and keeps it (the
 * workloads' splits, batches and evaluation read examples through it); the data layer knows
 * nothing of workloads. */
#ifndef TRAINBENCH_DATA_SOURCE_H
#define TRAINBENCH_DATA_SOURCE_H

#include "trainbench/data.h"

/* The examples of a data set: ids 0..n; ids >= n_official_train are the official test set. */
typedef struct tb_example_source {
    int64_t n, n_official_train;
    const int32_t *classes_of; /* class per id, or NULL */
    int classes;
    int64_t input_vocab; /* token inputs of another vocabulary than the targets' (0: classes) */
    tb_example_layout layout;
    /* writes example id's input to x and target to y (host memory) */
    void (*read)(const void *data, int64_t id, void *x, void *y);
    void *data;
    void (*free_data)(void *data);
} tb_example_source;

/* Frees what src holds and zeroes it. NULL and zeroed sources are fine. */
void tb_example_source_free(tb_example_source *src);

/* The loaders: each fills *out from the Debian package's files in data_dir (NULL: where the
 * package installs them), through the prepared-data cache in cache_dir (NULL: none, prepared
 * in memory) for the text corpora; workload (an id) is named in the command that rebuilds a
 * corrupt cache. On failure *out is zeroed and owns nothing. */
/* Fashion-MNIST: ids 0..60000 the training set, then the 10000 test images; the target is
 * the class, or with reconstruct the image itself. */
tb_status tb_fmnist_source_load(const char *data_dir, bool reconstruct, tb_example_source *out,
                                tb_error *err);
/* The Bible as windows of context + 1 characters (input, and target shifted by one). */
tb_status tb_kjv_source_load(const char *data_dir, const char *cache_dir, const char *workload,
                             int context, tb_example_source *out, tb_error *err);
/* WordNet's glosses: each word after the context words before it in its gloss. */
tb_status tb_wordnet_source_load(const char *data_dir, const char *cache_dir,
                                 const char *workload, int context, tb_example_source *out,
                                 tb_error *err);
/* The vocabulary: DEFAULT, words seen at least 3 times (about 27.7k); ALL, every word of the
 * glosses (about 54k, no "<unk>" in the data), cached in a file of its own. */
typedef enum tb_wordnet_vocab { TB_WORDNET_VOCAB_DEFAULT = 0, TB_WORDNET_VOCAB_ALL } tb_wordnet_vocab;
tb_status tb_wordnet_source_load_vocab(const char *data_dir, const char *cache_dir,
                                       const char *workload, int context,
                                       tb_wordnet_vocab vocab, tb_example_source *out,
                                       tb_error *err);

/* WordNet's synsets: the input is the first `words` tokens of the gloss (the default gloss
 * vocabulary, as tb_wordnet_source_load's; "</s>" after its end), the target the synset's
 * lemmas (ids into the lemma vocabulary: every distinct lemma of the data files, lower-cased,
 * an adjective's syntactic marker dropped, most frequent first), -1 after the last, in a
 * vector of the most lemmas a synset has. classes: the lemma vocabulary's size; input_vocab
 * the gloss vocabulary's. Every 50th synset is the official test set (its gloss is the glosses'
 * test set). The lemmas are cached in a file of their own (wordnet-lemmas.tbcache). */
tb_status tb_wordnet_lemma_source_load(const char *data_dir, const char *cache_dir,
                                       const char *workload, int words, tb_example_source *out,
                                       tb_error *err);
/* The lemma of id in a source tb_wordnet_lemma_source_load made (NULL: outside), and the id
 * of a lemma (-1: not a lemma). */
const char *tb_wordnet_lemma_name(const tb_example_source *src, int32_t id);
int32_t tb_wordnet_lemma_id(const tb_example_source *src, const char *lemma);

/* Builds or checks a source's data cache (see tb_workload_prepare); report must not be NULL. */
typedef tb_status (*tb_source_prepare_fn)(const char *data_dir, const char *cache_dir,
                                          bool force, tb_prepare_report *report, tb_error *err);
tb_status tb_fmnist_prepare(const char *data_dir, const char *cache_dir, bool force,
                            tb_prepare_report *report, tb_error *err);
tb_status tb_kjv_prepare(const char *data_dir, const char *cache_dir, bool force,
                         tb_prepare_report *report, tb_error *err);
tb_status tb_wordnet_prepare(const char *data_dir, const char *cache_dir, bool force,
                             tb_prepare_report *report, tb_error *err);
tb_status tb_wordnet_prepare_all(const char *data_dir, const char *cache_dir, bool force,
                                 tb_prepare_report *report, tb_error *err);
/* the glosses' default cache, then the lemmas' (the one report describes) */
tb_status tb_wordnet_prepare_lemma(const char *data_dir, const char *cache_dir, bool force,
                                   tb_prepare_report *report, tb_error *err);

#endif
