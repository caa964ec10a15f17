/* fmnist.c: the Fashion-MNIST data set (Xiao, Rasul and Vollgraf 2017) from the IDX files of
 * the Debian package dataset-fashion-mnist, and image data sets in general. */
#include "trainbench/data.h"
#include "data/fmnist_impl.h"
#include "data/path_impl.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define FMNIST_PACKAGE "dataset-fashion-mnist"

static const char *const fmnist_class_names[TB_FMNIST_CLASSES] = {
    "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
    "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot",
};

const char *tb_fmnist_class_name(int label)
{
    if (label < 0 || label >= TB_FMNIST_CLASSES) return NULL;
    return fmnist_class_names[label];
}

void tb_image_dataset_free(tb_image_dataset *ds)
{
    if (!ds) return;
    free(ds->images);
    free(ds->labels);
    memset(ds, 0, sizeof *ds);
}

static tb_status not_found(tb_error *err, const char *dir, const char *detail)
{
    if (strcmp(dir, TB_FMNIST_DEFAULT_DIR) != 0) /* a directory the user chose */
        return tb_fail(err, TB_ERR_MISSING,
                       "Fashion-MNIST not found in the data directory %s%s (it needs the four "
                       "files the Debian package " FMNIST_PACKAGE " installs in "
                       TB_FMNIST_DEFAULT_DIR ")",
                       dir, detail);
    return tb_fail(err, TB_ERR_MISSING,
                   "Fashion-MNIST not found in %s: install the Debian package " FMNIST_PACKAGE
                   " (apt-get install " FMNIST_PACKAGE ")%s",
                   dir, detail);
}

static bool is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Reads the IDX file dir/name of ndim dimensions; a missing file becomes the install hint. */
static tb_status read_part(const char *dir, const char *name, int ndim, char *path,
                           size_t path_size, tb_idx *out, tb_error *err)
{
    int len = snprintf(path, path_size, "%.*s/%s", tb_dir_len(dir), dir, name);
    if (len < 0 || (size_t)len >= path_size)
        return tb_fail(err, TB_ERR_INVALID, "Fashion-MNIST directory name too long: %s", dir);
    tb_status st = tb_idx_read_ndim(path, ndim, out, err);
    if (st == TB_ERR_MISSING) {
        char detail[128];
        snprintf(detail, sizeof detail, "; %s is missing", name);
        return not_found(err, dir, detail);
    }
    return st;
}

tb_status tb_fmnist_files(const char *dir, int64_t *bytes, tb_error *err)
{
    if (!bytes) return tb_fail(err, TB_ERR_INVALID, "tb_fmnist_files: bytes is NULL");
    if (!dir) dir = TB_FMNIST_DEFAULT_DIR;
    static const char *const files[4] = {"train-images-idx3-ubyte.gz",
                                         "train-labels-idx1-ubyte.gz",
                                         "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"};
    *bytes = 0;
    for (int i = 0; i < 4; i++) {
        char path[1024], detail[128];
        struct stat sb;
        snprintf(path, sizeof path, "%.*s/%s", tb_dir_len(dir), dir, files[i]);
        if (stat(path, &sb) != 0) {
            snprintf(detail, sizeof detail, "; %s is missing", files[i]);
            return not_found(err, dir, detail);
        }
        *bytes += (int64_t)sb.st_size;
    }
    return TB_OK;
}

/* The published image count of a split (a split that is neither is refused later). */
static int64_t published_n(const char *split)
{
    return split && strcmp(split, "test") == 0 ? TB_FMNIST_TEST_N : TB_FMNIST_TRAIN_N;
}

tb_status tb_fmnist_load(const char *dir, const char *split, tb_image_dataset *out,
                         tb_error *err)
{
    return tb_fmnist_load_n(dir, split, published_n(split), out, err);
}

tb_status tb_fmnist_read(const char *dir, const char *split, tb_fmnist_split *out,
                         tb_error *err)
{
    return tb_fmnist_read_split(dir, split, published_n(split), out, err);
}

void tb_fmnist_split_free(tb_fmnist_split *s)
{
    if (!s) return;
    tb_idx_free(&s->images);
    tb_idx_free(&s->labels);
    s->n = 0;
}

tb_status tb_fmnist_read_split(const char *dir, const char *split, int64_t want_n,
                               tb_fmnist_split *out, tb_error *err)
{
    if (!out) return tb_fail(err, TB_ERR_INVALID, "tb_fmnist_load: out is NULL");
    memset(out, 0, sizeof *out);
    if (!split) return tb_fail(err, TB_ERR_INVALID, "tb_fmnist_load: split is NULL");
    if (!dir) dir = TB_FMNIST_DEFAULT_DIR;
    const char *prefix;
    if (strcmp(split, "train") == 0)
        prefix = "train";
    else if (strcmp(split, "test") == 0)
        prefix = "t10k";
    else
        return tb_fail(err, TB_ERR_INVALID,
                       "Fashion-MNIST has no split \"%s\" (the splits are train and test)",
                       split);
    if (!is_dir(dir)) return not_found(err, dir, "");

    char images_name[64], labels_name[64];
    snprintf(images_name, sizeof images_name, "%s-images-idx3-ubyte.gz", prefix);
    snprintf(labels_name, sizeof labels_name, "%s-labels-idx1-ubyte.gz", prefix);
    char images_path[4096], labels_path[4096];
    tb_idx *images = &out->images, *labels = &out->labels;
    /* images have 3 dimensions (0x803), labels 1 (0x801): checked before the rest is read */
    tb_status st = read_part(dir, images_name, 3, images_path, sizeof images_path, images, err);
    if (st == TB_OK)
        st = read_part(dir, labels_name, 1, labels_path, sizeof labels_path, labels, err);
    if (st != TB_OK) goto done;

    /* the data set's fixed sizes: 28 x 28 images, 60000 for training and 10000 for test (the
     * workloads' models and targets mean these; other files are not Fashion-MNIST) */
    int64_t n = images->dims[0], height = images->dims[1], width = images->dims[2];
    if (height != TB_FMNIST_SIDE || width != TB_FMNIST_SIDE) {
        st = tb_fail(err, TB_ERR_FORMAT,
                     "%s holds %lld images of %lld x %lld pixels; Fashion-MNIST's images are "
                     "%d x %d",
                     images_path, (long long)n, (long long)height, (long long)width,
                     TB_FMNIST_SIDE, TB_FMNIST_SIDE);
        goto done;
    }
    if (labels->dims[0] != n) {
        st = tb_fail(err, TB_ERR_FORMAT, "%s has %lld images but %s has %lld labels", images_path,
                     (long long)n, labels_path, (long long)labels->dims[0]);
        goto done;
    }
    bool test = strcmp(prefix, "t10k") == 0;
    if ((want_n > 0 && n != want_n) || n == 0) {
        int64_t other = test ? TB_FMNIST_TRAIN_N : TB_FMNIST_TEST_N;
        st = tb_fail(err, TB_ERR_FORMAT,
                     "%s holds %lld images; Fashion-MNIST's %s set has %lld%s", images_path,
                     (long long)n, test ? "test" : "training",
                     (long long)(want_n > 0 ? want_n : test ? TB_FMNIST_TEST_N
                                                            : TB_FMNIST_TRAIN_N),
                     n == other ? " (are the train and t10k files swapped?)" : "");
        goto done;
    }
    for (int64_t i = 0; i < n; i++) {
        if (labels->data[i] >= TB_FMNIST_CLASSES) {
            st = tb_fail(err, TB_ERR_FORMAT,
                         "%s: label %d of example %lld is out of range (classes are 0 to %d)",
                         labels_path, labels->data[i], (long long)i, TB_FMNIST_CLASSES - 1);
            goto done;
        }
    }
    out->n = n;

done:
    if (st != TB_OK) tb_fmnist_split_free(out);
    return st;
}

tb_status tb_fmnist_load_n(const char *dir, const char *split, int64_t want_n,
                           tb_image_dataset *out, tb_error *err)
{
    if (!out) return tb_fail(err, TB_ERR_INVALID, "tb_fmnist_load: out is NULL");
    memset(out, 0, sizeof *out);
    tb_fmnist_split s;
    tb_status st = tb_fmnist_read_split(dir, split, want_n, &s, err);
    if (st != TB_OK) return st;
    out->images = malloc((size_t)s.images.size * sizeof(float));
    out->labels = malloc((size_t)s.n * sizeof(int32_t));
    if (!out->images || !out->labels) {
        st = tb_fail(err, TB_ERR_NOMEM, "Fashion-MNIST %s: out of memory for %lld images", split,
                     (long long)s.n);
        tb_image_dataset_free(out);
        tb_fmnist_split_free(&s);
        return st;
    }
    tb_fmnist_pixels(s.images.data, s.images.size, out->images);
    for (int64_t i = 0; i < s.n; i++) out->labels[i] = s.labels.data[i];
    out->n = s.n;
    out->channels = 1;
    out->height = TB_FMNIST_SIDE;
    out->width = TB_FMNIST_SIDE;
    out->classes = TB_FMNIST_CLASSES;
    tb_fmnist_split_free(&s);
    return TB_OK;
}
