/* bad_input.c: running the bad-input tests' case tables (bad_input.h), and the makers of the
 * classes of bad input every reader is given. */
#include "bad_input.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void bad_remove(const char *path)
{
    struct stat sb;
    if (lstat(path, &sb) != 0) return;
    if (S_ISDIR(sb.st_mode))
        rmdir(path);
    else
        unlink(path);
}

bool bad_have(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISREG(sb.st_mode) && access(path, R_OK) == 0;
}

unsigned char *bad_slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, len = 0;
    unsigned char *buf = malloc(cap);
    for (size_t got; buf && (got = fread(buf + len, 1, cap - len, f)) > 0;) {
        len += got;
        unsigned char *grown = len == cap ? realloc(buf, cap *= 2) : buf;
        if (!grown) free(buf);
        buf = grown;
    }
    fclose(f);
    *n = len;
    return buf;
}

void bad_write(const char *path, const void *bytes, size_t n)
{
    bad_remove(path);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(bytes, 1, n, f) != n || fclose(f) != 0) {
        fprintf(stderr, "cannot write %s\n", path);
        abort();
    }
}

void bad_copy(const char *src, const char *dst)
{
    size_t n = 0;
    unsigned char *b = bad_slurp(src, &n);
    if (!b) {
        fprintf(stderr, "cannot read %s\n", src);
        abort();
    }
    bad_write(dst, b, n);
    free(b);
}

void bad_valid(const char *path, const char *valid)
{
    bad_copy(valid, path);
}

void bad_missing(const char *path, const char *valid)
{
    (void)valid;
    bad_remove(path);
}

void bad_empty(const char *path, const char *valid)
{
    (void)valid;
    bad_write(path, "", 0);
}

void bad_directory(const char *path, const char *valid)
{
    (void)valid;
    bad_remove(path);
    if (mkdir(path, 0700) != 0) abort();
}

void bad_fifo(const char *path, const char *valid)
{
    (void)valid;
    bad_remove(path);
    if (mkfifo(path, 0600) != 0) abort(); /* no writer: opening it to read blocks */
}

void bad_truncated(const char *path, const char *valid)
{
    size_t n = 0;
    unsigned char *b = bad_slurp(valid, &n);
    if (!b) abort();
    bad_write(path, b, n / 2);
    free(b);
}

void bad_flipped(const char *path, const char *valid)
{
    size_t n = 0;
    unsigned char *b = bad_slurp(valid, &n);
    if (!b || n < 64) abort();
    for (size_t i = n / 2; i < n / 2 + 16; i++)
        b[i] = (unsigned char)~b[i];
    bad_write(path, b, n);
    free(b);
}

static void on_alarm(int sig)
{
    (void)sig;
    static const char msg[] = "bad input: a reader blocked (30 s alarm)\n";
    ssize_t w = write(STDERR_FILENO, msg, sizeof msg - 1);
    (void)w;
    _exit(1);
}

void bad_run_reader(const bad_reader *r, const char *dir)
{
    signal(SIGALRM, on_alarm);
    for (int i = 0; i < r->n_cases; i++) {
        const bad_case *c = &r->cases[i];
        const char *file = c->file ? c->file : r->file;
        char path[1200], valid[1200];
        snprintf(path, sizeof path, "%s/%s", dir, file);
        snprintf(valid, sizeof valid, "%s/%s", r->valid_dir, file);
        for (int k = 0; r->files[k]; k++) /* every file valid, then this one bad */
            r->restore(dir, r->files[k], r->valid_dir);
        c->make(path, valid);
        tb_error err = {0};
        alarm(30);
        tb_status st = r->load(dir, &err);
        alarm(0);
        bool ok = st == c->want;
        if (ok && c->want != TB_OK)
            ok = strstr(err.message, dir) && strstr(err.message, file) &&
                 strstr(err.message, c->cause);
        if (!ok)
            fprintf(stderr, "%s, %s %s: status %s (want %s), message \"%s\" (want \"%s\")\n",
                    r->name, file, c->cls, tb_status_name(st), tb_status_name(c->want), err.message,
                    c->cause ? c->cause : "");
        CHECK(ok);
    }
    for (int k = 0; r->files[k]; k++) {
        char path[1200];
        snprintf(path, sizeof path, "%s/%s", dir, r->files[k]);
        bad_remove(path);
    }
}

void bad_restore_head(const char *dir, const char *file, const char *valid_dir)
{
    char from[2600], to[2600];
    snprintf(from, sizeof from, "%s/%s", valid_dir, file);
    snprintf(to, sizeof to, "%s/%s", dir, file);
    size_t n = 0;
    unsigned char *b = bad_slurp(from, &n);
    if (!b) abort();
    size_t end = 0;
    for (int lines = 0; end < n && lines < BAD_HEAD_LINES; end++)
        if (b[end] == '\n') lines++;
    bad_write(to, b, end);
    free(b);
}
