/* path_impl.h: joining a data directory and a file name; naming what a path is (internal). */
#ifndef TRAINBENCH_PATH_IMPL_H
#define TRAINBENCH_PATH_IMPL_H

#include <string.h>
#include <sys/stat.h>

/* The length of dir without its trailing slashes ("/" stays "/"): with "%.*s/%s" a directory
 * given as "dir/" makes dir/file, not dir//file. */
static inline int tb_dir_len(const char *dir)
{
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/') n--;
    if (n == 1 && dir[0] == '/') n = 0; /* "/" + "/" + file: /file */
    return (int)n;
}

/* What a file that is not a regular one is, for messages ("a FIFO", "a directory"...). */
static inline const char *tb_file_kind(mode_t mode)
{
    if (S_ISFIFO(mode)) return "a FIFO";
    if (S_ISDIR(mode)) return "a directory";
    if (S_ISSOCK(mode)) return "a socket";
    if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device";
    return "not a regular file";
}

#endif
