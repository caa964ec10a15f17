/* cmd_score.c: `trainbench score`: the score table of the benchmarks in a results store. */
#include "cli.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char score_usage[] =
    "usage: trainbench score [options]\n"
    "\n"
    "Scores the benchmarks in a results store by AlgoPerf's rules: per trial the time to the\n"
    "validation target, per study the fastest trial, per workload the median over studies (a\n"
    "miss counts as infinite), ratios to the fastest submission capped at 4, the benchmark\n"
    "score (the normalised area under the performance profile, in closed form) and the\n"
    "geometric-mean speedup over a reference submission (a miss counts as budget + 1 s).\n"
    "\n"
    "options:\n"
    "      --db FILE          results store (default results.db)\n"
    "      --name NAME        only this benchmark (default: every benchmark in the store)\n"
    "      --reference NAME   submission the speedups are relative to (default: the first);\n"
    "                         one of every scored benchmark's submissions\n"
    "      --variant-rule     a base workload counts only if its held-out variant is\n"
    "                         reached too, within 4x of the fastest; the variants gate and\n"
    "                         are not counted; the score, the profile (JSON) and the\n"
    "                         speedup count the same workloads, a voided base time (marked\n"
    "                         *, \"disqualified\" in the JSON) as a miss\n"
    "      --time BASIS       the time each trial's time to target is counted in: wall\n"
    "                         (the default: accumulated submission seconds, AlgoPerf's),\n"
    "                         reference (its steps priced at the workload's reference step\n"
    "                         time, from the store's calibration windows) or steps\n"
    "      --json             one JSON object per benchmark on stdout\n"
    "  -h, --help             this help\n";

int tb_cli_print_scores(const char *db, const char *name, const char *reference,
                        bool variant_rule, tb_time_basis basis, bool json)
{
    tb_error err = {0};
    tb_store *store;
    tb_status st = tb_store_open_readonly(db, &store, &err);
    if (st != TB_OK) {
        tb_cli_error("%s", err.message);
        return tb_cli_exit_code(st);
    }
    char **names = NULL;
    int n = 0;
    if (!name) st = tb_store_benchmarks(store, &names, &n, &err);
    if (st == TB_OK && !name && n == 0)
        st = tb_fail(&err, TB_ERR_INVALID, "%s holds no benchmark yet (run `trainbench bench`)",
                     db);
    for (int i = 0; st == TB_OK && i < (name ? 1 : n); i++) {
        tb_score_options o = {name ? name : names[i], reference, variant_rule, 0, basis};
        tb_score_table *t;
        st = tb_score_store(store, &o, &t, &err);
        if (st != TB_OK) break;
        if (json) tb_score_table_write_json(t, stdout);
        else {
            if (i > 0) putchar('\n');
            tb_score_table_write_text(t, stdout);
        }
        tb_score_table_destroy(t);
    }
    for (int i = 0; i < n; i++) free(names[i]);
    free(names);
    tb_store_close(store);
    if (st != TB_OK) {
        tb_cli_error("%s", err.message);
        return tb_cli_exit_code(st);
    }
    return TB_EXIT_OK;
}

int tb_cli_score(int argc, char **argv)
{
    const char *db = "results.db", *name = NULL, *reference = NULL;
    bool json = false, variant_rule = false;
    tb_time_basis basis = TB_TIME_WALL;
    tb_error err = {0};
    enum { OPT_DB = 1000, OPT_NAME, OPT_REF, OPT_VARIANT, OPT_JSON, OPT_TIME };
    struct option opts[] = {
        {"db", required_argument, 0, OPT_DB},
        {"name", required_argument, 0, OPT_NAME},
        {"reference", required_argument, 0, OPT_REF},
        {"variant-rule", no_argument, 0, OPT_VARIANT},
        {"json", no_argument, 0, OPT_JSON},
        {"time", required_argument, 0, OPT_TIME},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (c) {
        case OPT_DB:
            if (!tb_cli_check_db(optarg)) return TB_EXIT_USAGE;
            db = optarg;
            break;
        case OPT_NAME: name = optarg; break;
        case OPT_REF: reference = optarg; break;
        case OPT_VARIANT: variant_rule = true; break;
        case OPT_JSON: json = true; break;
        case OPT_TIME:
            if (tb_time_basis_parse(optarg, &basis, &err) != TB_OK)
                return tb_cli_error("--time: %s", err.message), TB_EXIT_USAGE;
            break;
        case 'h': fputs(score_usage, stdout); return TB_EXIT_OK;
        default: return tb_cli_option_error("score", c, argv);
        }
    }
    if (tb_cli_no_arguments("score", argc, argv) != TB_EXIT_OK) return TB_EXIT_USAGE;
    return tb_cli_print_scores(db, name, reference, variant_rule, basis, json);
}
