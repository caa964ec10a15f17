/* fmnist_data.c: Fashion-MNIST as numbered examples: ids 0..60000 are the official training
 * set, 60000..70000 the test set; targets are the class (classifiers) or the image itself (the
 * autoencoder). Read directly from the package's files (already fast): no cache. The pixels
 * stay bytes, converted to floats as each image is read. */
#include "data/source.h"
#include "data/fmnist_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { PIXELS = TB_FMNIST_SIDE * TB_FMNIST_SIDE }; /* an image's */

typedef struct fmnist_data {
    tb_fmnist_split train, test;
    int32_t *classes; /* train then test */
    bool reconstruct;
} fmnist_data;

static void fmnist_free(void *p)
{
    fmnist_data *d = p;
    if (!d) return;
    tb_fmnist_split_free(&d->train);
    tb_fmnist_split_free(&d->test);
    free(d->classes);
    free(d);
}

static void fmnist_read(const void *p, int64_t id, void *x, void *y)
{
    const fmnist_data *d = p;
    const tb_fmnist_split *s = id < d->train.n ? &d->train : &d->test;
    const int64_t row = id < d->train.n ? id : id - d->train.n;
    tb_fmnist_pixels(s->images.data + row * PIXELS, PIXELS, x);
    if (d->reconstruct)
        memcpy(y, x, PIXELS * sizeof(float));
    else
        *(int32_t *)y = d->classes[id];
}

tb_status tb_fmnist_source_load(const char *data_dir, bool reconstruct, tb_example_source *out,
                                tb_error *err)
{
    memset(out, 0, sizeof *out);
    fmnist_data *d = calloc(1, sizeof *d);
    if (!d) return tb_fail(err, TB_ERR_NOMEM, "cannot allocate Fashion-MNIST");
    tb_status st = tb_fmnist_read(data_dir, "train", &d->train, err);
    if (st == TB_OK) st = tb_fmnist_read(data_dir, "test", &d->test, err);
    int64_t n = d->train.n + d->test.n;
    if (st == TB_OK && !(d->classes = malloc((size_t)n * sizeof *d->classes)))
        st = tb_fail(err, TB_ERR_NOMEM, "out of memory for Fashion-MNIST");
    if (st != TB_OK) {
        fmnist_free(d);
        return st;
    }
    for (int64_t i = 0; i < n; i++)
        d->classes[i] = i < d->train.n ? d->train.labels.data[i]
                                       : d->test.labels.data[i - d->train.n];
    d->reconstruct = reconstruct;
    tb_example_layout layout = {.x_dtype = TB_F32, .x_ndim = 3,
                                .x_shape = {1, TB_FMNIST_SIDE, TB_FMNIST_SIDE},
                                .image = true, .y_dtype = TB_I32, .y_ndim = 0};
    if (reconstruct) { /* the target is the image itself, flat */
        layout.target_is_input = true;
        layout.y_dtype = TB_F32;
        layout.y_ndim = 1;
        layout.y_shape[0] = PIXELS;
    }
    *out = (tb_example_source){
        .n = n,
        .n_official_train = d->train.n,
        .classes_of = d->classes,
        .classes = TB_FMNIST_CLASSES,
        .layout = layout,
        .read = fmnist_read,
        .data = d,
        .free_data = fmnist_free,
    };
    return TB_OK;
}

tb_status tb_fmnist_prepare(const char *data_dir, const char *cache_dir, bool force,
                            tb_prepare_report *report, tb_error *err)
{
    (void)cache_dir, (void)force; /* nothing to cache */
    const char *dir = data_dir ? data_dir : TB_FMNIST_DEFAULT_DIR;
    /* read and checked as train reads them (the same loader, in the same order), so prepare
     * fails exactly where train would; nothing is kept */
    int64_t n[2] = {0, 0};
    static const char *const splits[2] = {"train", "test"};
    for (int i = 0; i < 2; i++) {
        tb_fmnist_split s;
        tb_status st = tb_fmnist_read(data_dir, splits[i], &s, err);
        if (st != TB_OK) return st;
        n[i] = s.n;
        tb_fmnist_split_free(&s);
    }
    int64_t bytes;
    tb_status st = tb_fmnist_files(dir, &bytes, err);
    if (st != TB_OK) return st;
    report->path[0] = '\0';
    report->rebuilt = false;
    snprintf(report->reason, sizeof report->reason,
             "read directly from %s (no cache needed); checked: %lld training and %lld test "
             "images",
             dir, (long long)n[0], (long long)n[1]);
    report->bytes = bytes;
    return TB_OK;
}
