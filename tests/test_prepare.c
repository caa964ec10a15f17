/* test_prepare.c: the prepared-data cache: built once then reused, identical data either way,
 * a corrupt cache rejected by create (naming the file and the fix) and rebuilt by prepare, a
 * truncated cache, a data directory without the data named with where the package puts it. */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static tb_backend *be;

static void corrupt(const char *path, long offset, size_t truncate_to)
{
    FILE *f = fopen(path, "r+b");
    if (!f) return;
    if (truncate_to) {
        fclose(f);
        if (truncate(path, (off_t)truncate_to) != 0) CHECK(!"truncate failed");
        return;
    }
    fseek(f, offset, SEEK_SET);
    int c = fgetc(f);
    fseek(f, offset, SEEK_SET);
    fputc(c ^ 0x55, f);
    fclose(f);
}

static void test_cache(const char *dir)
{
    tb_error err = {0};
    tb_workload_config cfg = {.cache_dir = dir};
    tb_prepare_report r;
    CHECK_OK(tb_workload_prepare("kjv_transformer", &cfg, false, &r, &err), &err);
    CHECK(r.rebuilt && strstr(r.reason, "missing") && r.tokens > 4000000 && r.vocabulary > 50);
    CHECK(r.vocabulary < 100 && r.bytes > 4 * r.tokens);
    char path[1024];
    snprintf(path, sizeof path, "%s", r.path);
    CHECK_OK(tb_workload_prepare("kjv_transformer_relu", &cfg, false, &r, &err), &err);
    CHECK(!r.rebuilt && strcmp(r.reason, "valid") == 0); /* reused, shared by the variants */
    CHECK(r.stale_temps_removed == 0);
    /* a writer killed mid-write leaves path.tmp.PID: prepare removes it once that process is
     * gone (even when the cache is valid), and leaves a live process's and other names */
    pid_t child = fork();
    if (child == 0) _exit(0);
    waitpid(child, NULL, 0); /* now no process has that PID */
    char dead[1100], live[1100], other[1100];
    snprintf(dead, sizeof dead, "%s.tmp.%ld", path, (long)child);
    snprintf(live, sizeof live, "%s.tmp.%ld", path, (long)getppid());
    snprintf(other, sizeof other, "%s.tmp.12x", path);
    const char *temps[3] = {dead, live, other};
    for (int i = 0; i < 3; i++) {
        FILE *f = fopen(temps[i], "w");
        if (f) fclose(f);
    }
    CHECK_OK(tb_workload_prepare("kjv_transformer", &cfg, false, &r, &err), &err);
    CHECK(!r.rebuilt && r.stale_temps_removed == 1);
    CHECK(access(dead, F_OK) != 0 && access(live, F_OK) == 0 && access(other, F_OK) == 0);
    unlink(live);
    unlink(other);
    CHECK_OK(tb_workload_prepare("kjv_transformer", &cfg, true, &r, &err), &err);
    CHECK(r.rebuilt && strcmp(r.reason, "forced") == 0);
    /* the cached and the in-memory data are the same examples */
    tb_workload *a, *b;
    tb_workload_config mem = {0};
    CHECK_OK(tb_workload_create("kjv_transformer", be, &cfg, &a, &err), &err);
    CHECK_OK(tb_workload_create("kjv_transformer", be, &mem, &b, &err), &err);
    int32_t xa[64 * 4], ya[64 * 4], xb[64 * 4], yb[64 * 4];
    int64_t rows[4] = {0, 1, 1000, 20000};
    CHECK_OK(tb_workload_read(a, TB_SPLIT_TRAIN, rows, 4, xa, ya, &err), &err);
    CHECK_OK(tb_workload_read(b, TB_SPLIT_TRAIN, rows, 4, xb, yb, &err), &err);
    CHECK(memcmp(xa, xb, sizeof xa) == 0 && memcmp(ya, yb, sizeof ya) == 0);
    CHECK(xa[1] == ya[0]); /* targets are the inputs shifted by one */
    tb_workload_destroy(a);
    tb_workload_destroy(b);
    /* a flipped byte in the payload: create refuses, prepare rebuilds */
    corrupt(path, 200, 0);
    CHECK_FAILS(tb_workload_create("kjv_transformer", be, &cfg, &a, &err), TB_ERR_FORMAT, &err,
                "checksum");
    CHECK(strstr(err.message, path) && strstr(err.message, "prepare --force"));
    /* the command that rebuilds it names this cache directory (not the default) and the
     * workload, and the data directory when one was given */
    char want[1200];
    snprintf(want, sizeof want, "`trainbench prepare --force --cache-dir %s kjv_transformer`",
             dir);
    CHECK(tb_test_output_has(err.message, want));
    tb_workload_config with_data = cfg;
    with_data.data_dir = "/usr/lib";
    CHECK_FAILS(tb_workload_create("kjv_transformer_relu", be, &with_data, &a, &err),
                TB_ERR_FORMAT, &err, "--data-dir /usr/lib kjv_transformer_relu`");
    /* the default directory is left out of the command */
    char *xdg = getenv("XDG_CACHE_HOME");
    char saved_xdg[1024] = "";
    if (xdg) snprintf(saved_xdg, sizeof saved_xdg, "%s", xdg);
    setenv("XDG_CACHE_HOME", dir, 1); /* then the default is dir/trainbench */
    char renamed[1100], def_path[1200];
    snprintf(renamed, sizeof renamed, "%s/trainbench", dir);
    snprintf(def_path, sizeof def_path, "%s/kjv-chars.tbcache", renamed);
    if (mkdir(renamed, 0700) == 0 && rename(path, def_path) == 0) {
        tb_workload_config def = {.cache_dir = renamed};
        CHECK_FAILS(tb_workload_create("kjv_transformer", be, &def, &a, &err), TB_ERR_FORMAT,
                    &err, "run `trainbench prepare --force kjv_transformer` to rebuild it");
        CHECK(rename(def_path, path) == 0);
        rmdir(renamed);
    } else {
        CHECK(!"cannot set up a default cache directory");
    }
    if (xdg) setenv("XDG_CACHE_HOME", saved_xdg, 1);
    else unsetenv("XDG_CACHE_HOME");
    CHECK_OK(tb_workload_prepare("kjv_transformer", &cfg, false, &r, &err), &err);
    CHECK(r.rebuilt && strstr(r.reason, "corrupt"));
    /* truncated, and a bad magic number */
    corrupt(path, 0, 100);
    CHECK_FAILS(tb_workload_create("kjv_transformer", be, &cfg, &a, &err), TB_ERR_FORMAT, &err,
                "size");
    CHECK_OK(tb_workload_prepare("kjv_transformer", &cfg, false, &r, &err), &err);
    corrupt(path, 1, 0);
    CHECK_FAILS(tb_workload_create("kjv_transformer", be, &cfg, &a, &err), TB_ERR_FORMAT, &err,
                "magic");
    unlink(path);
    /* a FIFO (or a directory) where the cache goes is refused, never opened: opening a FIFO
     * for reading blocked create and prepare forever */
    if (CHECK(mkfifo(path, 0600) == 0)) {
        CHECK_FAILS(tb_workload_create("kjv_transformer", be, &cfg, &a, &err), TB_ERR_IO, &err,
                    "is a FIFO, not a regular file");
        CHECK(strstr(err.message, path) != NULL);
        CHECK_FAILS(tb_workload_prepare("kjv_transformer", &cfg, false, &r, &err), TB_ERR_IO,
                    &err, "is a FIFO");
        CHECK_FAILS(tb_workload_prepare("kjv_transformer", &cfg, true, &r, &err), TB_ERR_IO,
                    &err, "is a FIFO");
        unlink(path);
    }
    if (CHECK(mkdir(path, 0700) == 0)) {
        CHECK_FAILS(tb_workload_prepare("kjv_transformer", &cfg, false, &r, &err), TB_ERR_IO,
                    &err, "is a directory, not a regular file");
        rmdir(path);
    }
    /* the cache directory cannot be created */
    tb_workload_config bad = {.cache_dir = "/proc/no/such/dir"};
    CHECK_FAILS(tb_workload_prepare("kjv_transformer", &bad, false, &r, &err), TB_ERR_IO, &err,
                "cannot create the cache directory /proc/no");
}

static void test_missing(void)
{
    tb_error err = {0};
    tb_workload *wl;
    tb_workload_config cfg = {.data_dir = "/nonexistent/trainbench"};
    tb_prepare_report r;
    /* a data directory the user chose is named as such, with where the package puts the files
     * (the packages are installed here, so their own absence cannot be tested) */
    CHECK_FAILS(tb_workload_create("wordnet_sparse", be, &cfg, &wl, &err), TB_ERR_MISSING, &err,
                "not in the data directory /nonexistent/trainbench");
    CHECK(strstr(err.message, "wordnet-base installs") != NULL);
    CHECK_FAILS(tb_workload_prepare("kjv_transformer", &cfg, false, &r, &err), TB_ERR_MISSING,
                &err, "bible-kjv-text");
    CHECK_FAILS(tb_workload_create("fmnist_cnn", be, &cfg, &wl, &err), TB_ERR_MISSING, &err,
                "dataset-fashion-mnist");
    CHECK_FAILS(tb_workload_prepare("fmnist_autoencoder", &cfg, false, &r, &err), TB_ERR_MISSING,
                &err, "the data directory /nonexistent/trainbench");
    CHECK_FAILS(tb_workload_prepare("no_such", &cfg, false, &r, &err), TB_ERR_INVALID, &err,
                "no_such");
    /* a malformed WordNet data file names the file and line */
    char dir[] = "/tmp/tb_test_wn_XXXXXX";
    if (!mkdtemp(dir)) return;
    const char *names[] = {"data.noun", "data.verb", "data.adj", "data.adv"};
    for (int i = 0; i < 4; i++) {
        char p[256];
        snprintf(p, sizeof p, "%s/%s", dir, names[i]);
        FILE *f = fopen(p, "w");
        fputs(i == 1 ? "  1 license\n00001740 03 n 01 entity without a gloss\n"
                     : "00001740 03 n 01 entity 0 000 | a thing\n",
              f);
        fclose(f);
    }
    cfg.data_dir = dir;
    CHECK_FAILS(tb_workload_create("wordnet_sparse", be, &cfg, &wl, &err), TB_ERR_FORMAT, &err,
                "data.verb line 2");
    /* well-formed but 4 glosses: too little data for a validation and a test set, named as
     * such with the sizes (it said the default validation size "leaves no training data") */
    char verb[256];
    snprintf(verb, sizeof verb, "%s/data.verb", dir);
    FILE *vf = fopen(verb, "w");
    fputs("00001740 03 n 01 entity 0 000 | a thing\n", vf);
    fclose(vf);
    CHECK_FAILS(tb_workload_create("wordnet_sparse", be, &cfg, &wl, &err), TB_ERR_FORMAT, &err,
                "wordnet_sparse: too little data for its splits: 12 examples (12 in the "
                "official training set, 0 in the official test set)");
    for (int i = 0; i < 4; i++) {
        char p[256];
        snprintf(p, sizeof p, "%s/%s", dir, names[i]);
        unlink(p);
    }
    rmdir(dir);
}

/* Writes n bytes of src (or of noise when src is NULL) to dir/name; n 0: the whole file. */
static void write_file(const char *dir, const char *name, const char *src, long n)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *in = src ? fopen(src, "rb") : NULL, *out = fopen(path, "wb");
    if (!out || (src && !in)) {
        CHECK(!"cannot write a test data file");
        if (in) fclose(in);
        if (out) fclose(out);
        return;
    }
    unsigned x = 12345;
    for (long i = 0; n == 0 || i < n; i++) {
        int c = in ? fgetc(in) : (int)((x = x * 1103515245u + 12345u) >> 16) & 0xff;
        if (c == EOF) break;
        fputc(c, out);
    }
    if (in) fclose(in);
    fclose(out);
}

/* The Bible's files there but damaged: the message says so, names the files and the verses
 * read, and does not send the user to install a package that is installed. */
static void test_corrupt_bible(const char *cache)
{
    tb_error err = {0};
    tb_prepare_report r;
    const char *cases[3] = {"truncated", "noise", "no concordance"};
    for (int k = 0; k < 3; k++) {
        char dir[] = "/tmp/tb_test_kjv_XXXXXX";
        if (!mkdtemp(dir)) return;
        if (k == 0) write_file(dir, "bible.data", "/usr/lib/bible.data", 500000);
        if (k == 1) write_file(dir, "bible.data", NULL, 1740565);
        if (k == 2) write_file(dir, "bible.data", "/usr/lib/bible.data", 0);
        if (k < 2) write_file(dir, "bible.data.conc", "/usr/lib/bible.data.conc", 0);
        tb_workload_config cfg = {.data_dir = dir, .cache_dir = cache};
        bool ok = CHECK_FAILS(tb_workload_prepare("kjv_transformer", &cfg, false, &r, &err),
                              TB_ERR_FORMAT, &err, k < 2 ? "corrupt or incomplete" : "incomplete");
        ok &= CHECK(strstr(err.message, dir) && strstr(err.message, "bible.data") &&
                    !strstr(err.message, "not installed"));
        if (k < 2) ok &= CHECK(strstr(err.message, "of the 31102 verses") != NULL);
        else ok &= CHECK(strstr(err.message, "bible.data.conc is missing") != NULL);
        if (k == 0) ok &= CHECK(strstr(err.message, "Short read") != NULL); /* its stderr */
        if (!ok) fprintf(stderr, "%s bible.data: %s\n", cases[k], err.message);
        char p[512];
        snprintf(p, sizeof p, "%s/bible.data", dir);
        unlink(p);
        snprintf(p, sizeof p, "%s/bible.data.conc", dir);
        unlink(p);
        rmdir(dir);
    }
}

/* A data directory whose name holds a space and shell characters is just a path: the Bible
 * in it (links to the installed files) loads, every verse of it. */
static void test_odd_dir_bible(void)
{
    char dir[] = "/tmp/tb kjv $HOME '\"_XXXXXX";
    if (!CHECK(mkdtemp(dir) != NULL)) return;
    char data[600], conc[600], cache[600];
    snprintf(data, sizeof data, "%s/bible.data", dir);
    snprintf(conc, sizeof conc, "%s/bible.data.conc", dir);
    snprintf(cache, sizeof cache, "%s/cache", dir);
    CHECK(symlink("/usr/lib/bible.data", data) == 0);
    CHECK(symlink("/usr/lib/bible.data.conc", conc) == 0);
    tb_error err = {0};
    tb_prepare_report r;
    tb_workload_config cfg = {.data_dir = dir, .cache_dir = cache};
    CHECK_OK(tb_workload_prepare("kjv_transformer", &cfg, false, &r, &err), &err);
    CHECK(r.rebuilt && r.tokens > 4000000);
    unlink(r.path);
    rmdir(cache);
    unlink(data);
    unlink(conc);
    rmdir(dir);
}

/* The default cache directory: XDG_CACHE_HOME when absolute, else HOME's .cache. */
static void test_default_dir(void)
{
    char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    char saved_xdg[1024] = "", saved_home[1024] = "", buf[1024];
    if (xdg) snprintf(saved_xdg, sizeof saved_xdg, "%s", xdg);
    if (home) snprintf(saved_home, sizeof saved_home, "%s", home);
    setenv("HOME", "/tmp/tb_home", 1);
    setenv("XDG_CACHE_HOME", "/tmp/tb_xdg", 1);
    CHECK(tb_default_cache_dir(buf, sizeof buf) && strcmp(buf, "/tmp/tb_xdg/trainbench") == 0);
    setenv("XDG_CACHE_HOME", "relative/cache", 1); /* invalid by the XDG spec: ignored */
    CHECK(tb_default_cache_dir(buf, sizeof buf) &&
          strcmp(buf, "/tmp/tb_home/.cache/trainbench") == 0);
    setenv("XDG_CACHE_HOME", "", 1);
    CHECK(tb_default_cache_dir(buf, sizeof buf) &&
          strcmp(buf, "/tmp/tb_home/.cache/trainbench") == 0);
    unsetenv("HOME");
    setenv("XDG_CACHE_HOME", "relative/cache", 1);
    CHECK(!tb_default_cache_dir(buf, sizeof buf) && buf[0] == '\0');
    if (xdg) setenv("XDG_CACHE_HOME", saved_xdg, 1);
    else unsetenv("XDG_CACHE_HOME");
    if (home) setenv("HOME", saved_home, 1);
    else unsetenv("HOME");
}

int main(void)
{
    be = tb_test_backend();
    test_default_dir();
    char dir[] = "/tmp/tb_test_prepare_XXXXXX";
    if (!mkdtemp(dir)) return 1;
    test_cache(dir);
    test_missing();
    test_corrupt_bible(dir);
    test_odd_dir_bible();
    rmdir(dir);
    tb_backend_destroy(be);
    return tb_test_finish("test_prepare");
}
