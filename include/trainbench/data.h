/* data.h: reading data sets from disk: gzip-compressed IDX files, and Fashion-MNIST on top;
 * the layout of one example and the report of a prepared-data cache, on which the workloads
 * (workload.h) build.
 *
 * Data sets come from Debian packages installed under /usr/share/datasets; the library reads
 * them from a directory the caller names (it reads no environment variable and keeps no
 * global state). Every reader validates what it reads (magic numbers, sizes, counts, label
 * ranges) and fails with TB_ERR_FORMAT and a message naming the file when something is wrong,
 * or with TB_ERR_MISSING, naming the package to install, when the files are not there. */
#ifndef TRAINBENCH_DATA_H
#define TRAINBENCH_DATA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "trainbench/status.h"
#include "trainbench/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- IDX files ---------------------------------------------------------------------------- */

/* The most dimensions an IDX file may have here (the format allows 255). */
#define TB_IDX_MAX_DIMS 4
/* The largest payload tb_idx_read accepts (16 GiB); a header claiming more is rejected. */
#define TB_IDX_MAX_BYTES ((int64_t)1 << 34)

/* An unsigned-byte IDX array (LeCun's MNIST format): dims, then the payload in row-major
 * order. The magic number is 0x000008NN with NN = ndim (0x803 for images, 0x801 for labels). */
typedef struct tb_idx {
    int ndim;                      /* 1 .. TB_IDX_MAX_DIMS */
    int64_t dims[TB_IDX_MAX_DIMS]; /* dims[ndim..] are 0 */
    int64_t size;                  /* bytes of data: the product of dims */
    uint8_t *data;                 /* size bytes, owned by the tb_idx; free with tb_idx_free */
} tb_idx;

/* Reads the gzip-compressed IDX file at path into *out. The file must be a gzip stream (an
 * uncompressed file is rejected) holding exactly one unsigned-byte IDX array: header, payload
 * and nothing after it.
 * Fails with TB_ERR_MISSING if the file does not exist, TB_ERR_IO if it cannot be opened or
 * read, TB_ERR_FORMAT for a wrong magic number, a truncated header or payload (the message
 * gives the expected byte count and the offset where the data ended), a corrupt gzip stream
 * (with zlib's message), absurd dimensions (over TB_IDX_MAX_BYTES; the message gives every
 * dimension) or bytes after the end of the data, and TB_ERR_NOMEM if memory runs out. Memory is allocated as data arrives, so a
 * header claiming a huge size does not allocate it up front.
 * On success the caller owns out->data (free with tb_idx_free); on failure *out is zeroed and
 * owns nothing. */
tb_status tb_idx_read(const char *path, tb_idx *out, tb_error *err);

/* As tb_idx_read, and the magic number must declare ndim dimensions (0: any): a file of
 * another kind (labels where images belong) fails with TB_ERR_FORMAT naming its magic number
 * and the expected one, before its dimensions or payload are read. */
tb_status tb_idx_read_ndim(const char *path, int ndim, tb_idx *out, tb_error *err);

/* Frees the payload of idx and zeroes it. NULL and zeroed values are fine. */
void tb_idx_free(tb_idx *idx);

/* ---- image classification data sets -------------------------------------------------------- */

/* A labelled image data set held in host memory. */
typedef struct tb_image_dataset {
    int64_t n;                    /* number of examples */
    int channels, height, width;  /* per image */
    int classes;                  /* labels are in [0, classes) */
    float *images;                /* n * channels * height * width, NCHW, scaled to [0, 1] */
    int32_t *labels;              /* n */
} tb_image_dataset;

/* Frees the images and labels of ds and zeroes it. NULL and zeroed values are fine. */
void tb_image_dataset_free(tb_image_dataset *ds);

/* ---- Fashion-MNIST ------------------------------------------------------------------------ */

/* Where the Debian package dataset-fashion-mnist installs the files. */
#define TB_FMNIST_DEFAULT_DIR "/usr/share/datasets/fashion-mnist"
#define TB_FMNIST_CLASSES 10
/* The data set's fixed sizes: 28 x 28 images, 60000 training and 10000 test examples. */
#define TB_FMNIST_SIDE 28
#define TB_FMNIST_TRAIN_N 60000
#define TB_FMNIST_TEST_N 10000

/* Checks that dir (NULL: TB_FMNIST_DEFAULT_DIR) holds the four files of both splits, *bytes
 * their total size; TB_ERR_MISSING as tb_fmnist_load, naming the first missing file. */
tb_status tb_fmnist_files(const char *dir, int64_t *bytes, tb_error *err);

/* Loads a split of Fashion-MNIST (Xiao et al. 2017) from dir (NULL: TB_FMNIST_DEFAULT_DIR):
 * split "train" reads train-{images-idx3,labels-idx1}-ubyte.gz (60000 examples), split "test"
 * reads t10k-{images-idx3,labels-idx1}-ubyte.gz (10000 examples). The result has one channel,
 * 28 x 28 pixels divided by 255, 10 classes.
 * Fails with TB_ERR_INVALID for another split, TB_ERR_MISSING if the directory or a file is
 * missing (the message starts "Fashion-MNIST not found in <dir>: install the Debian package
 * dataset-fashion-mnist (apt-get install dataset-fashion-mnist)" for the package's directory,
 * "Fashion-MNIST not found in the data directory <dir>" with where the package puts the files
 * for another), TB_ERR_FORMAT if a file is
 * malformed (see tb_idx_read), is not images (3 dimensions) or labels (1 dimension), if the
 * images are not 28 x 28, if image and label counts differ (naming both files), if the split
 * does not have its 60000 or 10000 images (the message names the file, what it holds and, for
 * the other split's count, that the train and t10k files look swapped) or a label is not below
 * 10, and TB_ERR_NOMEM.
 * On success the caller owns *out (free with tb_image_dataset_free); on failure *out is zeroed
 * and owns nothing. */
tb_status tb_fmnist_load(const char *dir, const char *split, tb_image_dataset *out,
                         tb_error *err);

/* Name of a Fashion-MNIST class ("T-shirt/top", "Trouser", ..., "Ankle boot"), or NULL if
 * label is not in [0, TB_FMNIST_CLASSES). The string is static; do not free it. */
const char *tb_fmnist_class_name(int label);

/* ---- examples on the host ---------------------------------------------------------------- */

/* What one example looks like: its input and its target, per example (no batch dimension). */
typedef struct tb_example_layout {
    tb_dtype x_dtype;
    int x_ndim;
    int64_t x_shape[3];
    tb_dtype y_dtype;
    int y_ndim;               /* 0: a scalar (a class label) */
    int64_t y_shape[3];
    bool image;               /* x is [C, H, W] pixels: crop and flip apply */
    bool target_is_input;     /* y is x itself (float, as many values: reconstruction): an
                                 augmentation transforms y exactly as x */
} tb_example_layout;

/* Bytes of one example's input / target. */
size_t tb_example_x_bytes(const tb_example_layout *layout);
size_t tb_example_y_bytes(const tb_example_layout *layout);

/* ---- the prepared-data cache --------------------------------------------------------------- */

/* What building or checking a data set's cache did (tb_workload_prepare). */
typedef struct tb_prepare_report {
    char path[1024];     /* the cache file ("" if the data set needs none) */
    bool rebuilt;        /* false: a valid cache was reused */
    char reason[256];    /* why it was (re)built: "missing", "stale", "corrupt: ...", "forced" */
    int64_t tokens;      /* tokens in the cache */
    int64_t vocabulary;  /* vocabulary size */
    int64_t bytes;       /* cache file size */
    /* temporary files (<cache file>.tmp.<PID>) of writers that are gone (a prepare killed
     * while writing), removed */
    int stale_temps_removed;
} tb_prepare_report;

/* The default cache directory, $XDG_CACHE_HOME/trainbench, or $HOME/.cache/trainbench when
 * XDG_CACHE_HOME is unset, empty or relative (the XDG spec ignores a relative one), into buf.
 * false (buf "") when neither gives a directory, or buf is too small. */
bool tb_default_cache_dir(char *buf, size_t size);

#ifdef __cplusplus
}
#endif
#endif
