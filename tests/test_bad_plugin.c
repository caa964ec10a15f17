/* test_bad_plugin.c: a submission's shared library given the classes of bad input
 * (bad_input.h): missing, empty, a directory, a FIFO, truncated, not an ELF file, 1 GiB of
 * zeros, an ELF file of another class, a library that is not a submission (no entry point),
 * one built for another ABI version, one whose table lacks a required field, one that
 * crashes while loading. Valid is tests/plugins/submission_crash.c's library (its defects
 * chosen by TB_CRASHER_LOAD), copied into a temporary directory. */
#include "bad_input.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define LIB "sub.so"
#define ZLIB "/usr/lib/x86_64-linux-gnu/libz.so.1"

static tb_status load(const char *dir, tb_error *err)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", dir, LIB);
    tb_submission_ref *r = NULL;
    tb_status st = tb_submission_load(path, NULL, &r, err);
    tb_submission_unload(r);
    return st;
}

static void restore(const char *dir, const char *file, const char *valid_dir)
{
    char from[1200], to[1200];
    snprintf(from, sizeof from, "%s/%s", valid_dir, file);
    snprintf(to, sizeof to, "%s/%s", dir, file);
    bad_copy(from, to);
    unsetenv("TB_CRASHER_LOAD");
}

static void not_elf(const char *path, const char *valid)
{
    (void)valid;
    static const char text[] = "#!/bin/sh\n# not a library: a script that names one, long "
                               "enough to hold an ELF header's 64 bytes\necho submission.so\n";
    bad_write(path, text, sizeof text - 1);
}

static void huge(const char *path, const char *valid)
{
    (void)valid;
    bad_write(path, "", 0);
    if (truncate(path, (off_t)1 << 30) != 0) abort();
}

/* EI_CLASS (byte 4) made ELFCLASS32 */
static void elf32(const char *path, const char *valid)
{
    size_t n = 0;
    unsigned char *b = bad_slurp(valid, &n);
    if (!b || n < 64) abort();
    b[4] = 1;
    bad_write(path, b, n);
    free(b);
}

static void not_submission(const char *path, const char *valid)
{
    (void)valid;
    bad_copy(ZLIB, path);
}

static void crasher(const char *path, const char *valid, const char *mode)
{
    bad_copy(valid, path);
    setenv("TB_CRASHER_LOAD", mode, 1);
}

static void next_abi(const char *path, const char *valid)
{
    crasher(path, valid, "abi");
}
static void no_update(const char *path, const char *valid)
{
    crasher(path, valid, "noupdate");
}
static void segv(const char *path, const char *valid)
{
    crasher(path, valid, "segv");
}

static const bad_case cases[] = {
    {"valid", NULL, bad_valid, TB_OK, NULL},
    {"missing", NULL, bad_missing, TB_ERR_INVALID, "does not exist"},
    {"empty", NULL, bad_empty, TB_ERR_INVALID, "file too short"},
    {"directory", NULL, bad_directory, TB_ERR_INVALID, "is a directory, not a regular file"},
    {"FIFO", NULL, bad_fifo, TB_ERR_INVALID, "is a FIFO, not a regular file"},
    {"truncated", NULL, bad_truncated, TB_ERR_INVALID, "is truncated: its ELF headers describe"},
    {"corrupt", NULL, not_elf, TB_ERR_INVALID, "invalid ELF header"},
    {"wrong type", NULL, not_submission, TB_ERR_INVALID, "does not export tb_submission_entry"},
    {"out of range", NULL, next_abi, TB_ERR_INVALID, "was built for ABI version"},
    {"out of range", NULL, no_update, TB_ERR_INVALID, "lacks update_params"},
    {"huge", NULL, huge, TB_ERR_INVALID, "invalid ELF header"},
    {"invalid encoding", NULL, elf32, TB_ERR_INVALID, "wrong ELF class: ELFCLASS32"},
    {"crashes in init", NULL, segv, TB_ERR_CRASHED, "crashed while loading"},
};

int main(void)
{
    const char *lib = getenv("TB_CRASH_SUBMISSION");
    if (!lib || !bad_have(lib) || !bad_have(ZLIB)) {
        printf("test_bad_plugin: skipped: no %s\n",
               lib && bad_have(lib) ? ZLIB : "TB_CRASH_SUBMISSION library");
        return TB_TEST_SKIP;
    }
    char dir[] = "/tmp/tb_test_bad_plugin_XXXXXX";
    if (!mkdtemp(dir)) return 1;
    char valid_dir[64], sub[64], path[200];
    snprintf(valid_dir, sizeof valid_dir, "%s/valid", dir);
    snprintf(sub, sizeof sub, "%s/case", dir);
    if (mkdir(valid_dir, 0700) != 0 || mkdir(sub, 0700) != 0) return 1;
    snprintf(path, sizeof path, "%s/%s", valid_dir, LIB);
    bad_copy(lib, path);
    const bad_reader r = {"submission library",
                          {LIB, NULL},
                          LIB,
                          valid_dir,
                          load,
                          restore,
                          cases,
                          (int)(sizeof cases / sizeof cases[0])};
    bad_run_reader(&r, sub);
    unsetenv("TB_CRASHER_LOAD");
    bad_remove(path);
    rmdir(valid_dir);
    rmdir(sub);
    rmdir(dir);
    return tb_test_finish("test_bad_plugin");
}
