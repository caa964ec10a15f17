/* example_source.c: what every data source shares: the bytes of an example, freeing a source. */
#include "data/source.h"

#include <string.h>

static size_t bytes_of(tb_dtype dtype, int ndim, const int64_t *shape)
{
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) n *= shape[i];
    return (size_t)n * tb_dtype_size(dtype);
}

size_t tb_example_x_bytes(const tb_example_layout *l)
{
    return l ? bytes_of(l->x_dtype, l->x_ndim, l->x_shape) : 0;
}

size_t tb_example_y_bytes(const tb_example_layout *l)
{
    return l ? bytes_of(l->y_dtype, l->y_ndim, l->y_shape) : 0;
}

void tb_example_source_free(tb_example_source *src)
{
    if (!src) return;
    if (src->free_data) src->free_data(src->data);
    memset(src, 0, sizeof *src);
}
