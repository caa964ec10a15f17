/* test_data.c: the gzip IDX reader and the Fashion-MNIST loader, on the installed files of the
 * Debian package dataset-fashion-mnist and on small malformed files written to a temp dir. */
#include "testutil.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "trainbench/data.h"
#include "data/fmnist_impl.h"
#include "data/source.h"

/* ---- helpers: build IDX bytes and write them, gzip-compressed or not ---------------------- */

typedef struct buf {
    uint8_t *p;
    size_t n, cap;
} buf;

static void buf_put(buf *b, const void *src, size_t n)
{
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2 + 64;
        b->p = realloc(b->p, b->cap);
        if (!b->p) abort();
    }
    memcpy(b->p + b->n, src, n);
    b->n += n;
}

static void buf_u32(buf *b, uint32_t v)
{
    uint8_t x[4] = {(uint8_t)(v >> 24), (uint8_t)(v >> 16), (uint8_t)(v >> 8), (uint8_t)v};
    buf_put(b, x, 4);
}

/* An IDX header with ndim dims, then payload_bytes bytes of value (i * 7 + salt) % mod. */
static buf idx_bytes(uint32_t magic, int ndim, const uint32_t *dims, size_t payload_bytes,
                     int mod)
{
    buf b = {0};
    buf_u32(&b, magic);
    for (int d = 0; d < ndim; d++) buf_u32(&b, dims[d]);
    for (size_t i = 0; i < payload_bytes; i++) {
        uint8_t v = (uint8_t)((i * 7 + 3) % (size_t)mod);
        buf_put(&b, &v, 1);
    }
    return b;
}

static void write_gz(const char *path, const void *data, size_t n)
{
    gzFile f = gzopen(path, "wb");
    if (!f || (n > 0 && gzwrite(f, data, (unsigned)n) != (int)n) || gzclose(f) != Z_OK) {
        fprintf(stderr, "cannot write %s\n", path);
        exit(1);
    }
}

static void write_raw(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, n, f) != n || fclose(f) != 0) {
        fprintf(stderr, "cannot write %s\n", path);
        exit(1);
    }
}

static uint8_t *read_raw(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *p = malloc((size_t)len + 1);
    *n = fread(p, 1, (size_t)len, f);
    fclose(f);
    return p;
}

static char tmpdir[256];

static const char *tmp_path(char *out, const char *name)
{
    snprintf(out, 512, "%s/%s", tmpdir, name);
    return out;
}

/* Writes a Fashion-MNIST-like split into dir: n images of h x w, n_labels labels < label_mod. */
static void write_split(const char *dir, const char *prefix, uint32_t n, uint32_t h, uint32_t w,
                        uint32_t n_labels, int label_mod)
{
    char path[512];
    uint32_t idims[3] = {n, h, w};
    buf img = idx_bytes(0x803, 3, idims, (size_t)n * h * w, 256);
    snprintf(path, sizeof path, "%s/%s-images-idx3-ubyte.gz", dir, prefix);
    write_gz(path, img.p, img.n);
    free(img.p);
    buf lab = idx_bytes(0x801, 1, &n_labels, n_labels, label_mod);
    snprintf(path, sizeof path, "%s/%s-labels-idx1-ubyte.gz", dir, prefix);
    write_gz(path, lab.p, lab.n);
    free(lab.p);
}

/* ---- the installed data set ------------------------------------------------------------------ */

static bool fmnist_installed(void)
{
    struct stat st;
    return stat(TB_FMNIST_DEFAULT_DIR "/train-images-idx3-ubyte.gz", &st) == 0;
}

static void check_split(const char *split, int64_t want_n, double want_mean)
{
    tb_image_dataset ds = {0};
    tb_error err = {0};
    if (!CHECK_OK(tb_fmnist_load(NULL, split, &ds, &err), &err)) return;
    CHECK(ds.n == want_n);
    CHECK(ds.channels == 1 && ds.height == 28 && ds.width == 28);
    CHECK(ds.classes == 10);
    int64_t counts[10] = {0};
    bool labels_ok = true;
    for (int64_t i = 0; i < ds.n; i++) {
        if (ds.labels[i] < 0 || ds.labels[i] >= 10) {
            labels_ok = false;
            continue;
        }
        counts[ds.labels[i]]++;
    }
    CHECK(labels_ok);
    for (int c = 0; c < 10; c++) CHECK(counts[c] == want_n / 10);
    int64_t total = ds.n * 28 * 28;
    float lo = 1, hi = 0;
    double sum = 0;
    for (int64_t i = 0; i < total; i++) {
        float v = ds.images[i];
        lo = v < lo ? v : lo;
        hi = v > hi ? v : hi;
        sum += v;
    }
    CHECK(lo == 0.0f);
    CHECK(hi == 1.0f);
    CHECK_NEAR(sum / (double)total, want_mean, 0.002);
    tb_image_dataset_free(&ds);
    CHECK(ds.images == NULL && ds.labels == NULL && ds.n == 0);
    tb_image_dataset_free(&ds); /* twice is fine */
}

static void test_real_fashion_mnist(void)
{
    if (!fmnist_installed()) {
        printf("note: Fashion-MNIST is not installed in %s (apt-get install "
               "dataset-fashion-mnist); skipping the real-data checks\n",
               TB_FMNIST_DEFAULT_DIR);
        return;
    }
    check_split("train", 60000, 0.2860);
    check_split("test", 10000, 0.2868);

    /* the raw reader on the labels file */
    tb_idx idx = {0};
    tb_error err = {0};
    CHECK_OK(tb_idx_read(TB_FMNIST_DEFAULT_DIR "/t10k-labels-idx1-ubyte.gz", &idx, &err), &err);
    CHECK(idx.ndim == 1 && idx.dims[0] == 10000 && idx.size == 10000 && idx.data);
    tb_idx_free(&idx);
    CHECK(idx.data == NULL && idx.size == 0);
}

/* The workloads' example source keeps the pixels as bytes and converts each image as it is
 * read: every read must give tb_fmnist_load's floats bit for bit, the test images after the
 * 60000 training ones, and the image itself as the autoencoder's target. */
static void test_fmnist_source_matches_loader(void)
{
    if (!fmnist_installed()) return; /* test_real_fashion_mnist says so */
    tb_error err = {0};
    tb_image_dataset split[2] = {{0}, {0}};
    tb_example_source classes = {0}, images = {0};
    if (!CHECK_OK(tb_fmnist_load(NULL, "train", &split[0], &err), &err) ||
        !CHECK_OK(tb_fmnist_load(NULL, "test", &split[1], &err), &err) ||
        !CHECK_OK(tb_fmnist_source_load(NULL, false, &classes, &err), &err) ||
        !CHECK_OK(tb_fmnist_source_load(NULL, true, &images, &err), &err))
        goto done;
    CHECK(classes.n == 70000 && classes.n_official_train == 60000 && classes.classes == 10);
    CHECK(images.n == 70000 && images.layout.target_is_input && images.layout.y_shape[0] == 784);
    const int64_t ids[] = {0, 1, 4321, 59999, 60000, 60001, 65432, 69999};
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
        const int64_t id = ids[i], row = id < 60000 ? id : id - 60000;
        const tb_image_dataset *ds = &split[id < 60000 ? 0 : 1];
        const float *want = ds->images + row * 784;
        float x[784], y[784];
        int32_t label = -1;
        classes.read(classes.data, id, x, &label);
        CHECK(memcmp(x, want, sizeof x) == 0);
        CHECK(label == ds->labels[row] && classes.classes_of[id] == label);
        memset(x, 0, sizeof x);
        images.read(images.data, id, x, y);
        CHECK(memcmp(x, want, sizeof x) == 0 && memcmp(y, want, sizeof y) == 0);
    }
done:
    tb_example_source_free(&classes);
    tb_example_source_free(&images);
    tb_image_dataset_free(&split[0]);
    tb_image_dataset_free(&split[1]);
}

static void test_class_names(void)
{
    CHECK(strcmp(tb_fmnist_class_name(0), "T-shirt/top") == 0);
    CHECK(strcmp(tb_fmnist_class_name(5), "Sandal") == 0);
    CHECK(strcmp(tb_fmnist_class_name(9), "Ankle boot") == 0);
    CHECK(tb_fmnist_class_name(10) == NULL);
    CHECK(tb_fmnist_class_name(-1) == NULL);
}

/* ---- the IDX reader on small files ---------------------------------------------------------- */

static void test_idx_good_and_dims(void)
{
    char path[512];
    tb_error err = {0};
    tb_idx idx = {0};
    uint32_t dims[3] = {3, 2, 5};
    buf b = idx_bytes(0x803, 3, dims, 30, 256);
    write_gz(tmp_path(path, "good.gz"), b.p, b.n);
    if (CHECK_OK(tb_idx_read(path, &idx, &err), &err)) {
        CHECK(idx.ndim == 3 && idx.dims[0] == 3 && idx.dims[1] == 2 && idx.dims[2] == 5);
        CHECK(idx.dims[3] == 0 && idx.size == 30);
        CHECK(memcmp(idx.data, b.p + 16, 30) == 0);
    }
    tb_idx_free(&idx);
    free(b.p);

    /* absurd dimensions: the product overflows the limit; nothing is allocated for it */
    uint32_t huge[3] = {0xffffffffu, 0xffffffffu, 0xffffffffu};
    b = idx_bytes(0x803, 3, huge, 10, 256);
    write_gz(tmp_path(path, "huge.gz"), b.p, b.n);
    CHECK_FAILS(tb_idx_read(path, &idx, &err), TB_ERR_FORMAT, &err, "absurd dimensions");
    CHECK(idx.data == NULL && idx.ndim == 0);
    free(b.p);
    /* a count of 0xffffffff with 28 x 28 images: the message gives every dimension, not only
     * the one where the product passed the limit (it said "dimension 1 is 28") */
    uint32_t count[3] = {0xffffffffu, 28, 28};
    b = idx_bytes(0x803, 3, count, 10, 256);
    write_gz(tmp_path(path, "count.gz"), b.p, b.n);
    CHECK_FAILS(tb_idx_read(path, &idx, &err), TB_ERR_FORMAT, &err,
                "absurd dimensions 4294967295 x 28 x 28: the data would exceed 17179869184 bytes");
    free(b.p);

    /* a large but representable size with little data: truncated, not an allocation of 4 GiB */
    uint32_t big[2] = {65536, 65536};
    b = idx_bytes(0x802, 2, big, 100, 256);
    write_gz(tmp_path(path, "big.gz"), b.p, b.n);
    CHECK_FAILS(tb_idx_read(path, &idx, &err), TB_ERR_FORMAT, &err, "byte offset 112");
    CHECK(strstr(err.message, "expected 4294967296 bytes") != NULL);
    free(b.p);
}

static void test_idx_wrong_magic(void)
{
    char path[512];
    tb_error err = {0};
    tb_idx idx = {0};
    uint32_t dims[1] = {4};
    buf b = idx_bytes(0x0d01, 1, dims, 16, 256); /* float type, not unsigned bytes */
    write_gz(tmp_path(path, "float.gz"), b.p, b.n);
    CHECK_FAILS(tb_idx_read(path, &idx, &err), TB_ERR_FORMAT, &err, "wrong magic 0x00000d01");
    CHECK(strstr(err.message, path) != NULL);
    free(b.p);
    b = idx_bytes(0x12345678, 0, NULL, 8, 256);
    write_gz(tmp_path(path, "magic.gz"), b.p, b.n);
    CHECK_FAILS(tb_idx_read(path, &idx, &err), TB_ERR_FORMAT, &err, "wrong magic 0x12345678");
    CHECK(strstr(err.message, "expected 0x00000801") != NULL);
    free(b.p);
    /* an images file whose magic says labels (0x801) but holds images' header and payload:
     * the kind is checked first, not the length the wrong kind implies ("... bytes after the
     * end of the data") */
    uint32_t img[3] = {6, 3, 2};
    b = idx_bytes(0x801, 3, img, 36, 256);
    write_gz(tmp_path(path, "kind.gz"), b.p, b.n);
    CHECK_FAILS(tb_idx_read_ndim(path, 3, &idx, &err), TB_ERR_FORMAT, &err,
                "wrong magic 0x00000801, expected 0x00000803 (an array of 3 dimensions; the "
                "file declares 1)");
    CHECK(strstr(err.message, "after the end") == NULL && idx.data == NULL);
    CHECK_FAILS(tb_idx_read(path, &idx, &err), TB_ERR_FORMAT, &err, "after the end");
    CHECK_FAILS(tb_idx_read_ndim(path, 5, &idx, &err), TB_ERR_INVALID, &err, "dimensions");
    free(b.p);
}

static void test_idx_truncated(void)
{
    char path[512];
    tb_error err = {0};
    tb_idx idx = {0};
    uint32_t dims[3] = {10, 4, 4};
    buf b = idx_bytes(0x803, 3, dims, 100, 256); /* 160 bytes declared, 100 present */
    write_gz(tmp_path(path, "short.gz"), b.p, b.n);
    CHECK_FAILS(tb_idx_read(path, &idx, &err), TB_ERR_FORMAT, &err, "truncated");
    CHECK(strstr(err.message, path) != NULL);
    CHECK(strstr(err.message, "expected 160 bytes") != NULL);
    CHECK(strstr(err.message, "byte offset 116") != NULL);
    CHECK(idx.data == NULL);
    /* the header itself cut short */
    write_gz(tmp_path(path, "shorthead.gz"), b.p, 9);
    CHECK_FAILS(tb_idx_read(path, &idx, &err), TB_ERR_FORMAT, &err, "byte offset 9");
    write_gz(tmp_path(path, "empty.gz"), b.p, 0);
    CHECK_FAILS(tb_idx_read(path, &idx, &err), TB_ERR_FORMAT, &err, "byte offset 0");
    free(b.p);
}

static void test_idx_trailing_bytes(void)
{
    char path[512];
    tb_error err = {0};
    tb_idx idx = {0};
    uint32_t dims[1] = {20};
    buf b = idx_bytes(0x801, 1, dims, 27, 10); /* 7 bytes too many */
    write_gz(tmp_path(path, "long.gz"), b.p, b.n);
    CHECK_FAILS(tb_idx_read(path, &idx, &err), TB_ERR_FORMAT, &err,
                "7 bytes after the end of the data");
    CHECK(idx.data == NULL);
    free(b.p);
}

static void test_idx_not_gzip_and_corrupt(void)
{
    char path[512];
    tb_error err = {0};
    tb_idx idx = {0};
    uint32_t dims[1] = {2000};
    buf b = idx_bytes(0x801, 1, dims, 2000, 10);

    /* an uncompressed IDX file */
    write_raw(tmp_path(path, "plain"), b.p, b.n);
    CHECK_FAILS(tb_idx_read(path, &idx, &err), TB_ERR_FORMAT, &err, "not a gzip file");

    /* a gzip stream with flipped bytes in the deflate data */
    char good[512];
    write_gz(tmp_path(good, "ok.gz"), b.p, b.n);
    CHECK_OK(tb_idx_read(good, &idx, &err), &err);
    tb_idx_free(&idx);
    size_t n = 0;
    uint8_t *gz = read_raw(good, &n);
    CHECK(gz != NULL && n > 40);
    for (size_t i = 12; i < n - 8; i++) gz[i] ^= 0xa5;
    write_raw(tmp_path(path, "corrupt.gz"), gz, n);
    CHECK_FAILS(tb_idx_read(path, &idx, &err), TB_ERR_FORMAT, &err, "corrupt gzip stream: ");
    CHECK(strncmp(err.message, path, strlen(path)) == 0);
    /* zlib's own message follows, without the path a second time */
    CHECK(strstr(err.message + strlen(path), path) == NULL);
    CHECK(idx.data == NULL);

    /* the compressed stream cut in the middle */
    free(gz);
    gz = read_raw(good, &n);
    write_raw(tmp_path(path, "cut.gz"), gz, n / 2);
    CHECK_FAILS(tb_idx_read(path, &idx, &err), TB_ERR_FORMAT, &err, "corrupt gzip stream");
    CHECK(idx.data == NULL);
    free(gz);
    free(b.p);
}

static void test_idx_missing(void)
{
    char path[512];
    tb_error err = {0};
    tb_idx idx = {0};
    CHECK_FAILS(tb_idx_read(tmp_path(path, "nope.gz"), &idx, &err), TB_ERR_MISSING, &err,
                "nope.gz");
    CHECK_FAILS(tb_idx_read(tmpdir, &idx, &err), TB_ERR_IO, &err, "not a regular file");
}

/* ---- the Fashion-MNIST loader on small files ------------------------------------------------ */

static void make_dir(char *out, const char *name)
{
    snprintf(out, 512, "%s/%s", tmpdir, name);
    if (mkdir(out, 0700) != 0) {
        fprintf(stderr, "cannot create %s\n", out);
        exit(1);
    }
}

/* Small files of 28 x 28 images: read through tb_fmnist_load_n, which takes any count. */
static void test_fmnist_small_good(void)
{
    char dir[512];
    make_dir(dir, "good");
    write_split(dir, "train", 6, 28, 28, 6, 10);
    write_split(dir, "t10k", 4, 28, 28, 4, 10);
    tb_image_dataset ds = {0};
    tb_error err = {0};
    if (CHECK_OK(tb_fmnist_load_n(dir, "train", 0, &ds, &err), &err)) {
        CHECK(ds.n == 6 && ds.channels == 1 && ds.height == 28 && ds.width == 28);
        CHECK(ds.classes == 10);
        /* pixel i is (i * 7 + 3) % 256, divided by 255 */
        CHECK_NEAR(ds.images[0], 3.0 / 255.0, 1e-7);
        CHECK_NEAR(ds.images[35], (35 * 7 + 3) / 255.0, 1e-7);
        CHECK(ds.labels[0] == 3 && ds.labels[1] == 0 && ds.labels[5] == 8);
    }
    tb_image_dataset_free(&ds);
    CHECK_OK(tb_fmnist_load_n(dir, "test", 4, &ds, &err), &err);
    CHECK(ds.n == 4);
    tb_image_dataset_free(&ds);
    CHECK_FAILS(tb_fmnist_load(dir, "valid", &ds, &err), TB_ERR_INVALID, &err, "valid");
    CHECK_FAILS(tb_fmnist_load(dir, NULL, &ds, &err), TB_ERR_INVALID, &err, "split");
    /* the public loader wants the data set's fixed counts */
    CHECK_FAILS(tb_fmnist_load(dir, "train", &ds, &err), TB_ERR_FORMAT, &err,
                "train-images-idx3-ubyte.gz holds 6 images; Fashion-MNIST's training set has "
                "60000");
    CHECK(strstr(err.message, "swapped") == NULL);
    CHECK_FAILS(tb_fmnist_load(dir, "test", &ds, &err), TB_ERR_FORMAT, &err,
                "t10k-images-idx3-ubyte.gz holds 4 images; Fashion-MNIST's test set has 10000");
    CHECK(ds.images == NULL && ds.labels == NULL && ds.n == 0);
}

/* Images that are not 28 x 28, no images, and a training file with the test set's count. */
static void test_fmnist_sizes(void)
{
    char dir[512];
    tb_image_dataset ds = {0};
    tb_error err = {0};
    /* test images of 20 x 20 beside 28 x 28 training images: were read with the training
     * files' row size (a crash in the workload's reader); refused naming the file */
    make_dir(dir, "dims");
    write_split(dir, "train", 6, 28, 28, 6, 10);
    write_split(dir, "t10k", 4, 20, 20, 4, 10);
    CHECK_OK(tb_fmnist_load_n(dir, "train", 0, &ds, &err), &err);
    tb_image_dataset_free(&ds);
    CHECK_FAILS(tb_fmnist_load_n(dir, "test", 0, &ds, &err), TB_ERR_FORMAT, &err,
                "t10k-images-idx3-ubyte.gz holds 4 images of 20 x 20 pixels; Fashion-MNIST's "
                "images are 28 x 28");
    CHECK_FAILS(tb_fmnist_load(dir, "test", &ds, &err), TB_ERR_FORMAT, &err, "20 x 20 pixels");
    /* 14 x 56: as many pixels as 28 x 28, still not Fashion-MNIST */
    write_split(dir, "train", 6, 14, 56, 6, 10);
    CHECK_FAILS(tb_fmnist_load_n(dir, "train", 0, &ds, &err), TB_ERR_FORMAT, &err,
                "train-images-idx3-ubyte.gz holds 6 images of 14 x 56 pixels");
    /* no images at all */
    write_split(dir, "train", 0, 28, 28, 0, 10);
    CHECK_FAILS(tb_fmnist_load_n(dir, "train", 0, &ds, &err), TB_ERR_FORMAT, &err,
                "holds 0 images");
    /* the training files with the test set's 10000 images: the files look swapped */
    write_split(dir, "train", TB_FMNIST_TEST_N, 28, 28, TB_FMNIST_TEST_N, 10);
    CHECK_FAILS(tb_fmnist_load(dir, "train", &ds, &err), TB_ERR_FORMAT, &err,
                "train-images-idx3-ubyte.gz holds 10000 images; Fashion-MNIST's training set "
                "has 60000 (are the train and t10k files swapped?)");
    CHECK(ds.images == NULL && ds.labels == NULL && ds.n == 0);
}

static void test_fmnist_bad(void)
{
    char dir[512], path[1024];
    tb_image_dataset ds = {0};
    tb_error err = {0};

    /* images and labels disagree in count: both files are named */
    make_dir(dir, "count");
    write_split(dir, "train", 6, 28, 28, 5, 10);
    CHECK_FAILS(tb_fmnist_load_n(dir, "train", 0, &ds, &err), TB_ERR_FORMAT, &err,
                "train-images-idx3-ubyte.gz has 6 images");
    CHECK(strstr(err.message, "train-labels-idx1-ubyte.gz has 5 labels") != NULL);
    CHECK(ds.images == NULL && ds.labels == NULL && ds.n == 0);

    /* a label of 10 or more */
    make_dir(dir, "label");
    write_split(dir, "train", 6, 28, 28, 6, 20); /* labels 3, 10, ... */
    CHECK_FAILS(tb_fmnist_load_n(dir, "train", 0, &ds, &err), TB_ERR_FORMAT, &err,
                "label 10 of example 1 is out of range");
    CHECK(strstr(err.message, "train-labels-idx1-ubyte.gz") != NULL);
    /* a directory given with trailing slashes: dir/file in the message, not dir//file */
    char slashed[600];
    snprintf(slashed, sizeof slashed, "%s//", dir);
    snprintf(path, sizeof path, "%s/train-labels-idx1-ubyte.gz:", dir);
    CHECK_FAILS(tb_fmnist_load_n(slashed, "train", 0, &ds, &err), TB_ERR_FORMAT, &err, path);
    CHECK(strstr(err.message, "//") == NULL);

    /* labels where images belong */
    make_dir(dir, "swapped");
    write_split(dir, "train", 6, 28, 28, 6, 10);
    uint32_t n = 6;
    buf lab = idx_bytes(0x801, 1, &n, 6, 10);
    snprintf(path, sizeof path, "%s/train-images-idx3-ubyte.gz", dir);
    write_gz(path, lab.p, lab.n);
    free(lab.p);
    CHECK_FAILS(tb_fmnist_load(dir, "train", &ds, &err), TB_ERR_FORMAT, &err,
                "wrong magic 0x00000801, expected 0x00000803");
    /* the images' header and payload under the labels' magic: named as the wrong magic */
    uint32_t idims[3] = {6, 28, 28};
    buf img1 = idx_bytes(0x801, 3, idims, 6 * 28 * 28, 256);
    write_gz(path, img1.p, img1.n);
    free(img1.p);
    CHECK_FAILS(tb_fmnist_load(dir, "train", &ds, &err), TB_ERR_FORMAT, &err,
                "train-images-idx3-ubyte.gz: wrong magic 0x00000801, expected 0x00000803");

    /* a directory without the files; a directory that does not exist */
    make_dir(dir, "empty");
    CHECK_FAILS(tb_fmnist_load(dir, "train", &ds, &err), TB_ERR_MISSING, &err,
                "Fashion-MNIST not found in ");
    CHECK(strstr(err.message, dir) != NULL);
    CHECK(strstr(err.message, "train-images-idx3-ubyte.gz") != NULL);
    snprintf(dir, sizeof dir, "%s/no-such-dir", tmpdir);
    CHECK_FAILS(tb_fmnist_load(dir, "test", &ds, &err), TB_ERR_MISSING, &err,
                "the Debian package dataset-fashion-mnist installs in " TB_FMNIST_DEFAULT_DIR);
    CHECK(strncmp(err.message, "Fashion-MNIST not found in ", 27) == 0);
    CHECK(strstr(err.message, dir) != NULL);

    /* images present, labels missing: still where the package puts the files */
    make_dir(dir, "half");
    write_split(dir, "t10k", 4, 28, 28, 4, 10);
    snprintf(path, sizeof path, "%s/t10k-labels-idx1-ubyte.gz", dir);
    CHECK(unlink(path) == 0);
    CHECK_FAILS(tb_fmnist_load(dir, "test", &ds, &err), TB_ERR_MISSING, &err,
                "dataset-fashion-mnist installs in");
    CHECK(strstr(err.message, "t10k-labels-idx1-ubyte.gz is missing") != NULL);

    /* a truncated images file surfaces the IDX reader's message */
    make_dir(dir, "trunc");
    write_split(dir, "train", 6, 28, 28, 6, 10);
    uint32_t dims[3] = {6, 28, 28};
    buf img = idx_bytes(0x803, 3, dims, 20, 256);
    snprintf(path, sizeof path, "%s/train-images-idx3-ubyte.gz", dir);
    write_gz(path, img.p, img.n);
    free(img.p);
    CHECK_FAILS(tb_fmnist_load(dir, "train", &ds, &err), TB_ERR_FORMAT, &err,
                "byte offset 36");
    CHECK(strstr(err.message, "train-images-idx3-ubyte.gz") != NULL);
}

/* Removes the temp directory: its files, its subdirectories' files, then the directories. */
static void remove_tree(const char *dir)
{
    static const char *const subdirs[] = {"good", "count", "label", "swapped", "empty",
                                          "half", "trunc", "dims", NULL};
    static const char *const files[] = {"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
                                        "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz",
                                        NULL};
    static const char *const top[] = {"good.gz", "huge.gz", "count.gz", "kind.gz", "big.gz",
                                      "float.gz", "magic.gz",
                                      "short.gz", "shorthead.gz", "empty.gz", "long.gz", "plain",
                                      "ok.gz", "corrupt.gz", "cut.gz", NULL};
    char path[1024];
    for (int s = 0; subdirs[s]; s++) {
        for (int f = 0; files[f]; f++) {
            snprintf(path, sizeof path, "%s/%s/%s", dir, subdirs[s], files[f]);
            unlink(path);
        }
        snprintf(path, sizeof path, "%s/%s", dir, subdirs[s]);
        rmdir(path);
    }
    for (int f = 0; top[f]; f++) {
        snprintf(path, sizeof path, "%s/%s", dir, top[f]);
        unlink(path);
    }
    CHECK(rmdir(dir) == 0);
}

int main(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/tb_test_data_XXXXXX");
    if (!mkdtemp(tmpdir)) {
        fprintf(stderr, "mkdtemp failed\n");
        return 1;
    }
    test_class_names();
    test_idx_good_and_dims();
    test_idx_wrong_magic();
    test_idx_truncated();
    test_idx_trailing_bytes();
    test_idx_not_gzip_and_corrupt();
    test_idx_missing();
    test_fmnist_small_good();
    test_fmnist_sizes();
    test_fmnist_bad();
    remove_tree(tmpdir);
    test_real_fashion_mnist();
    test_fmnist_source_matches_loader();
    return tb_test_finish("test_data");
}
