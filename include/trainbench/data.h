/* data.h: reading data sets from disk: gzip-compressed IDX files, and Fashion-MNIST on top.
 *
 * Data sets come from Debian packages installed under /usr/share/datasets; the library reads
 * them from a directory the caller names (it reads no environment variable and keeps no
 * global state). Every reader validates what it reads (magic numbers, sizes, counts, label
 * ranges) and fails with TB_ERR_FORMAT and a message naming the file when something is wrong,
 * or with TB_ERR_MISSING, naming the package to install, when the files are not there. */
#ifndef TRAINBENCH_DATA_H
#define TRAINBENCH_DATA_H

#include <stdint.h>

#include "trainbench/status.h"

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

#ifdef __cplusplus
}
#endif
#endif
