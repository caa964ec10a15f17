/* bad_input.h: the case tables of the bad-input tests (test_bad_data.c, test_bad_store.c,
 * test_bad_plugin.c). A reader is given one file at a time in each class of bad input
 * (missing, empty, a directory, a FIFO, truncated, corrupt, the wrong type, out of range,
 * huge, invalid encoding); each case says what to put at the file's path, the status the
 * reader must return and the cause its message must give. Every message must also name the
 * file (its directory and its name). A case runs under an alarm: a reader that blocks (a FIFO
 * opened for reading without a writer) kills the test instead of hanging it. */
#ifndef TRAINBENCH_TESTS_BAD_INPUT_H
#define TRAINBENCH_TESTS_BAD_INPUT_H

#include "testutil.h"

/* Puts a bad file at path; valid is the path of a valid file of the same kind (real data) to
 * derive it from. */
typedef void (*bad_make_fn)(const char *path, const char *valid);

typedef struct bad_case {
    const char *cls;  /* the class of bad input */
    const char *file; /* the file it replaces (NULL: the reader's own) */
    bad_make_fn make;
    tb_status want;    /* TB_OK: accepted (e.g. a missing cache is rebuilt) */
    const char *cause; /* a part of the message (NULL with TB_OK) */
} bad_case;

/* A reader over a directory: load reads the directory's files, restore puts a valid copy of
 * file back (before each case); valid_dir holds the valid files cases derive theirs from. */
typedef struct bad_reader {
    const char *name;
    const char *files[5]; /* the files it reads (NULL after the last) */
    const char *file;     /* the file its cases replace unless a case names another */
    const char *valid_dir;
    tb_status (*load)(const char *dir, tb_error *err);
    void (*restore)(const char *dir, const char *file, const char *valid_dir);
    const bad_case *cases;
    int n_cases;
} bad_reader;

/* Runs every case of r in dir: restore, make, load (under a 30 s alarm), then checks the
 * status, that the message names dir and the file, and its cause. Removes r's files from dir
 * at the end. */
void bad_run_reader(const bad_reader *r, const char *dir);

/* The classes' makers (and bad_valid: a copy of valid, the control). */
void bad_valid(const char *path, const char *valid);
void bad_missing(const char *path, const char *valid);
void bad_empty(const char *path, const char *valid);
void bad_directory(const char *path, const char *valid);
void bad_fifo(const char *path, const char *valid);
void bad_truncated(const char *path, const char *valid); /* the first half of valid */
void bad_flipped(const char *path, const char *valid);   /* valid, 16 bytes inverted midway */
/* A copy of the file src (restore's helper too). */
void bad_copy(const char *src, const char *dst);
/* Reads the whole file path into a malloc'd buffer (*n its size); NULL when it cannot. */
unsigned char *bad_slurp(const char *path, size_t *n);
void bad_write(const char *path, const void *bytes, size_t n);
/* Removes whatever is at path (a file, a FIFO, a link, an empty directory). */
void bad_remove(const char *path);
/* A restore: dir/file made the first BAD_HEAD_LINES lines of valid_dir/file (for a text file
 * whose reader reads it whole: its header and a few records are real data, and quick). */
#define BAD_HEAD_LINES 300
void bad_restore_head(const char *dir, const char *file, const char *valid_dir);
/* Whether path is a readable regular file (real data present). */
bool bad_have(const char *path);

#endif
