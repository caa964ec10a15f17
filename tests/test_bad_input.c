/* test_bad_input.c: every JSON reader of the suite (search spaces, built-in submissions'
 * search spaces, bench --space files, studies, the hardware reference) given the same classes
 * of bad input: missing, empty, a directory, a FIFO, truncated, corrupt, the wrong type, out
 * of range, huge, a NUL byte, invalid UTF-8. Each must fail (never hang, never crash) with a
 * message that names the file. tb_text_file_read, the helper they share, is checked on its own
 * too; and a WordNet gloss holding a NUL byte. */
#include "testutil.h"

#include "bench/bench_impl.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef tb_status (*load_fn)(const char *path, tb_error *err);

static tb_status load_space(const char *path, tb_error *err)
{
    tb_search_space *s = NULL;
    tb_status st = tb_search_space_load(path, &s, err);
    tb_search_space_destroy(s);
    return st;
}

static tb_status load_study(const char *path, tb_error *err)
{
    tb_study_plan *p = NULL;
    tb_status st = tb_study_plan_load(path, &p, err);
    tb_study_plan_free(p);
    return st;
}

static tb_status load_reference(const char *path, tb_error *err)
{
    tb_hw_reference *ref = calloc(1, sizeof *ref);
    tb_status st = ref ? tb_hw_reference_load(path, ref, err) : TB_ERR_NOMEM;
    free(ref);
    return st;
}

/* A built-in's search space is <dir>/<name>.json: the test's path is <dir>/adam.json. */
static tb_status load_submission(const char *path, tb_error *err)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash) *slash = '\0';
    tb_submission_ref *r = NULL;
    tb_status st = tb_submission_load("adam", dir, &r, err);
    if (st == TB_OK && !tb_submission_ref_search_space(r))
        st = tb_fail(err, TB_ERR_MISSING, "no search space %s", path);
    if (st == TB_OK) { /* what bench does with it: parse it under the file's name */
        tb_search_space *s = NULL;
        st = tb_search_space_parse(tb_submission_ref_search_space(r),
                                   tb_submission_ref_search_space_path(r), &s, err);
        tb_search_space_destroy(s);
    }
    tb_submission_unload(r);
    return st;
}

/* `bench -s adamw --space FILE`: the file read into the submission and planned as bench
 * plans it (parsed, checked against the baseline's names, sampled). */
static tb_status load_space_file(const char *path, tb_error *err)
{
    static const char *subs[1] = {"adamw"};
    tb_bench_spec s = tb_test_bench_spec(subs, 1, 1, 100);
    s.search_space_file = path;
    tb_submission_ref *r = NULL;
    tb_status st = tb_submission_load("adamw", NULL, &r, err);
    if (st == TB_OK) st = tb_submission_ref_set_search_space_file(r, path, err);
    tb_hparams *points = NULL;
    tb_search_space *space = NULL;
    int trials = 0;
    char note[256];
    if (st == TB_OK)
        st = tb_bench_plan_points(&s, r, &points, &trials, &space, note, sizeof note, err);
    free(points);
    tb_search_space_destroy(space);
    tb_submission_unload(r);
    return st;
}

typedef struct reader {
    const char *name;
    load_fn load;
    size_t max;                                               /* its size limit */
    const char *valid, *truncated, *corrupt, *wrong_type, *out_of_range;
} reader;

/* a valid study, without its closing brace */
#define STUDY_HEAD                                                                              \
    "{\"name\": \"t\", \"claim\": \"c\", \"source\": \"s\", \"metric\": \"validation_loss\", "     \
    "\"settings\": {\"workload\": \"fmnist_mlp_narrow\", \"steps\": 5}, "                   \
    "\"axes\": {\"algorithm\": [\"adam\"]}, \"seeds\": 2"

static const reader readers[] = {
    {"search space", load_space, 1 << 20,
     "{\"learning_rate\": {\"min\": 1e-4, \"max\": 1e-2, \"scaling\": \"log\"}}",
     "{\"learning_rate\": {\"min\": 1e-4, \"max\"", "{\"learning_rate\" :: 3}", "\"adam\"",
     "{\"learning_rate\": {\"min\": 1e-2, \"max\": 1e-4}}"},
    {"submission search space", load_submission, 1 << 20,
     "{\"learning_rate\": {\"min\": 1e-4, \"max\": 1e-2, \"scaling\": \"log\"}}",
     "{\"learning_rate\": {\"min\": 1e-4, \"max\"", "{\"learning_rate\" :: 3}", "\"adam\"",
     "{\"learning_rate\": {\"min\": 1e-2, \"max\": 1e-4}}"},
    {"bench --space file", load_space_file, 1 << 20,
     "{\"learning_rate\": {\"min\": 1e-4, \"max\": 1e-2, \"scaling\": \"log\"}, "
     "\"one_minus_beta1\": {\"feasible_points\": [0.1]}, "
     "\"warmup_factor\": {\"feasible_points\": [0.05]}}",
     "{\"learning_rate\": {\"min\": 1e-4, \"max\"", "{\"learning_rate\" :: 3}", "\"adam\"",
     "{\"one_minus_beta1\": {\"feasible_points\": [1.5]}}"},
    {"study", load_study, 1 << 20,
     STUDY_HEAD "}",
     "{\"name\": \"t\", \"settings\": {", "{\"name\" \"t\"}", "[1, 2]",
     STUDY_HEAD ", \"seed\": -3}"},
    {"reference file", load_reference, (size_t)64 << 20, NULL,
     "{\"format\": \"trainbench-hw-reference\", \"version\":", "{\"format\" = 1}", "[]",
     "{\"format\": \"trainbench-hw-reference\", \"version\": 99}"},
};

static void write_bytes(const char *path, const char *bytes, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f) abort();
    fwrite(bytes, 1, n, f);
    fclose(f);
}

static void write_text(const char *path, const char *text)
{
    write_bytes(path, text, strlen(text));
}

/* The reader refuses path, naming it in its message. */
static void check_refused(const reader *r, const char *path, const char *what)
{
    tb_error err = {0};
    tb_status st = r->load(path, &err);
    bool named = strstr(err.message, path) != NULL;
    if (st == TB_OK || !named)
        fprintf(stderr, "%s, %s: status %s, message \"%s\"\n", r->name, what,
                tb_status_name(st), err.message);
    CHECK(st != TB_OK);
    CHECK(named);
}

static void test_reader(const reader *r, const char *dir)
{
    char path[600];
    snprintf(path, sizeof path, "%s/adam.json", dir);
    if (r->valid) {
        write_text(path, r->valid);
        tb_error err = {0};
        CHECK_OK(r->load(path, &err), &err);
    }
    remove(path);
    check_refused(r, path, "missing");
    write_text(path, "");
    check_refused(r, path, "empty");
    const char *texts[] = {r->truncated, r->corrupt, r->wrong_type, r->out_of_range};
    const char *names[] = {"truncated", "corrupt", "wrong type", "out of range"};
    for (int i = 0; i < 4; i++) {
        write_text(path, texts[i]);
        check_refused(r, path, names[i]);
    }
    write_bytes(path, "{\"a\0\": 1}", 9);
    check_refused(r, path, "NUL byte");
    write_text(path, "{\"name\": \"\xff\xfe\"}");
    check_refused(r, path, "invalid UTF-8");
    write_text(path, "{\"name\": \"\xed\xa0\x80\"}"); /* a surrogate, U+D800 */
    check_refused(r, path, "encoded surrogate");
    FILE *f = fopen(path, "wb"); /* huge: sparse, one byte over the limit */
    CHECK(f && ftruncate(fileno(f), (off_t)r->max + 1) == 0);
    if (f) fclose(f);
    check_refused(r, path, "huge");
    remove(path);
    CHECK(mkdir(path, 0700) == 0);
    check_refused(r, path, "directory");
    rmdir(path);
    CHECK(mkfifo(path, 0600) == 0); /* no writer: a reader that opens it blocks forever */
    check_refused(r, path, "FIFO");
    remove(path);
}

static void test_text_file_read(const char *dir)
{
    char path[600], *text = NULL;
    snprintf(path, sizeof path, "%s/t.json", dir);
    tb_error err = {0};
    bool missing = false;
    CHECK_FAILS(tb_text_file_read(path, "thing", 10, &text, &missing, &err), TB_ERR_IO, &err,
                "cannot open thing");
    CHECK(missing);
    write_text(path, "{\"\xc3\xa9\": 1}"); /* é: valid */
    CHECK_OK(tb_text_file_read(path, "thing", 10, &text, &missing, &err), &err);
    CHECK(!missing && text && strcmp(text, "{\"\xc3\xa9\": 1}") == 0);
    free(text);
    CHECK_FAILS(tb_text_file_read(path, "thing", 8, &text, NULL, &err), TB_ERR_INVALID, &err,
                "9 bytes, more than the 8 allowed");
    CHECK(text == NULL);
    write_text(path, "{\"\xc0\xaf\": 1}"); /* an overlong '/' */
    CHECK_FAILS(tb_text_file_read(path, "thing", 10, &text, NULL, &err), TB_ERR_INVALID, &err,
                "not valid UTF-8 at byte offset 2");
    remove(path);
    CHECK(tb_utf8_invalid_at("\xf4\x90\x80\x80", 4) == 0); /* past U+10FFFF */
    CHECK(tb_utf8_invalid_at("a\xe2\x82", 3) == 1);         /* cut short */
    CHECK(tb_utf8_invalid_at("\xf0\x9f\x98\x80", 4) == -1);  /* U+1F600 */
}

/* A NUL byte in a WordNet gloss (which would cut the line short, losing its words): refused,
 * naming the file and the line. */
static void test_wordnet_nul(const char *dir)
{
    static const char *const files[4] = {"data.noun", "data.verb", "data.adj", "data.adv"};
    static const char line[] = "00001740 03 n 01 entity 0 000 | a thing\n";
    static const char bad[] = "00001741 03 n 01 thing 0 000 | a \0hidden word\n";
    char wn[600], path[700];
    snprintf(wn, sizeof wn, "%s/wordnet", dir);
    CHECK(mkdir(wn, 0700) == 0);
    for (int i = 0; i < 4; i++) {
        snprintf(path, sizeof path, "%s/%s", wn, files[i]);
        FILE *f = fopen(path, "wb");
        if (!f) abort();
        fputs(line, f);
        if (i == 1) fwrite(bad, 1, sizeof bad - 1, f);
        fclose(f);
    }
    tb_error err = {0};
    tb_prepare_report r;
    tb_workload_config cfg = {.data_dir = wn, .cache_dir = dir};
    snprintf(path, sizeof path, "%s/data.verb line 2", wn);
    if (!CHECK_FAILS(tb_workload_prepare("wordnet_sparse", &cfg, false, &r, &err),
                     TB_ERR_FORMAT, &err, path))
        fprintf(stderr, "NUL in a gloss: %s\n", err.message);
    CHECK(strstr(err.message, "NUL byte") != NULL);
    for (int i = 0; i < 4; i++) {
        snprintf(path, sizeof path, "%s/%s", wn, files[i]);
        remove(path);
    }
    rmdir(wn);
    snprintf(path, sizeof path, "%s/wordnet-glosses.tbcache", dir);
    remove(path);
}

int main(void)
{
    char dir[] = "/tmp/tb_test_bad_input_XXXXXX";
    if (!mkdtemp(dir)) return 1;
    test_text_file_read(dir);
    test_wordnet_nul(dir);
    for (size_t i = 0; i < sizeof readers / sizeof readers[0]; i++) test_reader(&readers[i], dir);
    rmdir(dir);
    return tb_test_finish("test_bad_input");
}
