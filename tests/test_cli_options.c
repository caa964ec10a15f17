/* test_cli_options.c: the options several commands share follow one rule everywhere: the data
 * options (--data-dir, --cache-dir) of every command that loads data, --threads, --device and
 * --eval-examples of every command that trains, --search-spaces of both commands that search. */
#include "testutil.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char out[65536];

static int run(const char *args) { return tb_test_run_cli(args, out, sizeof out); }

static bool has(const char *needle) { return tb_test_output_has(out, needle); }

static char db[64];

/* Makes directory dir (a mkdtemp template) and writes text into dir/name, whose path goes to
 * path; false if either fails. */
static bool file_in_temp_dir(char *dir, const char *name, const char *text, char *path,
                             size_t cap)
{
    if (!CHECK(mkdtemp(dir) != NULL)) return false;
    snprintf(path, cap, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (!CHECK(f != NULL)) return false;
    fputs(text, f);
    return CHECK(fclose(f) == 0);
}

/* The commands that train, each with an algorithm that does not exist: options are checked
 * first, so the checks below never train (and fail fast where an option is not checked). */
static const char *training_commands(int i, char *buf, size_t cap)
{
    static const char *const fixed[] = {"train -q -a nosuch", "variance -q -a nosuch",
                                        "compare -A nosuch -B adamw -q"};
    if (i < 3) return fixed[i];
    snprintf(buf, cap, "bench -q --db %s -s nosuch", db);
    return buf;
}

/* --threads 0 was taken by train, variance and compare (as "all cores") and refused by
 * bench; --eval-examples had two upper limits. Now every command that trains refuses them
 * with the same message, before any work. */
static void test_one_rule(void)
{
    static const char *const bad[][2] = {
        {"--threads 0", "--threads: 0 threads cannot run anything: give 1 to 4096, or leave"},
        {"--threads 4097", "--threads: 4097 is outside [0, 4096]"},
        {"--eval-examples 0", "--eval-examples: 0 is outside [1, 1000000000]"},
        {"--eval-examples 1000000001", "--eval-examples: 1000000001 is outside [1, 1000000000]"},
        {"--device tpu", "--device: unknown device 'tpu'"},
    };
    char buf[256], args[512];
    for (int i = 0; i < 4; i++) {
        const char *cmd = training_commands(i, buf, sizeof buf);
        for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
            snprintf(args, sizeof args, "%s %s", cmd, bad[k][0]);
            if (!CHECK(run(args) == 2 && has(bad[k][1])))
                fprintf(stderr, "for: trainbench %s\n", args);
        }
        snprintf(args, sizeof args, "%.*s --help", (int)strcspn(cmd, " "), cmd);
        if (!CHECK(run(args) == 0 && has("(1 to 4096; default:") && has("--device NAME")))
            fprintf(stderr, "for: trainbench %s\n", args);
    }
}

/* Every command that loads data takes --data-dir and --cache-dir (compare and variance had
 * neither, bench no --cache-dir), documents them alike, and uses them. */
static void test_data_options(void)
{
    static const char *const cmds[] = {"prepare", "train", "variance", "compare", "bench"};
    char args[512];
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        snprintf(args, sizeof args, "%s --help", cmds[i]);
        if (!CHECK(run(args) == 0 && has("--data-dir DIR        the data package's directory") &&
                   has("--cache-dir DIR       prepared-data cache (default") &&
                   has("command exits 2 unless given")))
            fprintf(stderr, "for: trainbench %s\n", args);
    }
    /* the data directory reaches the runs: missing data is exit 3, naming the directory */
    CHECK(run("variance --data-dir /nonexistent --steps 2 --runs 2 -q") == 3 &&
          has("the data directory /nonexistent"));
    CHECK(run("compare -A sgd -B adamw --data-dir /nonexistent --steps 2 --pairs 2 -q") == 3 &&
          has("the data directory /nonexistent"));
    /* the cache directory reaches the runs (and bench's trials): a corrupt cache there is
     * named (found before any data is read, so this is quick) */
    char cache[] = "/tmp/tb_cli_options_cache_XXXXXX", path[128], corrupt[160];
    if (!file_in_temp_dir(cache, "wordnet-glosses.tbcache", "junk", path, sizeof path)) return;
    snprintf(corrupt, sizeof corrupt, "the data cache %s is corrupt", path);
    snprintf(args, sizeof args,
             "variance -w wordnet_sparse --cache-dir %s --steps 1 --runs 2 -q", cache);
    CHECK(run(args) == 1 && has(corrupt));
    snprintf(args, sizeof args,
             "compare -A sgd -B adamw -w wordnet_sparse --cache-dir %s --steps 1 --pairs 2 -q",
             cache);
    CHECK(run(args) == 1 && has(corrupt));
    snprintf(args, sizeof args,
             "bench --db %s -s sgd -w wordnet_sparse --ruleset self --studies 1 --budget 0.1 "
             "--cache-dir %s", db, cache);
    /* the machine's failure, not sgd's: the trial is left to run again, not recorded failed */
    CHECK(run(args) == 1 && has("left unfinished to rerun") && has(corrupt));
    unlink(path);
    rmdir(cache);
    /* without HOME and XDG_CACHE_HOME every one of them has no default cache directory: exit 2
     * before any work, as prepare and train did */
    char *home = getenv("HOME"), *xdg = getenv("XDG_CACHE_HOME");
    char saved_home[1024] = "", saved_xdg[1024] = "";
    if (home) snprintf(saved_home, sizeof saved_home, "%s", home);
    if (xdg) snprintf(saved_xdg, sizeof saved_xdg, "%s", xdg);
    unsetenv("HOME");
    unsetenv("XDG_CACHE_HOME");
    char buf[256];
    for (int i = 0; i < 4; i++) {
        const char *cmd = training_commands(i, buf, sizeof buf);
        char name[32];
        snprintf(name, sizeof name, "%.*s: no cache directory", (int)strcspn(cmd, " "), cmd);
        if (!CHECK(run(cmd) == 2 && has(name) && has("give --cache-dir DIR")))
            fprintf(stderr, "for: trainbench %s\n", cmd);
    }
    CHECK(run("variance --sources init --runs 2 --steps 1 --eval-examples 100 -q "
              "--cache-dir /tmp") == 0);
    if (home) setenv("HOME", saved_home, 1);
    if (xdg) setenv("XDG_CACHE_HOME", saved_xdg, 1);
}

/* compare reads the built-ins' search spaces from --search-spaces DIR, as bench does. */
static void test_search_spaces_dir(void)
{
    char dir[] = "/tmp/tb_cli_options_XXXXXX", path[128], args[1024];
    if (!file_in_temp_dir(dir, "sgd.json", "{\"learning_rat\": {\"min\": 0.01, \"max\": 0.1}}",
                          path, sizeof path))
        return;
    snprintf(args, sizeof args,
             "compare -A adamw -B sgd --search 2 --search-spaces %s --space-a "
             "%s/search_spaces/adamw.json -q", dir, TB_SOURCE_DIR);
    CHECK(run(args) == 2 && has("search space of sgd") && has("learning_rat"));
    CHECK(run("compare --help") == 0 && has("--search-spaces DIR"));
    unlink(path);
    rmdir(dir);
}

/* variance runs the registry's optimizers: a submission file given as an algorithm is
 * refused, pointing to train -a, compare -A and bench -s; train and compare run one
 * (test_python_train, test_python_compare), and one that is not there is an error naming it */
static void test_submission_file_algorithm(void)
{
    CHECK(run("variance -a mine.py -q") == 2 && has("is a submission file") &&
          has("trainbench train -a mine.py") && has("trainbench bench -s mine.py"));
    CHECK(run("compare -A sgd -B ./mine.so --pairs 2 -q") == 2 && has("./mine.so") &&
          !has("is a submission file"));
    CHECK(run("train -a mine.py -q --steps 1") != 0 && has("mine.py") &&
          !has("is a submission file"));
}

int main(void)
{
    snprintf(db, sizeof db, "/tmp/tb_cli_options_%d.db", (int)getpid());
    test_submission_file_algorithm();
    test_one_rule();
    test_data_options();
    test_search_spaces_dir();
    tb_test_remove_store(db);
    return tb_test_finish("test_cli_options");
}
