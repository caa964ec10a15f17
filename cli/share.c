/* share.c: where the command's shipped files are (search spaces, studies, the hardware
 * reference): the first of
 *   1. $TRAINBENCH_DATA_DIR, when set (and not empty);
 *   2. TB_SHARE_RELATIVE beside the executable (an installed trainbench: <prefix>/bin/trainbench
 *      finds <prefix>/share/trainbench, wherever the prefix was moved to);
 *   3. the source tree it was built from (a build-tree binary), while it still exists;
 *   4. the install prefix's share/trainbench, compiled in;
 * a directory counting when it holds search_spaces/. */
#include "cli.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef TB_SHARE_RELATIVE
#define TB_SHARE_RELATIVE "../share/trainbench"
#endif
#ifndef TB_SHARE_SOURCE
#define TB_SHARE_SOURCE "."
#endif
#ifndef TB_SHARE_INSTALLED
#define TB_SHARE_INSTALLED "/usr/local/share/trainbench"
#endif

static bool holds_data(const char *dir)
{
    char path[PATH_MAX];
    struct stat sb;
    int len = snprintf(path, sizeof path, "%s/search_spaces", dir);
    return len > 0 && (size_t)len < sizeof path && stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

/* The executable's directory joined with TB_SHARE_RELATIVE, or "" when /proc says nothing. */
static void beside_executable(char *out, size_t cap)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    out[0] = 0;
    if (n <= 0) return;
    exe[n] = 0;
    char *slash = strrchr(exe, '/');
    if (!slash) return;
    *slash = 0;
    int len = snprintf(out, cap, "%s/%s", exe, TB_SHARE_RELATIVE);
    if (len < 0 || (size_t)len >= cap) out[0] = 0; /* too long to be a path */
}

const char *tb_cli_share_dir(char *out, size_t cap)
{
    const char *env = getenv("TRAINBENCH_DATA_DIR");
    if (env && env[0]) {
        snprintf(out, cap, "%s", env);
        return out;
    }
    beside_executable(out, cap);
    if (out[0] && holds_data(out)) {
        char real[PATH_MAX];
        if (realpath(out, real)) snprintf(out, cap, "%s", real);
        return out;
    }
    snprintf(out, cap, "%s", holds_data(TB_SHARE_SOURCE) ? TB_SHARE_SOURCE : TB_SHARE_INSTALLED);
    return out;
}

const char *tb_cli_share_path(const char *rel, char *out, size_t cap)
{
    char dir[PATH_MAX];
    tb_cli_share_dir(dir, sizeof dir);
    snprintf(out, cap, "%s/%s", dir, rel);
    return out;
}
