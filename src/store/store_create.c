/* store_create.c: why a new results store cannot be created, in words: its directory does not
 * exist, is not a directory, is not writable, or the disk is full; not SQLite's "unable to
 * open database file". */
/* statvfs, lstat */
#define _XOPEN_SOURCE 700

#include "store/store_impl.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

/* The directory of path ("." for a bare name), in dir. */
static void store_dir(const char *path, char *dir, size_t cap)
{
    const char *slash = strrchr(path, '/');
    if (!slash) snprintf(dir, cap, ".");
    else if (slash == path) snprintf(dir, cap, "/");
    else snprintf(dir, cap, "%.*s", (int)(slash - path), path);
}

tb_status tb_store_create_check(const char *path, tb_error *err)
{
    struct stat sb;
    if (lstat(path, &sb) == 0 || errno != ENOENT) {
        if (errno == ENOTDIR) /* a part of the path is a file */
            return tb_fail(err, TB_ERR_IO, "cannot create the results store %s: a part of its "
                           "directory is a file, not a directory (ENOTDIR)", path);
        return TB_OK; /* there: SQLite opens it, or says why not */
    }
    char dir[1100];
    store_dir(path, dir, sizeof dir);
    if (stat(dir, &sb) != 0)
        return tb_fail(err, TB_ERR_IO, "cannot create the results store %s: its directory %s "
                       "%s (%s)", path, dir, errno == ENOENT ? "does not exist" :
                       "cannot be reached", strerror(errno));
    if (!S_ISDIR(sb.st_mode))
        return tb_fail(err, TB_ERR_IO, "cannot create the results store %s: %s is not a "
                       "directory", path, dir);
    if (access(dir, W_OK | X_OK) != 0)
        return tb_fail(err, TB_ERR_IO, "cannot create the results store %s: its directory %s "
                       "is not writable (%s)", path, dir, strerror(errno));
    return TB_OK;
}

tb_status tb_store_create_failed(const char *path, sqlite3 *db, tb_error *err)
{
    char dir[1100];
    store_dir(path, dir, sizeof dir);
    struct statvfs vf;
    bool full = db && (sqlite3_errcode(db) & 0xff) == SQLITE_FULL;
    if (full || (statvfs(dir, &vf) == 0 && vf.f_bavail == 0))
        return tb_fail(err, TB_ERR_IO, "cannot create the results store %s: the disk of %s is "
                       "full (ENOSPC)", path, dir);
    return err ? err->status : TB_ERR_IO;
}
