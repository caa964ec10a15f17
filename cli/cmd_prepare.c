/* cmd_prepare.c: `trainbench prepare`: builds the prepared-data caches of the workloads. */
#include "cli.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char prepare_usage[] =
    "usage: trainbench prepare [options] [WORKLOAD...]\n"
    "\n"
    "Turns each data package's files into a compact cache (tokenisation, vocabulary) once;\n"
    "every run reuses it. Without WORKLOAD, prepares the data of every workload; an unknown\n"
    "WORKLOAD exits 2 before anything is prepared. A valid cache is reused; a missing, stale\n"
    "(package updated) or corrupt one is rebuilt. Fashion-MNIST is read directly (no cache):\n"
    "prepare reads its four files and checks them as train does (headers, 28 x 28 images,\n"
    "60000 + 10000 examples, labels), failing with train's error. A cache is written to\n"
    "CACHE.tmp.PID, then renamed; such temporary files of processes no longer running (a\n"
    "prepare killed while writing) are removed.\n"
    "\n"
    "options:\n"
    TB_CLI_DATA_HELP
    "  -f, --force               rebuild even a valid cache\n"
    "  -h, --help                this help\n"
    "\n"
    "A missing package fails with exit code 3 and the apt-get command that installs it;\n"
    "data files that are there but corrupt or incomplete fail with exit code 1, naming\n"
    "them.\n";

int tb_cli_prepare(int argc, char **argv)
{
    tb_workload_config cfg = {0};
    tb_cli_data data = {0};
    bool force = false;
    struct option opts[] = {TB_CLI_DATA_OPTIONS,
                            {"force", no_argument, 0, 'f'},
                            {"help", no_argument, 0, 'h'},
                            {0, 0, 0, 0}};
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":fh", opts, NULL)) != -1) {
        if (tb_cli_data_option(c, &data)) continue;
        switch (c) {
        case 'f': force = true; break;
        case 'h': fputs(prepare_usage, stdout); return TB_EXIT_OK;
        default: return tb_cli_option_error("prepare", c, argv);
        }
    }
    if (!tb_cli_data_finish("prepare", &data)) return TB_EXIT_USAGE;
    cfg.data_dir = data.data_dir;
    cfg.cache_dir = data.cache_dir;
    const char *ids[64];
    int n = 0;
    if (optind < argc) {
        /* every name is checked before any work: a typo prepares nothing */
        if (argc - optind > 64) {
            tb_cli_error("prepare: %d workloads named, at most 64", argc - optind);
            return TB_EXIT_USAGE;
        }
        for (int i = optind; i < argc; i++) {
            bool known = false;
            for (int j = 0; j < tb_workload_count(); j++)
                known |= strcmp(tb_workload_info_at(j)->id, argv[i]) == 0;
            if (!known) {
                tb_cli_error("prepare: unknown workload '%s' (see `trainbench workloads`); "
                             "nothing was prepared", argv[i]);
                return TB_EXIT_USAGE;
            }
            ids[n++] = argv[i];
        }
    } else { /* one workload per data package */
        for (int i = 0; i < tb_workload_count() && n < 64; i++) {
            const tb_workload_info *w = tb_workload_info_at(i);
            int dup = 0;
            for (int j = 0; j < i; j++)
                dup |= strcmp(tb_workload_info_at(j)->data_package, w->data_package) == 0;
            if (!dup) ids[n++] = w->id;
        }
    }
    int rc = TB_EXIT_OK;
    for (int i = 0; i < n; i++) {
        tb_error err = {0};
        tb_prepare_report r;
        tb_status st = tb_workload_prepare(ids[i], &cfg, force, &r, &err);
        if (st != TB_OK) {
            tb_cli_error("prepare %s: %s", ids[i], err.message);
            if (rc == TB_EXIT_OK) rc = tb_cli_exit_code(st);
            continue;
        }
        if (r.path[0])
            printf("%-18s %s %s (%s): %lld tokens, vocabulary %lld, %lld bytes\n", ids[i],
                   r.rebuilt ? "built" : "reused", r.path, r.reason, (long long)r.tokens,
                   (long long)r.vocabulary, (long long)r.bytes);
        else
            printf("%-18s %s\n", ids[i], r.reason);
        if (r.stale_temps_removed > 0)
            printf("%-18s removed %d temporary file%s of an interrupted prepare\n", "",
                   r.stale_temps_removed, r.stale_temps_removed > 1 ? "s" : "");
    }
    return rc;
}
