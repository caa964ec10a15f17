/* fmnist_impl.h: the Fashion-MNIST loader with another image count (internal; for tests). */
#ifndef TRAINBENCH_FMNIST_IMPL_H
#define TRAINBENCH_FMNIST_IMPL_H

#include "trainbench/data.h"

/* tb_fmnist_load with every check but the split's image count, which must be want_n instead
 * (0: any count but none). tb_fmnist_load is this with 60000 (train) or 10000 (test); the tests
 * read small files of 28 x 28 images through it. */
tb_status tb_fmnist_load_n(const char *dir, const char *split, int64_t want_n,
                           tb_image_dataset *out, tb_error *err);

#endif
