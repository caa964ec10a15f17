/* cmd_study.c: `trainbench variance` and `trainbench compare`: many runs, honest statistics. */
#include "cli.h"
#include "train_file.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "trainbench/study.h"

/* The help of the options both commands take. */
#define STUDY_SHARED_HELP                                                                       \
    TB_CLI_THREADS_HELP                                                                         \
    TB_CLI_DEVICE_HELP                                                                          \
    TB_CLI_PRECISION_HELP                                                                       \
    "      --eval-examples N     evaluate N examples of each split, spread evenly over it\n"  \
    "      --split KIND          official (default) or bootstrap: a new bootstrap training\n" \
    "                            set with out-of-bootstrap validation/test per split seed\n"  \
    "      --full-batch N        a fixed subset of N training examples, every step on all\n" \
    "                            of it (train --help)\n"                                      \
    "      --dropout-rate R      dropout_rate of the hidden layers, in [0, 1) (workloads\n"  \
    "                            with dropout: fmnist_*_dropout*, fmnist_mlp_projected:\n"  \
    "                            the rate of its projected noise)\n"  \
    TB_CLI_DATA_HELP                                                                            \
    "      --json                print the result as JSON on stdout\n"                        \
    "  -q, --quiet               no progress lines\n"                                         \
    "  -h, --help                this help\n"

static const char variance_usage[] =
    "usage: trainbench variance [options]\n"
    "\n"
    "How much does the result move when one source of variation changes? Runs --runs\n"
    "trainings per source, changing only that source's seed, then --runs changing every seed\n"
    "(\"all\"), and reports each source's standard deviation with a 95% chi-square interval\n"
    "(exact for normally distributed results) and its share of \"all\" (Bouthillier et al.\n"
    "2021). (sources+1) x runs trainings in all. A run that diverges (`train`'s exit code 4)\n"
    "is left out and counted; any other failure (an unknown algorithm, a bad --hp, a value\n"
    "float32 cannot use) stops the study before training.\n"
    "\n"
    "options:\n"
    "  -w, --workload ID         workload (default fmnist_mlp)\n"
    "  -a, --algorithm NAME      training algorithm (default adamw)\n"
    "  -p, --hp NAME=VALUE       a hyperparameter (repeatable); --lr VALUE for learning_rate\n"
    "  -e, --epochs X            length of each run (default 1); or --steps N\n"
    "  -b, --batch-size N        examples per step (default: the workload's)\n"
    "  -n, --runs N              runs per source (default 5, at least 2)\n"
    "      --sources LIST        comma-separated sources to vary one at a time, each once,\n"
    "                            at least one (default init,data_order,split; also\n"
    "                            dropout, augment, hparam; a source the runs never read --\n"
    "                            dropout on a model without dropout, augment without\n"
    "                            --augment, hparam without --search -- is refused, naming why)\n"
    "      --search N            tune first: N quasi-random points of the search space on the\n"
    "                            base seeds, the best by the validation metric, which every\n"
    "                            source's runs train; each run of hparam (its search seed\n"
    "                            varied) and of \"all\" makes a search of its own instead\n"
    "      --space FILE          the search space (AlgoPerf JSON; default\n"
    "                            <search spaces>/<algorithm>.json)\n"
    "      --search-spaces DIR   where the built-ins' <name>.json search spaces are\n"
    "                            (default: search_spaces/ in " TB_CLI_SHARE_HELP ")\n"
    "  -m, --metric NAME         validation (default: the workload's metric on the\n"
    "                            validation split), test, validation_error, validation_loss,\n"
    "                            test_error, test_loss (not time_to_target: a missed target\n"
    "                            has no finite time to take a std of; compare accepts it);\n"
    "                            the error rates only for workloads that classify\n"
    "  -s, --seed N              master seed of the study (default 0)\n"
    STUDY_SHARED_HELP;

static const char compare_usage[] =
    "usage: trainbench compare -A NAME -B NAME [options]\n"
    "\n"
    "Is algorithm A better than B here? Runs --pairs paired trainings of each: pair i gives\n"
    "both sides the same seed for every source of variation (split, init, data order,\n"
    "dropout, augmentation), all of them new for each pair. Reports P(A>B) (lower metric is\n"
    "better), its exact 95% (Clopper-Pearson) interval, and a verdict: A better, B better, no\n"
    "meaningful difference (gamma 0.75), or not significant with the number of pairs the\n"
    "exact sign test needs for 95% power at P(A>B) = gamma (Bouthillier et al. 2021). A run\n"
    "that diverges (`train`'s exit code 4: a loss, a gradient or an update not finite)\n"
    "loses its pair (both diverged: a tie); any other failure (an unknown algorithm, a bad\n"
    "--hp-b, a value float32 cannot use such as damping=1e-300) stops the comparison before\n"
    "training.\n"
    "\n"
    "options:\n"
    "  -A, --algorithm-a NAME    algorithm A (required): an optimizer of the registry, or a\n"
    "                            submission file (x.py, x.so) trained as `train -a FILE`\n"
    "                            trains it (a Python exception stops the comparison)\n"
    "  -B, --algorithm-b NAME    algorithm B (required), the same\n"
    "      --hp-a NAME=VALUE     a hyperparameter of A (repeatable); --lr-a VALUE\n"
    "      --hp-b NAME=VALUE     a hyperparameter of B (repeatable); --lr-b VALUE\n"
    "  -w, --workload ID         workload (default fmnist_mlp)\n"
    "  -e, --epochs X            length of each run (default 1); or --steps N\n"
    "  -b, --batch-size N        examples per step (default: the workload's)\n"
    "  -n, --pairs N             pairs of runs (default 10, at least 2)\n"
    "      --search N            first tune each algorithm: N quasi-random (Halton) points of\n"
    "                            its search space, best by the validation metric, then the\n"
    "                            pairs retrain that configuration (N + pairs runs per side)\n"
    "      --space-a FILE        A's search space (AlgoPerf JSON; default\n"
    "                            <search spaces>/<algorithm>.json); --space-b FILE for B\n"
    "      --search-spaces DIR   where the built-ins' <name>.json search spaces are\n"
    "                            (default: search_spaces/ in " TB_CLI_SHARE_HELP "), as\n"
    "                            bench\n"
    "      --ideal               the ideal estimator: a new search for every pair, on that\n"
    "                            pair's seeds, its hparam seed drawing the points (pairs x N\n"
    "                            runs per side)\n"
    "  -m, --metric NAME         validation (default: the workload's metric), test,\n"
    "                            validation_error, validation_loss, test_error, test_loss,\n"
    "                            or time_to_target (runs stop at the workload's\n"
    "                            target within its budget, judged on the whole\n"
    "                            validation split even with --eval-examples; a miss, or\n"
    "                            a divergence, counts as +inf); the error rates only for\n"
    "                            workloads that classify\n"
    "      --gamma X             smallest meaningful P(A>B) (default 0.75)\n"
    "  -s, --seed N              master seed (default 0)\n"
    STUDY_SHARED_HELP;

static void show_run(void *user, const char *group, int index, int total,
                     const tb_train_result *r, const tb_error *err)
{
    const tb_study_metric *metric = user;
    if (r)
        fprintf(stderr, "[%d/%d] %-10s %s %.4f  (%.1f s of training)\n", index, total, group,
                tb_study_metric_name(*metric), tb_study_metric_value(*metric, r),
                r->train_time_s);
    else
        fprintf(stderr, "[%d/%d] %-10s failed: %s\n", index, total, group, err->message);
}

enum { O_LR = 2000, O_SOURCES, O_JSON, O_HPA, O_HPB, O_LRA, O_LRB, O_GAMMA, O_SEARCH, O_SPACE_A,
       O_SPACE_B, O_SPACES, O_IDEAL };

/* The whole of a search-space file, or NULL with a message. Caller frees. */
static char *read_space(const char *path)
{
    char *buf = NULL;
    tb_error err = {0};
    if (tb_text_file_read(path, "search space", TB_TEXT_FILE_MAX, &buf, NULL, &err) != TB_OK)
        tb_cli_error("%s", err.message);
    return buf;
}

/* Options both commands share (tb_cli_run_option's, the metric and the seed) for the configs
 * cfgs[0..n); returns 0 if handled, 1 if not ours, 2 on a usage error. */
static int common_option(int c, tb_run_config *const *cfgs, int n, tb_study_metric *metric,
                         uint64_t *seed)
{
    int r = tb_cli_run_option(c, cfgs, n);
    if (r != 1) return r;
    tb_error err = {0};
    switch (c) {
    case 'm':
        if (tb_study_metric_parse(optarg, metric, &err) != TB_OK) {
            tb_cli_error("--metric: %s", err.message);
            return 2;
        }
        return 0;
    case 's': return tb_cli_parse_u64("--seed", optarg, seed) ? 0 : 2;
    }
    return 1;
}

/* A submission file's own search space (its TUNING_SEARCH_SPACE), or NULL with a message
 * saying to give one with --space-<side>. Caller frees. */
static char *file_space(const tb_submission_ref *ref, const char *side)
{
    const char *text = tb_submission_ref_search_space(ref);
    char *copy = text ? strdup(text) : NULL;
    if (!text)
        tb_cli_error("compare: %s has no search space of its own (TUNING_SEARCH_SPACE): give "
                     "one with --space-%s FILE", tb_submission_ref_spec(ref), side);
    else if (!copy)
        tb_cli_error("compare: out of memory for %s's search space",
                     tb_submission_ref_spec(ref));
    return copy;
}

/* "key":"<the submission's name>", for a side that is a submission file; null for one of
 * the registry. */
static void json_submission(const char *key, const tb_submission_ref *ref)
{
    printf("\"%s\":", key);
    if (!ref) {
        fputs("null,", stdout);
        return;
    }
    putchar('"'); /* a submission's file path, escaped */
    tb_cli_json_text(tb_submission_ref_name(ref));
    fputs("\",", stdout);
}

static int parse_hp(tb_run_config *c, const char *opt, const char *text)
{
    tb_error err = {0};
    if (tb_hparams_parse_assignment(&c->model.hparams, text, &err) != TB_OK) {
        tb_cli_error("%s: %s", opt, err.message);
        return 2;
    }
    return 0;
}

static int parse_lr(tb_run_config *c, const char *opt, const char *text)
{
    double v;
    if (!tb_cli_parse_double(opt, text, &v)) return 2;
    tb_hparams_set(&c->model.hparams, "learning_rate", v, NULL);
    return 0;
}

static tb_run_config study_default(void)
{
    tb_run_config c = tb_run_config_default();
    c.length.epochs = 1.0;
    c.eval.during = 0;
    return c;
}

int tb_cli_variance(int argc, char **argv)
{
    tb_variance_study_config cfg = {0};
    cfg.base = study_default();
    cfg.runs = 5;
    cfg.n_sources = 3;
    cfg.sources[0] = TB_STREAM_INIT;
    cfg.sources[1] = TB_STREAM_DATA_ORDER;
    cfg.sources[2] = TB_STREAM_SPLIT;
    tb_run_config *const cfgs[1] = {&cfg.base};
    bool json = false, quiet = false;
    struct option opts[] = {
        TB_CLI_RUN_OPTIONS,
        {"algorithm", required_argument, 0, 'a'}, {"hp", required_argument, 0, 'p'},
        {"lr", required_argument, 0, O_LR},       {"runs", required_argument, 0, 'n'},
        {"sources", required_argument, 0, O_SOURCES}, {"metric", required_argument, 0, 'm'},
        {"seed", required_argument, 0, 's'},      {"json", no_argument, 0, O_JSON},
        {"quiet", no_argument, 0, 'q'},           {"help", no_argument, 0, 'h'},
        {"search", required_argument, 0, O_SEARCH}, {"space", required_argument, 0, O_SPACE_A},
        {"search-spaces", required_argument, 0, O_SPACES},
        {0, 0, 0, 0},
    };
    char spaces_dir[4096];
    const char *space = NULL,
               *spaces = tb_cli_share_path("search_spaces", spaces_dir, sizeof spaces_dir);
    optind = 1;
    opterr = 0;
    int c;
    long lv;
    while ((c = getopt_long(argc, argv, ":w:a:p:e:b:n:m:s:t:qh", opts, NULL)) != -1) {
        int r = common_option(c, cfgs, 1, &cfg.metric, &cfg.seed);
        if (r == 2) return TB_EXIT_USAGE;
        if (r == 0) continue;
        switch (c) {
        case 'a': cfg.base.model.algorithm = optarg; break;
        case 'p': if (parse_hp(&cfg.base, "--hp", optarg)) return TB_EXIT_USAGE; break;
        case O_LR: if (parse_lr(&cfg.base, "--lr", optarg)) return TB_EXIT_USAGE; break;
        case 'n':
            if (!tb_cli_parse_int("--runs", optarg, 2, 100000, &lv)) return TB_EXIT_USAGE;
            cfg.runs = (int)lv;
            break;
        case O_SOURCES: {
            char buf[256];
            snprintf(buf, sizeof buf, "%s", optarg);
            cfg.n_sources = 0;
            for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
                tb_error err = {0};
                tb_stream s;
                if (tb_stream_parse(tok, &s, &err) != TB_OK) {
                    tb_cli_error("--sources: %s", err.message);
                    return TB_EXIT_USAGE;
                }
                for (int k = 0; k < cfg.n_sources; k++)
                    if (cfg.sources[k] == s) {
                        tb_cli_error("--sources: '%s' is listed twice", tok);
                        return TB_EXIT_USAGE;
                    }
                cfg.sources[cfg.n_sources++] = s; /* distinct, so at most TB_STREAM_COUNT */
            }
            if (cfg.n_sources == 0) {
                tb_cli_error("--sources: the list is empty: name one or more of init, "
                             "data_order, split, dropout, augment");
                return TB_EXIT_USAGE;
            }
            break;
        }
        case O_SEARCH:
            if (!tb_cli_parse_int("--search", optarg, 1, 10000, &lv)) return TB_EXIT_USAGE;
            cfg.search_trials = (int)lv;
            break;
        case O_SPACE_A: space = optarg; break;
        case O_SPACES: spaces = optarg; break;
        case O_JSON: json = true; break;
        case 'q': quiet = true; break;
        case 'h': fputs(variance_usage, stdout); return TB_EXIT_OK;
        default: return tb_cli_option_error("variance", c, argv);
        }
    }
    if (tb_cli_no_arguments("variance", argc, argv) != TB_EXIT_OK) return TB_EXIT_USAGE;
    if (!tb_cli_run_finish("variance", cfgs, 1)) return TB_EXIT_USAGE;
    if (!quiet) {
        cfg.on_run = show_run;
        cfg.user = &cfg.metric;
    }
    if (space && cfg.search_trials == 0) {
        tb_cli_error("variance: --space needs a search (--search N)");
        return TB_EXIT_USAGE;
    }
    char path[1024], *text = NULL;
    if (cfg.search_trials > 0) {
        snprintf(path, sizeof path, "%s/%s.json", spaces, cfg.base.model.algorithm);
        cfg.space_source = space ? space : path;
        if (!(text = read_space(cfg.space_source))) return TB_EXIT_USAGE;
        cfg.space = text;
    }
    tb_variance_study study;
    tb_error err = {0};
    tb_status st = tb_variance_study_run(&cfg, &study, &err);
    free(text);
    if (st != TB_OK) {
        tb_cli_error("%s", err.message);
        return tb_cli_exit_code(st);
    }
    if (json) {
        printf("{\"workload\":\"%s\",\"algorithm\":\"%s\",\"metric\":\"%s\",\"runs\":%d,"
               "\"interval\":\"chi-square\",\"alpha\":%g,\"groups\":[",
               cfg.base.model.workload, cfg.base.model.algorithm, tb_study_metric_name(cfg.metric), cfg.runs,
               TB_VARIANCE_STUDY_ALPHA);
        for (int g = 0; g < study.n_groups; g++) {
            const tb_variance_row *r = &study.rows[g];
            printf("%s{\"source\":\"%s\",\"n\":%lld,\"failed\":%lld,\"mean\":", g ? "," : "",
                   r->name, (long long)r->n, (long long)study.failed[g]);
            tb_cli_json_number("%.6g", r->mean);
            fputs(",\"std\":", stdout);
            tb_cli_json_number("%.6g", r->std);
            fputs(",\"std_ci\":[", stdout);
            tb_cli_json_number("%.6g", r->std_ci.lo);
            fputs(",", stdout);
            tb_cli_json_number("%.6g", r->std_ci.hi);
            fputs("],\"std_share\":", stdout);
            tb_cli_json_number("%.4f", r->std_share);
            fputs(",\"values\":[", stdout);
            for (int64_t i = 0; i < study.n_values[g]; i++) {
                if (i) fputs(",", stdout);
                tb_cli_json_number("%.6g", study.values[g][i]);
            }
            printf("]}");
        }
        printf("]}\n");
    } else {
        printf("%s with %s, %s over %d runs per source:\n", cfg.base.model.workload,
               cfg.base.model.algorithm, tb_study_metric_name(cfg.metric), cfg.runs);
        printf("%-12s %4s %10s %10s %23s %11s\n", "source", "n", "mean", "std",
               "std 95% CI", "std / all");
        bool undefined = false;
        for (int g = 0; g < study.n_groups; g++) {
            const tb_variance_row *r = &study.rows[g];
            printf("%-12s %4lld %10.4f %10.4f   [%8.4f, %8.4f] ", r->name, (long long)r->n,
                   r->mean, r->std, r->std_ci.lo, r->std_ci.hi);
            if (isfinite(r->std_share)) printf("%10.0f%%\n", 100 * r->std_share);
            else printf("%11s\n", "-");
            undefined |= !isfinite(r->std_share);
        }
        printf("(std intervals: chi-square, exact if the results are normally distributed)\n");
        if (undefined)
            printf("(std / all: - where it is undefined: every \"all\" run gave the same "
                   "value, std 0; a coarse metric, e.g. an error rate on few --eval-examples, "
                   "does that)\n");
        for (int g = 0; g < study.n_groups; g++)
            if (study.failed[g] > 0)
                printf("%s: %lld of %d runs diverged and are left out\n", study.names[g],
                       (long long)study.failed[g], cfg.runs);
    }
    tb_variance_study_free(&study);
    return TB_EXIT_OK;
}

int tb_cli_compare(int argc, char **argv)
{
    tb_compare_config cfg = {0};
    cfg.a = study_default();
    cfg.b = study_default();
    cfg.a.model.algorithm = cfg.b.model.algorithm = NULL;
    cfg.pairs = 10;
    cfg.pab = tb_pab_options_default();
    bool json = false, quiet = false;
    const char *space_a = NULL, *space_b = NULL;
    char spaces_dir[4096];
    const char *spaces = tb_cli_share_path("search_spaces", spaces_dir, sizeof spaces_dir);
    tb_run_config *const cfgs[2] = {&cfg.a, &cfg.b};
    struct option opts[] = {
        TB_CLI_RUN_OPTIONS,
        {"algorithm-a", required_argument, 0, 'A'}, {"algorithm-b", required_argument, 0, 'B'},
        {"hp-a", required_argument, 0, O_HPA},      {"hp-b", required_argument, 0, O_HPB},
        {"lr-a", required_argument, 0, O_LRA},      {"lr-b", required_argument, 0, O_LRB},
        {"pairs", required_argument, 0, 'n'},       {"metric", required_argument, 0, 'm'},
        {"gamma", required_argument, 0, O_GAMMA},   {"seed", required_argument, 0, 's'},
        {"json", no_argument, 0, O_JSON},           {"quiet", no_argument, 0, 'q'},
        {"help", no_argument, 0, 'h'},              {"search", required_argument, 0, O_SEARCH},
        {"space-a", required_argument, 0, O_SPACE_A}, {"space-b", required_argument, 0, O_SPACE_B},
        {"search-spaces", required_argument, 0, O_SPACES}, {"ideal", no_argument, 0, O_IDEAL},
        {0, 0, 0, 0},
    };
    optind = 1;
    opterr = 0;
    int c;
    long lv;
    double dv;
    while ((c = getopt_long(argc, argv, ":A:B:w:e:b:n:m:s:t:qh", opts, NULL)) != -1) {
        int r = common_option(c, cfgs, 2, &cfg.metric, &cfg.seed);
        if (r == 2) return TB_EXIT_USAGE;
        if (r == 0) continue;
        switch (c) {
        case 'A': cfg.a.model.algorithm = optarg; break;
        case 'B': cfg.b.model.algorithm = optarg; break;
        case O_HPA: if (parse_hp(&cfg.a, "--hp-a", optarg)) return TB_EXIT_USAGE; break;
        case O_HPB: if (parse_hp(&cfg.b, "--hp-b", optarg)) return TB_EXIT_USAGE; break;
        case O_LRA: if (parse_lr(&cfg.a, "--lr-a", optarg)) return TB_EXIT_USAGE; break;
        case O_LRB: if (parse_lr(&cfg.b, "--lr-b", optarg)) return TB_EXIT_USAGE; break;
        case 'n':
            if (!tb_cli_parse_int("--pairs", optarg, 2, 100000, &lv)) return TB_EXIT_USAGE;
            cfg.pairs = (int)lv;
            break;
        case O_GAMMA:
            if (!tb_cli_parse_double("--gamma", optarg, &dv)) return TB_EXIT_USAGE;
            if (!(dv > 0.5 && dv < 1)) {
                tb_cli_error("--gamma: %s is outside (0.5, 1)", optarg);
                return TB_EXIT_USAGE;
            }
            cfg.pab.gamma = dv;
            break;
        case O_SEARCH:
            if (!tb_cli_parse_int("--search", optarg, 0, 10000, &lv)) return TB_EXIT_USAGE;
            cfg.search_trials = (int)lv;
            break;
        case O_SPACE_A: space_a = optarg; break;
        case O_SPACE_B: space_b = optarg; break;
        case O_SPACES: spaces = optarg; break;
        case O_IDEAL: cfg.ideal = true; break;
        case O_JSON: json = true; break;
        case 'q': quiet = true; break;
        case 'h': fputs(compare_usage, stdout); return TB_EXIT_OK;
        default: return tb_cli_option_error("compare", c, argv);
        }
    }
    if (tb_cli_no_arguments("compare", argc, argv) != TB_EXIT_OK) return TB_EXIT_USAGE;
    if (!tb_cli_run_finish("compare", cfgs, 2)) return TB_EXIT_USAGE;
    if (!cfg.a.model.algorithm || !cfg.b.model.algorithm) {
        tb_cli_error("compare: give both algorithms: -A NAME -B NAME");
        return TB_EXIT_USAGE;
    }
    cfg.name_a = cfg.a.model.algorithm;
    cfg.name_b = cfg.b.model.algorithm;
    if (cfg.ideal && cfg.search_trials == 0) {
        tb_cli_error("compare: --ideal needs a search (--search N)");
        return TB_EXIT_USAGE;
    }
    /* a submission file's side trains as `train -a FILE` does (tb_cli_train_file) */
    tb_submission_ref *ref_a = NULL, *ref_b = NULL;
    tb_error load_err = {0};
    tb_status loaded = tb_cli_study_side(cfg.a.model.algorithm, &ref_a, &cfg.trainer_a,
                                         &load_err);
    if (loaded == TB_OK)
        loaded = tb_cli_study_side(cfg.b.model.algorithm, &ref_b, &cfg.trainer_b, &load_err);
    if (loaded != TB_OK) {
        tb_cli_error("compare: %s", load_err.message);
        tb_submission_unload(ref_a);
        return tb_cli_exit_code(loaded);
    }
    char *text_a = NULL, *text_b = NULL;
    char pa[1024], pb[1024]; /* the default space files; named in messages during the run */
    if (cfg.search_trials > 0) {
        snprintf(pa, sizeof pa, "%s/%s.json", spaces, cfg.a.model.algorithm);
        snprintf(pb, sizeof pb, "%s/%s.json", spaces, cfg.b.model.algorithm);
        cfg.space_a_source = space_a ? space_a : ref_a ? cfg.a.model.algorithm : pa;
        cfg.space_b_source = space_b ? space_b : ref_b ? cfg.b.model.algorithm : pb;
        text_a = space_a || !ref_a ? read_space(cfg.space_a_source) : file_space(ref_a, "a");
        text_b = !text_a ? NULL
                 : space_b || !ref_b ? read_space(cfg.space_b_source)
                                     : file_space(ref_b, "b");
        if (!text_a || !text_b) {
            free(text_a);
            tb_submission_unload(ref_a);
            tb_submission_unload(ref_b);
            return TB_EXIT_USAGE;
        }
        cfg.space_a = text_a;
        cfg.space_b = text_b;
        if (!quiet)
            fprintf(stderr, "%s: %d trainings per side (%s)\n",
                    cfg.ideal ? "ideal estimator" : "one search, then paired retrains",
                    cfg.ideal ? cfg.pairs * cfg.search_trials : cfg.search_trials + cfg.pairs,
                    cfg.ideal ? "a new search for every pair" : "search + retrains");
    }
    if (!quiet) {
        cfg.on_run = show_run;
        cfg.user = &cfg.metric;
    }
    tb_compare_result res;
    tb_error err = {0};
    tb_status st = tb_compare_run(&cfg, &res, &err);
    free(text_a);
    free(text_b);
    if (st != TB_OK) {
        tb_cli_error("%s", err.message);
        tb_submission_unload(ref_a);
        tb_submission_unload(ref_b);
        return tb_cli_exit_code(st);
    }
    char sentence[512];
    tb_pab_describe(&res.pab, cfg.name_a, cfg.name_b, sentence, sizeof sentence);
    const tb_pab_result *p = &res.pab;
    if (json) {
        printf("{\"workload\":\"%s\",\"a\":\"%s\",\"b\":\"%s\",", cfg.a.model.workload,
               cfg.name_a, cfg.name_b);
        json_submission("a_submission", ref_a);
        json_submission("b_submission", ref_b);
        printf("\"metric\":\"%s\",\"pairs\":%lld,"
               "\"failed_a\":%lld,\"failed_b\":%lld,\"finite_a\":%lld,\"finite_b\":%lld,"
               "\"mean_a\":",
               tb_study_metric_name(cfg.metric), (long long)res.n, (long long)res.failed_a,
               (long long)res.failed_b, (long long)res.summary_a.n, (long long)res.summary_b.n);
        tb_cli_json_number("%.6g", res.summary_a.mean);
        fputs(",\"mean_b\":", stdout);
        tb_cli_json_number("%.6g", res.summary_b.mean);
        printf(",\"wins\":%lld,\"ties\":%lld,\"losses\":%lld,\"p_a_better\":", (long long)p->wins,
               (long long)p->ties, (long long)p->losses);
        tb_cli_json_number("%.4f", p->p);
        fputs(",\"ci\":[", stdout);
        tb_cli_json_number("%.4f", p->ci.lo);
        fputs(",", stdout);
        tb_cli_json_number("%.4f", p->ci.hi);
        printf("],\"interval\":\"clopper-pearson\",\"alpha\":%g,\"beta\":%g,\"gamma\":%g,"
               "\"verdict\":\"%s\",\"runs_needed\":%lld,\"more_runs\":%lld,\"a_values\":[",
               p->alpha, p->beta, p->gamma, tb_verdict_name(p->verdict),
               (long long)p->runs_needed, (long long)p->more_runs);
        for (int64_t i = 0; i < res.n; i++) {
            if (i) fputs(",", stdout);
            tb_cli_json_number("%.6g", res.a[i]);
        }
        printf("],\"b_values\":[");
        for (int64_t i = 0; i < res.n; i++) {
            if (i) fputs(",", stdout);
            tb_cli_json_number("%.6g", res.b[i]);
        }
        printf("],\"runs\":%lld,\"best_a\":{", (long long)res.runs);
        for (int k = 0; k < res.best_a.count; k++) {
            printf("%s\"%s\":", k ? "," : "", res.best_a.names[k]);
            tb_cli_json_number("%.6g", res.best_a.values[k]);
        }
        printf("},\"best_b\":{");
        for (int k = 0; k < res.best_b.count; k++) {
            printf("%s\"%s\":", k ? "," : "", res.best_b.names[k]);
            tb_cli_json_number("%.6g", res.best_b.values[k]);
        }
        printf("},\"sentence\":\"%s\"}\n", sentence);
    } else {
        printf("%s, %s over %lld pairs (lower is better; %lld trainings in all):\n",
               cfg.a.model.workload, tb_study_metric_name(cfg.metric), (long long)res.n,
               (long long)res.runs);
        if (cfg.search_trials > 0) {
            const tb_hparams *bs[2] = {&res.best_a, &res.best_b};
            for (int side = 0; side < 2; side++) {
                printf("  %-10s %s:", side ? cfg.name_b : cfg.name_a,
                       cfg.ideal ? "first pair's pick" : "best of the search");
                for (int k = 0; k < bs[side]->count; k++)
                    printf(" %s=%.4g", bs[side]->names[k], bs[side]->values[k]);
                printf("\n");
            }
        }
        const tb_summary *sums[2] = {&res.summary_a, &res.summary_b};
        const int64_t failed[2] = {res.failed_a, res.failed_b};
        for (int side = 0; side < 2; side++) {
            const char *name = side ? cfg.name_b : cfg.name_a;
            if (sums[side]->n == 0)
                printf("  %-10s no finite result\n", name);
            else if (sums[side]->n < res.n)
                printf("  %-10s mean %.4f  std %.4f  median %.4f  (of the %lld finite "
                       "results)\n",
                       name, sums[side]->mean, sums[side]->std, sums[side]->median,
                       (long long)sums[side]->n);
            else
                printf("  %-10s mean %.4f  std %.4f  median %.4f\n", name, sums[side]->mean,
                       sums[side]->std, sums[side]->median);
            if (failed[side] > 0)
                printf("  %-10s %lld of %lld runs diverged: each lost its pair (or tied if "
                       "both sides diverged)\n",
                       name, (long long)failed[side], (long long)res.n);
        }
        printf("  wins %lld, ties %lld, losses %lld for %s\n", (long long)p->wins,
               (long long)p->ties, (long long)p->losses, cfg.name_a);
        printf("%s\n", sentence);
    }
    tb_compare_result_free(&res);
    tb_submission_unload(ref_a);
    tb_submission_unload(ref_b);
    return TB_EXIT_OK;
}
