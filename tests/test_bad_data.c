/* test_bad_data.c: every data reader given the classes of bad input (bad_input.h), one table
 * per reader: Fashion-MNIST's IDX files, the King James Bible's data files, WordNet's data
 * files, read for their glosses and for their lemmas (the prepared-data cache:
 * test_bad_cache.c). Valid files are the installed Debian packages' (copies, or their first
 * lines); bad ones are derived from them in a temporary directory. A reader whose package is not installed is skipped, saying so. */
#include "bad_input.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "data/source.h"

#define WN_DIR "/usr/share/wordnet"
#define KJV_DIR "/usr/lib"

/* ---- Fashion-MNIST: the test split's labels (and images) ------------------------------ */

static tb_status load_fmnist(const char *dir, tb_error *err)
{
    tb_image_dataset ds;
    tb_status st = tb_fmnist_load(dir, "test", &ds, err);
    tb_image_dataset_free(&ds);
    return st;
}

static void restore_link(const char *dir, const char *file, const char *valid_dir)
{
    char from[2600], to[2600];
    snprintf(from, sizeof from, "%s/%s", valid_dir, file);
    snprintf(to, sizeof to, "%s/%s", dir, file);
    bad_remove(to);
    if (symlink(from, to) != 0) abort();
}

/* An IDX file of unsigned bytes: dims, then n payload bytes of value fill (gzip unless plain). */
static void write_idx(const char *path, int ndim, const uint32_t *dims, size_t n, int fill,
                      bool plain)
{
    unsigned char head[4 + 4 * 4] = {0, 0, 8, (unsigned char)ndim};
    for (int d = 0; d < ndim; d++)
        for (int b = 0; b < 4; b++)
            head[4 + 4 * d + b] = (unsigned char)(dims[d] >> (24 - 8 * b));
    unsigned char *body = malloc(n + 1);
    if (!body) abort();
    memset(body, fill, n);
    if (plain) {
        size_t hn = (size_t)(4 + 4 * ndim);
        unsigned char *all = malloc(hn + n);
        if (!all) abort();
        memcpy(all, head, hn);
        memcpy(all + hn, body, n);
        bad_write(path, all, hn + n);
        free(all);
    } else {
        bad_remove(path);
        gzFile f = gzopen(path, "wb1");
        if (!f) abort();
        gzwrite(f, head, (unsigned)(4 + 4 * ndim));
        if (n) gzwrite(f, body, (unsigned)n);
        gzclose(f);
    }
    free(body);
}

static void idx_images_for_labels(const char *path, const char *valid)
{
    (void)valid;
    bad_remove(path);
    if (symlink(TB_FMNIST_DEFAULT_DIR "/t10k-images-idx3-ubyte.gz", path) != 0) abort();
}

static void idx_label_10(const char *path, const char *valid)
{
    (void)valid;
    uint32_t n = TB_FMNIST_TEST_N;
    write_idx(path, 1, &n, n, 10, false);
}

static void idx_absurd_images(const char *path, const char *valid)
{
    (void)valid;
    uint32_t dims[3] = {1u << 30, 1u << 20, 28};
    write_idx(path, 3, dims, 0, 0, false);
}

static void idx_plain(const char *path, const char *valid)
{
    (void)valid;
    uint32_t n = TB_FMNIST_TEST_N;
    write_idx(path, 1, &n, n, 1, true);
}

static const bad_case fmnist_cases[] = {
    {"missing", NULL, bad_missing, TB_ERR_MISSING, "is missing"},
    {"empty", NULL, bad_empty, TB_ERR_FORMAT, "not a gzip file"},
    {"directory", NULL, bad_directory, TB_ERR_IO, "not a regular file"},
    {"FIFO", NULL, bad_fifo, TB_ERR_IO, "not a regular file"},
    {"truncated", NULL, bad_truncated, TB_ERR_FORMAT, "corrupt gzip stream"},
    {"corrupt", "t10k-images-idx3-ubyte.gz", bad_flipped, TB_ERR_FORMAT, "corrupt gzip stream"},
    {"wrong type", NULL, idx_images_for_labels, TB_ERR_FORMAT, "wrong magic 0x00000803"},
    {"out of range", NULL, idx_label_10, TB_ERR_FORMAT, "label 10 of example 0 is out of range"},
    {"huge", "t10k-images-idx3-ubyte.gz", idx_absurd_images, TB_ERR_FORMAT,
     "absurd dimensions 1073741824 x 1048576 x 28"},
    {"invalid encoding", NULL, idx_plain, TB_ERR_FORMAT, "not a gzip file"},
};

/* ---- the King James Bible: bible.data and its concordance ------------------------------ */

static tb_status load_kjv(const char *dir, tb_error *err)
{
    tb_example_source src;
    tb_status st = tb_kjv_source_load(dir, NULL, "kjv_transformer", 64, &src, err);
    tb_example_source_free(&src);
    return st;
}

static void kjv_wordnet_as_bible(const char *path, const char *valid)
{
    (void)valid;
    bad_remove(path);
    if (symlink(WN_DIR "/data.adv", path) != 0) abort();
}

/* sparse: a gigabyte of zeros */
static void kjv_huge(const char *path, const char *valid)
{
    (void)valid;
    bad_write(path, "", 0);
    if (truncate(path, (off_t)1 << 30) != 0) abort();
}

static void kjv_latin1(const char *path, const char *valid)
{
    size_t n = 0;
    unsigned char *b = bad_slurp(valid, &n);
    if (!b) abort();
    for (size_t i = 0; i < n; i++)
        b[i] = (unsigned char)(b[i] | 0x80);
    bad_write(path, b, n);
    free(b);
}

static const bad_case kjv_cases[] = {
    {"missing", NULL, bad_missing, TB_ERR_MISSING, "is not in the data directory"},
    {"missing", "bible.data.conc", bad_missing, TB_ERR_FORMAT, "bible.data.conc is missing"},
    {"empty", NULL, bad_empty, TB_ERR_FORMAT, "corrupt or incomplete"},
    {"directory", NULL, bad_directory, TB_ERR_IO, "is a directory, not a regular file"},
    {"directory", "bible.data.conc", bad_directory, TB_ERR_IO, "is a directory"},
    {"FIFO", NULL, bad_fifo, TB_ERR_IO, "is a FIFO, not a regular file"},
    {"FIFO", "bible.data.conc", bad_fifo, TB_ERR_IO, "is a FIFO"},
    {"truncated", NULL, bad_truncated, TB_ERR_FORMAT, "corrupt or incomplete"},
    /* the verses are whole without the concordance's second half (bible reads it for
     * searches): the data is complete */
    {"truncated", "bible.data.conc", bad_truncated, TB_OK, NULL},
    {"corrupt", NULL, bad_flipped, TB_ERR_FORMAT, "corrupt or incomplete"},
    {"wrong type", NULL, kjv_wordnet_as_bible, TB_ERR_FORMAT, "corrupt or incomplete"},
    {"huge", NULL, kjv_huge, TB_ERR_FORMAT, "corrupt or incomplete"},
    {"invalid encoding", NULL, kjv_latin1, TB_ERR_FORMAT, "corrupt or incomplete"},
};

/* ---- WordNet: data.adv among the first lines of the four files ------------------------- */

static tb_status load_wordnet(const char *dir, tb_error *err)
{
    tb_example_source src;
    tb_status st = tb_wordnet_source_load(dir, NULL, "wordnet_sparse", 8, &src, err);
    tb_example_source_free(&src);
    return st;
}

/* the first gloss's " | " made "   ": a data line without its gloss */
static void wn_no_gloss(const char *path, const char *valid)
{
    size_t n = 0;
    unsigned char *b = bad_slurp(valid, &n);
    char *bar = b ? strstr((char *)b + 2000, " | ") : NULL; /* past the license header */
    if (!bar) abort();
    bar[1] = ' ';
    bad_write(path, b, n);
    free(b);
}

static void wn_index_as_data(const char *path, const char *valid)
{
    (void)valid;
    bad_remove(path);
    if (symlink(WN_DIR "/index.adv", path) != 0) abort();
}

/* a gloss word of 300 letters (the reader's words are at most 255 bytes) */
static void wn_long_word(const char *path, const char *valid)
{
    (void)valid;
    char line[400] = "00001740 02 r 01 long 0 000 | a ";
    size_t at = strlen(line);
    memset(line + at, 'x', 300);
    strcpy(line + at + 300, " word\n");
    bad_write(path, line, strlen(line));
}

/* sparse: a gigabyte of NUL bytes and no newline */
static void wn_huge(const char *path, const char *valid)
{
    (void)valid;
    bad_write(path, "", 0);
    if (truncate(path, (off_t)1 << 30) != 0) abort();
}

static void wn_latin1(const char *path, const char *valid)
{
    (void)valid;
    static const char line[] = "00001740 02 r 01 caf\xe9 0 000 | in a caf\xe9\n";
    bad_write(path, line, sizeof line - 1);
}

static const bad_case wordnet_cases[] = {
    {"missing", NULL, bad_missing, TB_ERR_MISSING, "is not in the data directory"},
    {"empty", NULL, bad_empty, TB_ERR_FORMAT, "has no glosses"},
    {"directory", NULL, bad_directory, TB_ERR_IO, "is a directory, not a regular file"},
    {"FIFO", NULL, bad_fifo, TB_ERR_IO, "is a FIFO, not a regular file"},
    {"truncated", NULL, bad_truncated, TB_ERR_FORMAT, "no newline"},
    {"corrupt", NULL, wn_no_gloss, TB_ERR_FORMAT, "no gloss"},
    {"wrong type", NULL, wn_index_as_data, TB_ERR_FORMAT, "line 30: no gloss"},
    {"out of range", NULL, wn_long_word, TB_ERR_FORMAT, "line 1: a word of more than 255"},
    {"huge", NULL, wn_huge, TB_ERR_FORMAT, "1073741824 bytes, more than"},
    {"invalid encoding", NULL, wn_latin1, TB_ERR_FORMAT, "line 1 is not valid UTF-8"},
};

/* ---- WordNet's lemmas (the word fields of the same data lines) ------------------------- */

static tb_status load_wordnet_lemmas(const char *dir, tb_error *err)
{
    tb_example_source src;
    tb_status st = tb_wordnet_lemma_source_load(dir, NULL, "wordnet_sparse_sq_exact_lemma", 8,
                                                &src, err);
    tb_example_source_free(&src);
    return st;
}

/* valid's lines with the first data line replaced by line */
static void wn_first_synset(const char *path, const char *valid, const char *line)
{
    size_t n = 0;
    unsigned char *b = bad_slurp(valid, &n);
    char *at = b ? strstr((char *)b, "\n0") : NULL; /* the first data line (after the license) */
    char *end = at ? strchr(at + 1, '\n') : NULL;
    if (!end) abort();
    size_t head = (size_t)(at + 1 - (char *)b), tail = n - (size_t)(end + 1 - (char *)b);
    size_t ln = strlen(line);
    unsigned char *out = malloc(head + ln + tail);
    if (!out) abort();
    memcpy(out, b, head);
    memcpy(out + head, line, ln);
    memcpy(out + head + ln, end + 1, tail);
    bad_write(path, out, head + ln + tail);
    free(out);
    free(b);
}

/* a lemma's lex_id "x": not a hexadecimal digit */
static void wn_bad_lex_id(const char *path, const char *valid)
{
    wn_first_synset(path, valid, "00001740 02 r 02 well x good 0 000 | in a good way\n");
}

/* w_cnt 00: a synset of no lemmas */
static void wn_no_lemmas(const char *path, const char *valid)
{
    wn_first_synset(path, valid, "00001740 02 r 00 000 | in a good way\n");
}

static const bad_case wordnet_lemma_cases[] = {
    {"missing", NULL, bad_missing, TB_ERR_MISSING, "is not in the data directory"},
    {"empty", NULL, bad_empty, TB_ERR_FORMAT, "has no glosses"},
    {"directory", NULL, bad_directory, TB_ERR_IO, "is a directory, not a regular file"},
    {"FIFO", NULL, bad_fifo, TB_ERR_IO, "is a FIFO, not a regular file"},
    {"truncated", NULL, bad_truncated, TB_ERR_FORMAT, "no newline"},
    {"corrupt", NULL, wn_bad_lex_id, TB_ERR_FORMAT,
     "lex_id of lemma 1 (\"well\") \"x\" is not 1 hexadecimal digit"},
    {"wrong type", NULL, wn_index_as_data, TB_ERR_FORMAT,
     "line 30: the synset offset \"'tween\" is not 8 digits"},
    {"out of range", NULL, wn_no_lemmas, TB_ERR_FORMAT, "a synset of 0 lemmas"},
    {"huge", NULL, wn_huge, TB_ERR_FORMAT, "1073741824 bytes, more than"},
    {"invalid encoding", NULL, wn_latin1, TB_ERR_FORMAT, "line 1 is not valid UTF-8"},
};

#define CASES(t) t, (int)(sizeof t / sizeof t[0])

static const bad_reader readers[] = {
    {"Fashion-MNIST",
     {"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz", "t10k-images-idx3-ubyte.gz",
      "t10k-labels-idx1-ubyte.gz", NULL},
     "t10k-labels-idx1-ubyte.gz",
     TB_FMNIST_DEFAULT_DIR,
     load_fmnist,
     restore_link,
     CASES(fmnist_cases)},
    {"King James Bible",
     {"bible.data", "bible.data.conc", NULL},
     "bible.data",
     KJV_DIR,
     load_kjv,
     restore_link,
     CASES(kjv_cases)},
    {"WordNet",
     {"data.noun", "data.verb", "data.adj", "data.adv", NULL},
     "data.adv",
     WN_DIR,
     load_wordnet,
     bad_restore_head,
     CASES(wordnet_cases)},
    {"WordNet lemmas",
     {"data.noun", "data.verb", "data.adj", "data.adv", NULL},
     "data.adv",
     WN_DIR,
     load_wordnet_lemmas,
     bad_restore_head,
     CASES(wordnet_lemma_cases)},
};

/* What each reader needs installed. */
static const char *const needs[] = {TB_FMNIST_DEFAULT_DIR "/t10k-labels-idx1-ubyte.gz",
                                    KJV_DIR "/bible.data", WN_DIR "/data.adv",
                                    WN_DIR "/data.adv"};

int main(void)
{
    char dir[] = "/tmp/tb_test_bad_data_XXXXXX";
    if (!mkdtemp(dir)) return 1;
    for (size_t i = 0; i < sizeof readers / sizeof readers[0]; i++) {
        if (!bad_have(needs[i])) {
            printf("test_bad_data: %s skipped: %s is not installed\n", readers[i].name, needs[i]);
            continue;
        }
        char sub[64];
        snprintf(sub, sizeof sub, "%s/r%zu", dir, i);
        if (mkdir(sub, 0700) != 0) return 1;
        bad_run_reader(&readers[i], sub);
        rmdir(sub);
    }
    rmdir(dir);
    return tb_test_finish("test_bad_data");
}
