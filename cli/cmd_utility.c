/* cmd_utility.c: `trainbench utility`: candidate search spaces scored against the trials a
 * results store holds, at several budgets (Ariafar et al., AISTATS 2022). */
#include "cli.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char utility_usage[] =
    "usage: trainbench utility --workload ID --space FILE [--space FILE ...] [options]\n"
    "\n"
    "Which search space should the next study use? Fits a Gaussian process to the finished\n"
    "trials of one submission on one workload in a results store, then estimates for each\n"
    "candidate space and budget b (trials per study), by Monte Carlo over joint posterior\n"
    "draws, the expected best objective of b points drawn uniformly from the space and the\n"
    "probability that the best of them reaches the target (Ariafar et al., AISTATS 2022).\n"
    "The objective of a trial: log(time to target / budget) when it reached the target\n"
    "(below 0), else log(best validation metric / target) (0 or more); lower is better; a\n"
    "failed trial counts as the worst finished one. Small budgets favour tight spaces around\n"
    "good points, larger ones wider spaces.\n"
    "\n"
    "options:\n"
    "      --db FILE           results store (default results.db; only read)\n"
    "  -w, --workload ID       the workload whose trials the GP is fitted to (required)\n"
    "  -s, --submission NAME   whose trials (default: the only submission with finished\n"
    "                          trials on the workload)\n"
    "      --benchmark NAME    only this benchmark's trials (default: every benchmark's)\n"
    "      --space FILE        a candidate search space (AlgoPerf JSON, ranges); repeatable;\n"
    "                          all with the same hyperparameters\n"
    "      --budget LIST       comma-separated budgets, each 1 to 1024 (default 1,4,16)\n"
    "      --draws N           Monte Carlo draws per space (default 1000)\n"
    "      --seed N            seed of the draws and of the GP fit (default 0)\n"
    "      --json              the scores as JSON on stdout\n"
    "  -h, --help              this help\n"
    "\n"
    "example:\n"
    "  trainbench utility --db results.db -w fmnist_mlp -s adamw --space wide.json \\\n"
    "      --space narrow.json --budget 1,4,16\n";

enum { MAX_SPACES = 16, MAX_BUDGETS = 16 };

static bool parse_budgets(const char *text, int *out, int *n)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", text);
    *n = 0;
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        long v;
        if (*n == MAX_BUDGETS) {
            tb_cli_error("--budget: at most %d budgets", MAX_BUDGETS);
            return false;
        }
        if (!tb_cli_parse_int("--budget", tok, 1, 1024, &v)) return false;
        out[(*n)++] = (int)v;
    }
    if (*n == 0) tb_cli_error("--budget: give budgets such as 1,4,16");
    return *n > 0;
}

static void print_text(const tb_space_utility_spec *u, char *const *paths, const tb_utility *r,
                       const tb_space_utility_info *info)
{
    printf("search-space utility of %s on %s: a GP fitted to %d finished trials", info->submission,
           u->workload, info->trials);
    if (info->imputed) printf(" (%d failed, counted as the worst)", info->imputed);
    if (info->skipped) printf("; %d left out (a dimension missing)", info->skipped);
    printf("\nobjective: log(time to target / budget) if reached (< 0), else log(best metric / "
           "target); lower is better\n\n");
    printf("%-32s %6s %12s %10s %10s\n", "space", "budget", "E[best]", "std err", "P(target)");
    for (int s = 0; s < u->n_spaces; s++)
        for (int i = 0; i < u->n_budgets; i++) {
            const tb_utility *x = &r[s * u->n_budgets + i];
            printf("%-32s %6d %12.4f %10.4f %10.3f\n", i ? "" : paths[s], x->budget,
                   x->expected_best, x->std_error, x->p_below);
        }
    printf("\nbest space (lowest E[best]):");
    for (int i = 0; i < u->n_budgets; i++) {
        int best = 0;
        for (int s = 1; s < u->n_spaces; s++)
            if (r[s * u->n_budgets + i].expected_best < r[best * u->n_budgets + i].expected_best)
                best = s;
        printf("%s b=%d %s", i ? ";" : "", u->budgets[i], paths[best]);
    }
    printf("\n");
}

static void print_json(const tb_space_utility_spec *u, char *const *paths, const tb_utility *r,
                       const tb_space_utility_info *info)
{
    printf("{\"submission\":\"");
    tb_cli_json_text(info->submission);
    printf("\",\"workload\":\"");
    tb_cli_json_text(u->workload);
    printf("\",\"trials\":%d,\"imputed\":%d,\"skipped\":%d,\"spaces\":[", info->trials,
           info->imputed, info->skipped);
    for (int s = 0; s < u->n_spaces; s++) {
        printf("%s{\"space\":\"", s ? "," : "");
        tb_cli_json_text(paths[s]);
        printf("\",\"budgets\":[");
        for (int i = 0; i < u->n_budgets; i++) {
            const tb_utility *x = &r[s * u->n_budgets + i];
            printf("%s{\"budget\":%d,\"expected_best\":", i ? "," : "", x->budget);
            tb_cli_json_number("%.6g", x->expected_best);
            printf(",\"std_error\":");
            tb_cli_json_number("%.6g", x->std_error);
            printf(",\"p_target\":");
            tb_cli_json_number("%.6g", x->p_below);
            printf("}");
        }
        printf("]}");
    }
    printf("]}\n");
}

int tb_cli_utility(int argc, char **argv)
{
    const char *db = "results.db";
    char *paths[MAX_SPACES];
    int budgets[MAX_BUDGETS] = {1, 4, 16}, n_budgets = 3, n_spaces = 0;
    long draws = 1000;
    bool json = false;
    tb_space_utility_spec u = {0};
    enum { OPT_DB = 1000, OPT_BENCH, OPT_SPACE, OPT_BUDGET, OPT_DRAWS, OPT_SEED, OPT_JSON };
    struct option opts[] = {
        {"db", required_argument, 0, OPT_DB},
        {"workload", required_argument, 0, 'w'},
        {"submission", required_argument, 0, 's'},
        {"benchmark", required_argument, 0, OPT_BENCH},
        {"space", required_argument, 0, OPT_SPACE},
        {"budget", required_argument, 0, OPT_BUDGET},
        {"draws", required_argument, 0, OPT_DRAWS},
        {"seed", required_argument, 0, OPT_SEED},
        {"json", no_argument, 0, OPT_JSON},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":w:s:h", opts, NULL)) != -1) {
        switch (c) {
        case OPT_DB:
            if (!tb_cli_check_db(optarg)) return TB_EXIT_USAGE;
            db = optarg;
            break;
        case 'w': u.workload = optarg; break;
        case 's': u.submission = optarg; break;
        case OPT_BENCH: u.benchmark = optarg; break;
        case OPT_SPACE:
            if (n_spaces == MAX_SPACES)
                return tb_cli_error("--space: at most %d spaces", MAX_SPACES), TB_EXIT_USAGE;
            paths[n_spaces++] = optarg;
            break;
        case OPT_BUDGET:
            if (!parse_budgets(optarg, budgets, &n_budgets)) return TB_EXIT_USAGE;
            break;
        case OPT_DRAWS:
            if (!tb_cli_parse_int("--draws", optarg, 2, 1000000, &draws)) return TB_EXIT_USAGE;
            break;
        case OPT_SEED:
            if (!tb_cli_parse_u64("--seed", optarg, &u.seed)) return TB_EXIT_USAGE;
            break;
        case OPT_JSON: json = true; break;
        case 'h': fputs(utility_usage, stdout); return TB_EXIT_OK;
        default: return tb_cli_option_error("utility", c, argv);
        }
    }
    if (tb_cli_no_arguments("utility", argc, argv) != TB_EXIT_OK) return TB_EXIT_USAGE;
    if (!u.workload || n_spaces == 0) {
        tb_cli_error("utility: give the workload (-w) and at least one --space (see `trainbench "
                     "utility --help`)");
        return TB_EXIT_USAGE;
    }
    tb_error err = {0};
    tb_status st = TB_OK;
    tb_search_space *spaces[MAX_SPACES] = {0};
    for (int s = 0; st == TB_OK && s < n_spaces; s++) {
        st = tb_search_space_load(paths[s], &spaces[s], &err);
        if (st == TB_ERR_IO || st == TB_ERR_FORMAT) st = TB_ERR_INVALID; /* a bad --space */
    }
    tb_store *store = NULL;
    if (st == TB_OK) st = tb_store_open_readonly(db, &store, &err);
    tb_utility *r = calloc((size_t)n_spaces * n_budgets, sizeof *r);
    tb_space_utility_info info;
    if (st == TB_OK && !r) st = tb_fail(&err, TB_ERR_NOMEM, "out of memory");
    if (st == TB_OK) {
        u.spaces = (const tb_search_space *const *)spaces;
        u.space_names = (const char *const *)paths;
        u.n_spaces = n_spaces;
        u.budgets = budgets;
        u.n_budgets = n_budgets;
        u.draws = (int)draws;
        st = tb_space_utility(store, &u, r, &info, &err);
    }
    if (st == TB_OK) (json ? print_json : print_text)(&u, paths, r, &info);
    else tb_cli_error("%s", err.message);
    free(r);
    tb_store_close(store);
    for (int s = 0; s < n_spaces; s++) tb_search_space_destroy(spaces[s]);
    return tb_cli_exit_code(st);
}
