/* isolate.h: a trial's child process started, watched without blocking and finished, so that
 * one executor can watch several at once (internal to the benchmark; tb_trial_run_isolated is
 * the three in a row). */
#ifndef TRAINBENCH_BENCH_ISOLATE_H
#define TRAINBENCH_BENCH_ISOLATE_H

#include "trainbench/benchmark.h"
#include "bench/child.h"
#include "bench/trial_impl.h"

typedef struct tb_trial_proc {
    int64_t id;
    tb_trial_record rec;     /* as it was when started: its names for messages */
    tb_trial_heartbeat *hb;  /* shared with the child */
    int fd;                  /* the read end of the child's error pipe */
    tb_child_watcher watcher;
    double limit, hang, setup, t0;
    int wstatus;             /* once polled to its end */
    /* a data-parallel trial (--ranks-per-trial): the file its rank 0 shares (hb is in it) */
    struct tb_rank_trial_shared *shared;
    char shared_path[600];
    int ranks;               /* its ranks (0: one process) */
} tb_trial_proc;

/* Starts trial_id's process (pinned to opts->cpus when set) and returns at once. */
tb_status tb_trial_spawn(const char *store_path, int64_t trial_id, const tb_submission_ref *sub,
                         const tb_trial_options *opts, tb_trial_proc *p, tb_error *err);
/* One look (tb_child_poll): true once the process has ended and been reaped. */
bool tb_trial_proc_poll(tb_trial_proc *p);
/* After the process ended: what tb_trial_run_isolated returns (the child's store failure as
 * the error, or a trial without an outcome recorded failed with the reason); releases p. */
tb_status tb_trial_proc_finish(const char *store_path, tb_trial_proc *p, tb_error *err);

/* ---- CPU lists (tb_bench_cpus_parse) ---- */
/* The k-th of `groups` equal shares of cpus[0..n) as a list into buf ("2,3"); the n % groups
 * left over go unused. */
void tb_bench_cpus_share(const int *cpus, int n, int groups, int k, char *buf, size_t cap);
/* Pins this process (and the threads it starts later) to the CPUs of text; NULL or "": no
 * pinning. */
tb_status tb_bench_cpus_pin(const char *text, tb_error *err);

#endif
