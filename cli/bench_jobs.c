/* bench_jobs.c: `bench --jobs K --cpus LIST`: how many trials run at once on this machine and
 * on which cores, checked, and the threads of each trial (the cores shared out among the jobs
 * unless --threads says). */
#include "cli.h"
#include "trainbench/machine.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* The CPUs the jobs share: the --cpus list's, else those this process may run on. */
static int layout_cores(const char *cpus, int *n)
{
    if (!cpus) {
        *n = tb_machine_cpus();
        return TB_EXIT_OK;
    }
    int *list = malloc(TB_BENCH_CPUS_MAX * sizeof *list);
    tb_error err = {0};
    tb_status st = list ? tb_bench_cpus_parse(cpus, list, n, &err)
                        : tb_fail(&err, TB_ERR_NOMEM, "out of memory");
    free(list);
    if (st != TB_OK) {
        tb_cli_error("--cpus: %s", err.message);
        return TB_EXIT_USAGE;
    }
    return TB_EXIT_OK;
}

int tb_cli_bench_jobs(long jobs, const char *cpus, tb_bench_spec *spec)
{
    int cores = 1;
    if (layout_cores(cpus, &cores) != TB_EXIT_OK) return TB_EXIT_USAGE;
    if (cores < 1) cores = 1;
    if (cpus && jobs > cores) {
        tb_cli_error("--jobs %ld with --cpus %s: each job needs a CPU of its own and the list "
                     "has %d; give fewer --jobs or more CPUs", jobs, cpus, cores);
        return TB_EXIT_USAGE;
    }
    int threads = spec->trial.threads;
    const int rpt = spec->trial.ranks_per_trial > 1 ? spec->trial.ranks_per_trial : 1;
    if (rpt > cores) {
        tb_cli_error("--ranks-per-trial %d: more ranks than the %d %s (each rank of a trial "
                     "needs a core)", rpt, cores,
                     cpus ? "CPUs of --cpus" : "cores of this machine");
        return TB_EXIT_USAGE;
    }
    if (rpt > 1 && jobs * rpt > cores) {
        tb_cli_error("--ranks-per-trial %d with --jobs %ld: %ld ranks at once, more than the %d "
                     "%s; give fewer --jobs or fewer ranks per trial", rpt, jobs, jobs * rpt,
                     cores, cpus ? "CPUs of --cpus" : "cores");
        return TB_EXIT_USAGE;
    }
    if (threads == 0 && (jobs > 1 || cpus || rpt > 1)) {
        /* the cores shared out: each trial (each of its ranks) gets cores / (K R) threads */
        threads = cores / (int)(jobs * rpt);
        if (threads < 1) {
            tb_cli_error("--jobs %ld on %d cores leaves no core per trial: give fewer --jobs, "
                         "or --threads N to run %ld trials of N threads each on %d cores "
                         "(slower, oversubscribed)", jobs, cores, jobs, cores);
            return TB_EXIT_USAGE;
        }
    }
    if (jobs * threads * rpt > cores)
        fprintf(stderr, "warning: %ld jobs of %d threads each on %d %s: the trials share "
                        "cores and their times are slower than alone (scored times should "
                        "come from --jobs 1 or dedicated --cpus)\n",
                jobs, threads, cores, cpus ? "CPUs of --cpus" : "cores");
    spec->trial.threads = threads;
    spec->trial.jobs = (int)jobs;
    spec->trial.cpus = cpus;
    return TB_EXIT_OK;
}
