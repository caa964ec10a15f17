/* path_impl.h: joining a data directory and a file name (internal). */
#ifndef TRAINBENCH_PATH_IMPL_H
#define TRAINBENCH_PATH_IMPL_H

#include <string.h>

/* The length of dir without its trailing slashes ("/" stays "/"): with "%.*s/%s" a directory
 * given as "dir/" makes dir/file, not dir//file. */
static inline int tb_dir_len(const char *dir)
{
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/') n--;
    if (n == 1 && dir[0] == '/') n = 0; /* "/" + "/" + file: /file */
    return (int)n;
}

#endif
