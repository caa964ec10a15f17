/* fmnist_impl.h: the Fashion-MNIST loader as bytes, and with another image count (internal;
 * the example source and the tests). */
#ifndef TRAINBENCH_FMNIST_IMPL_H
#define TRAINBENCH_FMNIST_IMPL_H

#include "trainbench/data.h"

/* tb_fmnist_load with every check but the split's image count, which must be want_n instead
 * (0: any count but none). tb_fmnist_load is this with 60000 (train) or 10000 (test); the tests
 * read small files of 28 x 28 images through it. */
tb_status tb_fmnist_load_n(const char *dir, const char *split, int64_t want_n,
                           tb_image_dataset *out, tb_error *err);

/* One split as its files hold it: n images of 28 x 28 pixels as bytes (pixel / 255 is the
 * float tb_fmnist_load gives) and n labels below 10. A quarter of the floats' memory, and no
 * pass converting 47 million pixels before the first step: the example source converts each
 * image as it is read. */
typedef struct tb_fmnist_split {
    int64_t n;
    tb_idx images; /* n x 28 x 28 */
    tb_idx labels; /* n */
} tb_fmnist_split;

/* tb_fmnist_load_n's reading and every one of its checks, the pixels kept as bytes. On success
 * the caller owns *out (free with tb_fmnist_split_free); on failure *out is zeroed. */
tb_status tb_fmnist_read_split(const char *dir, const char *split, int64_t want_n,
                               tb_fmnist_split *out, tb_error *err);

/* tb_fmnist_read_split with the split's published count (tb_fmnist_load's, as bytes). */
tb_status tb_fmnist_read(const char *dir, const char *split, tb_fmnist_split *out,
                         tb_error *err);

/* Pixels as the data set's floats, byte / 255: the one conversion both readers make. */
static inline void tb_fmnist_pixels(const uint8_t *bytes, int64_t n, float *out)
{
    for (int64_t i = 0; i < n; i++) out[i] = (float)bytes[i] / 255.0f;
}

/* Frees the split's arrays and zeroes it. NULL and zeroed values are fine. */
void tb_fmnist_split_free(tb_fmnist_split *s);

#endif
