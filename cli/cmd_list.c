/* cmd_list.c: `trainbench workloads` and `trainbench algorithms`. */
#include "cli.h"

#include <stdio.h>
#include <string.h>

int tb_cli_workloads(int argc, char **argv)
{
    if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        printf("usage: trainbench workloads\n\nLists every workload and variant with its "
               "metric, validation and test targets,\ntime budget (timed training seconds), "
               "eval period, default batch size, the Debian\npackages the data needs and its "
               "files. Targets and budgets: docs/WORKLOADS.md.\n");
        return TB_EXIT_OK;
    }
    if (argc > 1) {
        tb_cli_error("workloads: unexpected argument '%s'", argv[1]);
        return TB_EXIT_USAGE;
    }
    printf("%-24s %-13s %8s %8s %7s %5s %5s  %s\n", "workload", "metric", "val.tgt", "test.tgt",
           "budget", "eval", "batch", "data packages");
    for (int i = 0; i < tb_workload_count(); i++) {
        const tb_workload_info *w = tb_workload_info_at(i);
        printf("%-24s %-13s %8.4g %8.4g %6.0fs %4.0fs %5d  %s\n", w->id, w->metric,
               w->validation_target, w->test_target, w->max_runtime_s, w->eval_period_s,
               w->default_batch_size, w->data_package);
        printf("    %s%s%s\n    data: %s; loss: %s\n", w->summary,
               !w->variant[0] ? "" : w->held_out ? "; held-out variant of " : "; variant of ",
               w->variant[0] ? w->base : "",
               w->data_source, w->loss_desc);
    }
    return TB_EXIT_OK;
}

int tb_cli_algorithms(int argc, char **argv)
{
    if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        printf("usage: trainbench algorithms\n\nLists every training algorithm with its "
               "hyperparameters, defaults and valid ranges\n"
               "(columns: name, default, range, meaning; '(' and ')' exclude the bound).\n"
               "docs/OPTIMIZERS.md gives every update rule.\n");
        return TB_EXIT_OK;
    }
    if (argc > 1) {
        tb_cli_error("algorithms: unexpected argument '%s'", argv[1]);
        return TB_EXIT_USAGE;
    }
    printf("%d algorithms; set hyperparameters with --hp name=value (a search space uses the "
           "same names).\n", tb_optimizer_count());
    for (int i = 0; i < tb_optimizer_count(); i++) {
        const tb_optimizer_info *o = tb_optimizer_info_at(i);
        printf("\n%s: %s\n", o->name, o->summary);
        for (int j = 0; j < o->n_hparams; j++) {
            const tb_hparam_spec *h = &o->hparams[j];
            char range[48];
            if (h->is_flag)
                snprintf(range, sizeof range, "0 or 1");
            else
                snprintf(range, sizeof range, "%c%g, %g%c", h->min_open ? '(' : '[', h->min,
                         h->max, h->max_open ? ')' : ']');
            printf("  %-20s %-9g %-14s %s\n", h->name, h->default_value, range, h->help);
        }
    }
    printf("\npresets (train --preset NAME, bench -s NAME: an algorithm at a published fixed "
           "configuration; docs/SUBMISSIONS.md):\n");
    for (int i = 0; i < tb_optimizer_preset_count(); i++) {
        const tb_optimizer_preset *p = tb_optimizer_preset_at(i);
        printf("  %-20s %s: %s%s\n", p->name, p->algorithm, p->summary,
               p->self_tuning ? " [AlgoPerf self-tuning]" : "");
    }
    return TB_EXIT_OK;
}
