/* test_bad_store.c: the results store given the classes of bad input (bad_input.h), opened to
 * write (as bench does) and read-only (as score, export and report do): a file that is empty,
 * a directory, a FIFO, truncated, not a database, another program's database, a store of a
 * newer or older schema, read-only. Each is refused naming the file and the cause, or
 * accepted where it is a store (an older schema is upgraded; a missing or empty file to write
 * becomes a new store); nothing blocks, and a refused file is left as it was. */
#include "bad_input.h"

#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define STORE "r.db"

/* Opens the store to write; a file refused must be left as it was (TB_ERR_INTERNAL when it
 * was not): byte for byte, or for a file over 16 MiB (the huge one) its size and time. */
static tb_status open_rw(const char *dir, tb_error *err)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", dir, STORE);
    struct stat b0, b1;
    bool file = stat(path, &b0) == 0 && S_ISREG(b0.st_mode);
    size_t n0 = 0, n1 = 0;
    unsigned char *before = file && b0.st_size <= (16 << 20) ? bad_slurp(path, &n0) : NULL;
    tb_store *s = NULL;
    tb_status st = tb_store_open(path, &s, err);
    tb_store_close(s);
    if (file && st != TB_OK) {
        unsigned char *after = before ? bad_slurp(path, &n1) : NULL;
        bool same = stat(path, &b1) == 0 && b1.st_size == b0.st_size &&
                    b1.st_mtim.tv_sec == b0.st_mtim.tv_sec &&
                    b1.st_mtim.tv_nsec == b0.st_mtim.tv_nsec &&
                    (!before || (after && n0 == n1 && memcmp(before, after, n0) == 0));
        if (!same) st = tb_fail(err, TB_ERR_INTERNAL, "%s was changed by its refusal", path);
        free(after);
    }
    free(before);
    return st;
}

static tb_status open_ro(const char *dir, tb_error *err)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", dir, STORE);
    tb_store *s = NULL;
    tb_status st = tb_store_open_readonly(path, &s, err);
    /* a store read: its trial (an old store's too) */
    tb_trial_record *t = NULL;
    int n = 0;
    if (st == TB_OK) st = tb_store_trials(s, "b", &t, &n, err);
    if (st == TB_OK && n != 1) st = tb_fail(err, TB_ERR_INTERNAL, "%s: %d trials", path, n);
    free(t);
    tb_store_close(s);
    return st;
}

/* A valid store's copy (and no -wal or -shm file beside it). */
static void restore_store(const char *dir, const char *file, const char *valid_dir)
{
    char from[1200], to[1200], side[1300];
    snprintf(from, sizeof from, "%s/%s", valid_dir, file);
    snprintf(to, sizeof to, "%s/%s", dir, file);
    for (int i = 0; i < 2; i++) {
        snprintf(side, sizeof side, "%s%s", to, i ? "-shm" : "-wal");
        bad_remove(side);
    }
    chmod(to, 0600);
    bad_copy(from, to);
}

static void sql(const char *path, const char *text)
{
    sqlite3 *db = NULL;
    if (sqlite3_open(path, &db) != SQLITE_OK || sqlite3_exec(db, text, NULL, NULL, NULL)) abort();
    sqlite3_close(db);
}

static void other_program(const char *path, const char *valid)
{
    (void)valid;
    bad_remove(path);
    sql(path, "CREATE TABLE photos(id INTEGER PRIMARY KEY, name TEXT);");
}

static void not_database(const char *path, const char *valid)
{
    (void)valid;
    static const char text[] = "name,time\nadam,3.5\n";
    bad_write(path, text, sizeof text - 1);
}

/* the header's magic string damaged */
static void bad_header(const char *path, const char *valid)
{
    size_t n = 0;
    unsigned char *b = bad_slurp(valid, &n);
    if (!b) abort();
    memcpy(b, "SQLite format 9", 15);
    bad_write(path, b, n);
    free(b);
}

/* sparse: a gigabyte of zeros */
static void huge(const char *path, const char *valid)
{
    (void)valid;
    bad_write(path, "", 0);
    if (truncate(path, (off_t)1 << 30) != 0) abort();
}

static void newer_schema(const char *path, const char *valid)
{
    bad_copy(valid, path);
    sql(path, "UPDATE meta SET value = '99' WHERE key = 'schema_version';");
}

/* schema 1: before the resolved hyperparameters (the columns dropped) */
static void older_schema(const char *path, const char *valid)
{
    bad_copy(valid, path);
    sql(path, "ALTER TABLE trials DROP COLUMN resolved_hparams;"
              "ALTER TABLE trials DROP COLUMN default_hparams;"
              "UPDATE meta SET value = '1' WHERE key = 'schema_version';");
}

/* the format row of another program's "meta" table */
static void wrong_format(const char *path, const char *valid)
{
    bad_copy(valid, path);
    sql(path, "UPDATE meta SET value = 'photo-album' WHERE key = 'format';");
}

static void read_only(const char *path, const char *valid)
{
    bad_copy(valid, path);
    chmod(path, 0400);
}

/* invalid encoding: the header's text encoding (offset 56) says UTF-16be */
static void utf16(const char *path, const char *valid)
{
    size_t n = 0;
    unsigned char *b = bad_slurp(valid, &n);
    if (!b || n < 100) abort();
    b[59] = 3;
    bad_write(path, b, n);
    free(b);
}

static const bad_case rw_cases[] = {
    {"missing (created)", NULL, bad_missing, TB_OK, NULL},
    {"empty (a new store)", NULL, bad_empty, TB_OK, NULL},
    {"directory", NULL, bad_directory, TB_ERR_IO, "is a directory"},
    {"FIFO", NULL, bad_fifo, TB_ERR_IO, "is a FIFO"},
    {"truncated", NULL, bad_truncated, TB_ERR_FORMAT, "is not a trainbench results store"},
    {"corrupt", NULL, bad_header, TB_ERR_FORMAT, "file is not a database"},
    {"wrong type", NULL, other_program, TB_ERR_FORMAT, "without trainbench's tables"},
    {"wrong type", NULL, not_database, TB_ERR_FORMAT, "file is not a database"},
    {"wrong type", NULL, wrong_format, TB_ERR_FORMAT, "without trainbench's tables"},
    {"out of range", NULL, newer_schema, TB_ERR_FORMAT, "another schema (schema version 99"},
    {"older schema (upgraded)", NULL, older_schema, TB_OK, NULL},
    {"huge", NULL, huge, TB_ERR_FORMAT, "file is not a database"},
    {"invalid encoding", NULL, utf16, TB_ERR_FORMAT, "is not a trainbench results store"},
};

static const bad_case ro_cases[] = {
    {"missing", NULL, bad_missing, TB_ERR_INVALID, "does not exist"},
    {"empty", NULL, bad_empty, TB_ERR_FORMAT, "an empty database"},
    {"directory", NULL, bad_directory, TB_ERR_IO, "is a directory"},
    {"FIFO", NULL, bad_fifo, TB_ERR_IO, "is a FIFO"},
    {"truncated", NULL, bad_truncated, TB_ERR_FORMAT, "is not a trainbench results store"},
    {"corrupt", NULL, bad_header, TB_ERR_FORMAT, "file is not a database"},
    {"wrong type", NULL, other_program, TB_ERR_FORMAT, "without trainbench's tables"},
    {"wrong type", NULL, not_database, TB_ERR_FORMAT, "file is not a database"},
    {"out of range", NULL, newer_schema, TB_ERR_FORMAT, "another schema (schema version 99"},
    {"older schema (read as it is)", NULL, older_schema, TB_OK, NULL},
    {"read-only file (read)", NULL, read_only, TB_OK, NULL},
    {"huge", NULL, huge, TB_ERR_FORMAT, "file is not a database"},
    {"invalid encoding", NULL, utf16, TB_ERR_FORMAT, "is not a trainbench results store"},
};

/* Opening a read-only store to write is refused; as root every file is writable, so this
 * row runs only for other users. */
static const bad_case rw_readonly[] = {
    {"read-only file", NULL, read_only, TB_ERR_IO, "is read-only"},
};

#define CASES(t) t, (int)(sizeof t / sizeof t[0])

int main(void)
{
    char dir[] = "/tmp/tb_test_bad_store_XXXXXX";
    if (!mkdtemp(dir)) return 1;
    char valid_dir[64], sub[64], path[200];
    snprintf(valid_dir, sizeof valid_dir, "%s/valid", dir);
    snprintf(sub, sizeof sub, "%s/case", dir);
    if (mkdir(valid_dir, 0700) != 0 || mkdir(sub, 0700) != 0) return 1;
    /* the valid store: one benchmark's one finished trial */
    snprintf(path, sizeof path, "%s/%s", valid_dir, STORE);
    tb_store *s = NULL;
    tb_error err = {0};
    if (!CHECK_OK(tb_store_open(path, &s, &err), &err)) return tb_test_finish("test_bad_store");
    tb_test_add_trial(s, "b", "adam", "fmnist_mlp", 0, 0, NULL, TB_TRIAL_DONE, 0.1, 3.0);
    tb_store_close(s);
    const bad_reader readers[] = {
        {"store to write",
         {STORE, NULL},
         STORE,
         valid_dir,
         open_rw,
         restore_store,
         CASES(rw_cases)},
        {"store to read", {STORE, NULL}, STORE, valid_dir, open_ro, restore_store, CASES(ro_cases)},
        {"read-only store to write",
         {STORE, NULL},
         STORE,
         valid_dir,
         open_rw,
         restore_store,
         CASES(rw_readonly)},
    };
    int n = geteuid() == 0 ? 2 : 3;
    if (n == 2) printf("test_bad_store: the read-only row to write skipped (running as root)\n");
    for (int i = 0; i < n; i++) {
        bad_run_reader(&readers[i], sub);
        for (int k = 0; k < 3; k++) { /* what SQLite may leave beside it */
            snprintf(path, sizeof path, "%s/%s%s", sub, STORE,
                     (const char *[]){"-wal", "-shm", "-lock"}[k]);
            bad_remove(path);
        }
    }
    tb_test_remove_store(path);
    snprintf(path, sizeof path, "%s/%s", valid_dir, STORE);
    tb_test_remove_store(path);
    rmdir(valid_dir);
    rmdir(sub);
    rmdir(dir);
    return tb_test_finish("test_bad_store");
}
