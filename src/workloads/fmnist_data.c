/* fmnist_data.c: Fashion-MNIST as a workload's examples: ids 0..60000 are the official
 * training set, 60000..70000 the test set; targets are the class (classifiers) or the image
 * itself (the autoencoder). Read directly from the package's files (already fast): no cache. */
#include "workloads/workload_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct fmnist_data {
    tb_image_dataset train, test;
    int32_t *classes; /* train then test */
    int64_t dim;
    bool reconstruct;
} fmnist_data;

static void fmnist_free(void *p)
{
    fmnist_data *d = p;
    if (!d) return;
    tb_image_dataset_free(&d->train);
    tb_image_dataset_free(&d->test);
    free(d->classes);
    free(d);
}

static void fmnist_read(const void *p, int64_t id, void *x, void *y)
{
    const fmnist_data *d = p;
    const tb_image_dataset *ds = id < d->train.n ? &d->train : &d->test;
    int64_t row = id < d->train.n ? id : id - d->train.n;
    const float *img = ds->images + row * d->dim;
    memcpy(x, img, (size_t)d->dim * sizeof(float));
    if (d->reconstruct)
        memcpy(y, img, (size_t)d->dim * sizeof(float));
    else
        *(int32_t *)y = ds->labels[row];
}

tb_status tb_fmnist_source_load(tb_workload *wl, const tb_workload_config *cfg, bool reconstruct,
                                tb_error *err)
{
    fmnist_data *d = calloc(1, sizeof *d);
    if (!d) return tb_fail(err, TB_ERR_NOMEM, "cannot allocate Fashion-MNIST");
    wl->src.data = d;
    wl->src.free_data = fmnist_free;
    tb_status st = tb_fmnist_load(cfg->data_dir, "train", &d->train, err);
    if (st == TB_OK) st = tb_fmnist_load(cfg->data_dir, "test", &d->test, err);
    if (st != TB_OK) return st;
    int64_t n = d->train.n + d->test.n;
    d->classes = malloc((size_t)n * sizeof *d->classes);
    if (!d->classes) return tb_fail(err, TB_ERR_NOMEM, "out of memory for Fashion-MNIST");
    memcpy(d->classes, d->train.labels, (size_t)d->train.n * sizeof(int32_t));
    memcpy(d->classes + d->train.n, d->test.labels, (size_t)d->test.n * sizeof(int32_t));
    d->dim = (int64_t)d->train.channels * d->train.height * d->train.width;
    d->reconstruct = reconstruct;
    tb_example_source *s = &wl->src;
    s->n = n;
    s->n_official_train = d->train.n;
    s->classes_of = d->classes;
    s->classes = d->train.classes;
    s->read = fmnist_read;
    s->layout = (tb_example_layout){.x_dtype = TB_F32, .x_ndim = 3,
                                    .x_shape = {d->train.channels, d->train.height,
                                                d->train.width},
                                    .image = true};
    if (reconstruct) {
        s->layout.target_is_input = true;
        s->layout.y_dtype = TB_F32;
        s->layout.y_ndim = 1;
        s->layout.y_shape[0] = d->dim;
    } else {
        s->layout.y_dtype = TB_I32;
        s->layout.y_ndim = 0;
    }
    return TB_OK;
}

tb_status tb_fmnist_prepare(const tb_workload_config *cfg, bool force, tb_prepare_report *report,
                            tb_error *err)
{
    (void)force;
    const char *dir = cfg->data_dir ? cfg->data_dir : TB_FMNIST_DEFAULT_DIR;
    /* read and checked as train reads them (the same loader, in the same order), so prepare
     * fails exactly where train would; nothing is kept */
    int64_t n[2] = {0, 0};
    static const char *const splits[2] = {"train", "test"};
    for (int i = 0; i < 2; i++) {
        tb_image_dataset ds;
        tb_status st = tb_fmnist_load(cfg->data_dir, splits[i], &ds, err);
        if (st != TB_OK) return st;
        n[i] = ds.n;
        tb_image_dataset_free(&ds);
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
