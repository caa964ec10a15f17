/* cmd_merge.c: `trainbench merge`: joins the stores of a benchmark's shards (`bench --shard
 * I/N`, each a job array's task) into one results store that `score` reads. */
#include "cli.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

static const char merge_usage[] =
    "usage: trainbench merge --db FILE [options] SHARD_STORE...\n"
    "\n"
    "Merges the results stores of a benchmark's shards (`trainbench bench --shard I/N`, each\n"
    "run on its own, e.g. by a job array's task, into a store of its own) into the store FILE\n"
    "(created if missing): the benchmark's spec (every store's must be the same), each\n"
    "finished trial with its evals, and the trials no shard finished, as planned (the same\n"
    "`bench` command on FILE runs them). In one transaction per store: a store whose finished\n"
    "trials are all in FILE already (merged before), or one with a trial FILE holds finished\n"
    "as another run (shards that overlap), is refused and nothing of it is merged; the stores\n"
    "before it stay merged. Calibration windows are not merged (a `bench` run of FILE takes\n"
    "them).\n"
    "\n"
    "options:\n"
    "      --db FILE             the store to merge into (default results.db)\n"
    "      --name NAME           the benchmark to merge (default: the only one each shard's\n"
    "                            store holds)\n"
    "  -q, --quiet               no line per store\n"
    "  -h, --help                this help\n"
    "\n"
    "example:\n"
    "  trainbench bench --preset quick --db shard-0.db --shard 0/2\n"
    "  trainbench bench --preset quick --db shard-1.db --shard 1/2\n"
    "  trainbench merge --db results.db shard-0.db shard-1.db && trainbench score --db "
    "results.db\n";

enum { OPT_DB = 1000, OPT_NAME };

int tb_cli_merge(int argc, char **argv)
{
    const char *db = "results.db", *name = NULL;
    bool quiet = false;
    struct option opts[] = {
        {"db", required_argument, 0, OPT_DB},
        {"name", required_argument, 0, OPT_NAME},
        {"quiet", no_argument, 0, 'q'},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":qh", opts, NULL)) != -1) {
        switch (c) {
        case OPT_DB:
            if (!tb_cli_check_db(optarg)) return TB_EXIT_USAGE;
            db = optarg;
            break;
        case OPT_NAME: name = optarg; break;
        case 'q': quiet = true; break;
        case 'h': fputs(merge_usage, stdout); return TB_EXIT_OK;
        default: return tb_cli_option_error("merge", c, argv);
        }
    }
    if (optind >= argc) {
        tb_cli_error("merge: name the shards' stores to merge into %s (see `trainbench merge "
                     "--help`)", db);
        return TB_EXIT_USAGE;
    }
    for (int i = optind; i < argc; i++) {
        tb_store_merge_counts n;
        tb_error err = {0};
        char bench[64];
        tb_status st = tb_bench_merge(db, argv[i], name, bench, sizeof bench, &n, &err);
        if (st != TB_OK) {
            tb_cli_error("merging %s into %s: %s", argv[i], db, err.message);
            if (i > optind)
                fprintf(stderr, "(the %d store%s before it %s merged)\n", i - optind,
                        i - optind > 1 ? "s" : "", i - optind > 1 ? "are" : "is");
            return tb_cli_exit_code(st);
        }
        if (!quiet)
            fprintf(stderr, "%s: benchmark '%s': %d finished trial%s merged, %d there already, "
                            "%d unfinished added as planned\n", argv[i], bench, n.copied,
                    n.copied == 1 ? "" : "s", n.already, n.planned);
    }
    return TB_EXIT_OK;
}
