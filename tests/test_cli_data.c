/* test_cli_data.c: the trainbench command on Fashion-MNIST data directories that are not the
 * data set: a directory holds links to the installed files of the Debian package
 * dataset-fashion-mnist, some of them replaced by small files written here. */
#include "testutil.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "trainbench/data.h"

static char out[65536];

static int run(const char *args) { return tb_test_run_cli(args, out, sizeof out); }

static bool has(const char *needle) { return tb_test_output_has(out, needle); }

static const char *const files[4] = {"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
                                     "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"};

static char root[64];

/* A fresh directory root/name linking the four installed files. */
static void link_dir(char *dir, size_t cap, const char *name)
{
    snprintf(dir, cap, "%s/%s", root, name);
    if (mkdir(dir, 0700) != 0) exit(1);
    for (int i = 0; i < 4; i++) {
        char from[512], to[512];
        snprintf(from, sizeof from, "%s/%s", TB_FMNIST_DEFAULT_DIR, files[i]);
        snprintf(to, sizeof to, "%s/%s", dir, files[i]);
        if (symlink(from, to) != 0) exit(1);
    }
}

/* Replaces dir/name by a gzip IDX file: magic 0x800 + ndim, dims, then bytes (i * 7) % mod. */
static void write_idx(const char *dir, const char *name, int ndim, const uint32_t *dims, int mod)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    unlink(path);
    gzFile f = gzopen(path, "wb1");
    if (!f) exit(1);
    size_t n = 1;
    unsigned char head[4 + 4 * 3] = {0, 0, 8, (unsigned char)ndim};
    for (int d = 0; d < ndim; d++) {
        n *= dims[d];
        for (int b = 0; b < 4; b++) head[4 + 4 * d + b] = (unsigned char)(dims[d] >> (24 - 8 * b));
    }
    gzwrite(f, head, (unsigned)(4 + 4 * ndim));
    unsigned char chunk[4096];
    for (size_t at = 0; at < n; at += sizeof chunk) {
        size_t k = n - at < sizeof chunk ? n - at : sizeof chunk;
        for (size_t i = 0; i < k; i++) chunk[i] = (unsigned char)(((at + i) * 7) % (size_t)mod);
        gzwrite(f, chunk, (unsigned)k);
    }
    if (gzclose(f) != Z_OK) exit(1);
}

static void remove_dir(const char *dir)
{
    for (int i = 0; i < 4; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        unlink(path);
    }
    rmdir(dir);
}

int main(void)
{
    struct stat st;
    if (stat(TB_FMNIST_DEFAULT_DIR "/train-images-idx3-ubyte.gz", &st) != 0) {
        printf("note: Fashion-MNIST is not installed in %s (apt-get install "
               "dataset-fashion-mnist); nothing to check\n", TB_FMNIST_DEFAULT_DIR);
        return tb_test_finish("test_cli_data");
    }
    snprintf(root, sizeof root, "/tmp/tb_cli_data_XXXXXX");
    if (!mkdtemp(root)) return 1;
    char dir[256], args[1024];

    /* test images of 20 x 20 beside the 28 x 28 training images: the test evaluation read
     * them with the training images' row size and crashed; now a data error before training */
    link_dir(dir, sizeof dir, "test_dims_20");
    uint32_t small[3] = {10000, 20, 20};
    write_idx(dir, files[2], 3, small, 256);
    snprintf(args, sizeof args, "train --data-dir %s/ --steps 2 --eval-examples 50 -q", dir);
    CHECK(run(args) == 1 && has("t10k-images-idx3-ubyte.gz holds 10000 images of 20 x 20 pixels; "
                                "Fashion-MNIST's images are 28 x 28") &&
          strstr(out, "//t10k") == NULL);
    /* prepare reads and checks the files as train does (it only looked for them): the same
     * error, the same exit code */
    char train_out[sizeof out];
    snprintf(train_out, sizeof train_out, "%s", out);
    snprintf(args, sizeof args, "prepare --cache-dir %s --data-dir %s/ fmnist_mlp", root, dir);
    CHECK(run(args) == 1 && has("prepare fmnist_mlp: ") &&
          has(strstr(train_out, "trainbench: ") + strlen("trainbench: ")));
    remove_dir(dir);

    /* the training and test files swapped */
    snprintf(dir, sizeof dir, "%s/swapped", root);
    CHECK(mkdir(dir, 0700) == 0);
    for (int i = 0; i < 4; i++) {
        char from[512], to[512];
        snprintf(from, sizeof from, "%s/%s", TB_FMNIST_DEFAULT_DIR, files[(i + 2) % 4]);
        snprintf(to, sizeof to, "%s/%s", dir, files[i]);
        CHECK(symlink(from, to) == 0);
    }
    snprintf(args, sizeof args, "train --data-dir %s --steps 2 --eval-examples 50 -q", dir);
    CHECK(run(args) == 1 && has("train-images-idx3-ubyte.gz holds 10000 images; Fashion-MNIST's "
                                "training set has 60000 (are the train and t10k files swapped?)"));
    snprintf(args, sizeof args, "prepare --cache-dir %s --data-dir %s fmnist_cnn", root, dir);
    CHECK(run(args) == 1 && has("prepare fmnist_cnn: ") && has("(are the train and t10k files "
                                                               "swapped?)"));
    remove_dir(dir);

    /* a WordNet of 4 glosses: too little data for the splits, a data error naming their sizes
     * before any training (not empty evaluations and a NaN 'divergence') */
    snprintf(dir, sizeof dir, "%s/wordnet", root);
    CHECK(mkdir(dir, 0700) == 0);
    static const char *const wn[4] = {"data.noun", "data.verb", "data.adj", "data.adv"};
    for (int i = 0; i < 4; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s", dir, wn[i]);
        FILE *f = fopen(path, "w");
        if (f) {
            fputs("00001740 03 n 01 entity 0 000 | a thing\n", f);
            fclose(f);
        }
    }
    snprintf(args, sizeof args,
             "train -w wordnet_sparse --data-dir %s --cache-dir %s -b 1 --steps 10 -q", dir, root);
    CHECK(run(args) == 1 && has("too little data for its splits: 12 examples") &&
          has("give 0 training, 10000 validation and 0 test examples") &&
          strstr(out, "diverged") == NULL);
    for (int i = 0; i < 4; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s", dir, wn[i]);
        unlink(path);
    }
    rmdir(dir);
    snprintf(args, sizeof args, "%s/wordnet-glosses.tbcache", root);
    unlink(args);

    /* the installed files pass */
    snprintf(args, sizeof args, "prepare --cache-dir %s fmnist_mlp", root);
    CHECK(run(args) == 0 && has("checked: 60000 training and 10000 test images"));

    CHECK(rmdir(root) == 0);
    return tb_test_finish("test_cli_data");
}
