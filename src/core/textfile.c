/* textfile.c: a small text file read whole, with limits (textfile.h). */
#include "trainbench/textfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

long tb_utf8_invalid_at(const char *text, size_t n)
{
    const unsigned char *s = (const unsigned char *)text;
    size_t i = 0;
    while (i < n) {
        unsigned c = s[i];
        size_t len;
        uint32_t cp, min;
        if (c < 0x80) {
            i++;
            continue;
        } else if ((c & 0xE0) == 0xC0) {
            len = 2, cp = c & 0x1F, min = 0x80;
        } else if ((c & 0xF0) == 0xE0) {
            len = 3, cp = c & 0x0F, min = 0x800;
        } else if ((c & 0xF8) == 0xF0) {
            len = 4, cp = c & 0x07, min = 0x10000;
        } else {
            return (long)i;
        }
        if (n - i < len) return (long)i;
        for (size_t k = 1; k < len; k++) {
            if ((s[i + k] & 0xC0) != 0x80) return (long)i;
            cp = (cp << 6) | (s[i + k] & 0x3F);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return (long)i;
        i += len;
    }
    return -1;
}

/* Why st is not a file to read as text, or NULL when it is one. */
const char *tb_file_kind(mode_t mode)
{
    if (S_ISFIFO(mode)) return "a FIFO";
    if (S_ISDIR(mode)) return "a directory";
    if (S_ISSOCK(mode)) return "a socket";
    if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device";
    return "not a regular file";
}

static const char *not_regular(const struct stat *st)
{
    if (S_ISREG(st->st_mode)) return NULL;
    if (S_ISDIR(st->st_mode)) return "is a directory, not a file";
    if (S_ISFIFO(st->st_mode)) return "is a FIFO (named pipe), not a regular file";
    if (S_ISSOCK(st->st_mode)) return "is a socket, not a regular file";
    return "is a device, not a regular file";
}

/* The checks on the text read: not empty, no NUL byte, valid UTF-8. */
static tb_status check_text(const char *path, const char *what, const char *buf, size_t n,
                            tb_error *err)
{
    if (n == 0) return tb_fail(err, TB_ERR_INVALID, "%s %s: the file is empty", what, path);
    const char *nul = memchr(buf, '\0', n);
    if (nul)
        return tb_fail(err, TB_ERR_INVALID, "%s %s: holds a NUL byte at offset %ld (not a text "
                       "file)", what, path, (long)(nul - buf));
    long bad = tb_utf8_invalid_at(buf, n);
    if (bad >= 0)
        return tb_fail(err, TB_ERR_INVALID, "%s %s: not valid UTF-8 at byte offset %ld", what,
                       path, bad);
    return TB_OK;
}

tb_status tb_text_file_read(const char *path, const char *what, size_t max_bytes, char **out,
                            bool *missing, tb_error *err)
{
    if (missing) *missing = false;
    if (!out) return tb_fail(err, TB_ERR_INVALID, "text_file_read: out is NULL");
    *out = NULL;
    if (!what) what = "file";
    if (!path) return tb_fail(err, TB_ERR_INVALID, "text_file_read: the path of the %s is NULL",
                              what);
    struct stat sb;
    /* stat first: a FIFO is never opened (open blocks until a writer comes) */
    if (stat(path, &sb) != 0) {
        if (missing) *missing = errno == ENOENT;
        return tb_fail(err, TB_ERR_IO, "cannot open %s %s: %s", what, path, strerror(errno));
    }
    const char *why = not_regular(&sb);
    if (why) return tb_fail(err, TB_ERR_INVALID, "%s %s: %s", what, path, why);
    /* O_NONBLOCK: should the path become a FIFO between stat and open, open does not wait */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return tb_fail(err, TB_ERR_IO, "cannot open %s %s: %s", what, path,
                               strerror(errno));
    tb_status st = TB_OK;
    if (fstat(fd, &sb) != 0 || (why = not_regular(&sb)) != NULL)
        st = tb_fail(err, TB_ERR_INVALID, "%s %s: %s", what, path, why ? why : strerror(errno));
    else if ((uintmax_t)sb.st_size > max_bytes)
        st = tb_fail(err, TB_ERR_INVALID, "%s %s: %lld bytes, more than the %zu allowed", what,
                     path, (long long)sb.st_size, max_bytes);
    char *buf = st == TB_OK ? malloc((size_t)sb.st_size + 1) : NULL;
    if (st == TB_OK && !buf)
        st = tb_fail(err, TB_ERR_NOMEM, "reading %s %s: out of memory", what, path);
    size_t n = 0;
    while (st == TB_OK && n < (size_t)sb.st_size) {
        ssize_t got = read(fd, buf + n, (size_t)sb.st_size - n);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) st = tb_fail(err, TB_ERR_IO, "cannot read %s %s: %s", what, path,
                                  strerror(errno));
        else if (got == 0) break; /* shrank while read: what is there */
        else n += (size_t)got;
    }
    close(fd);
    if (st == TB_OK) st = check_text(path, what, buf, n, err);
    if (st != TB_OK) {
        free(buf);
        return st;
    }
    buf[n] = '\0';
    *out = buf;
    return TB_OK;
}
