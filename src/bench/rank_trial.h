/* rank_trial.h: a trial that is data-parallel over R ranks (--ranks-per-trial R; internal to
 * the benchmark). Its process is `mpirun -np R trainbench bench-trial FILE`, exec'd by the
 * trial's forked child: MPI cannot run in a fork of an MPI process, and a nested mpirun needs
 * a fresh environment. FILE is memory that the benchmark and the trial's rank 0 share: the
 * heartbeat the benchmark watches, the trial to run, and rank 0's error when it could not
 * record an outcome. */
#ifndef TRAINBENCH_BENCH_RANK_TRIAL_H
#define TRAINBENCH_BENCH_RANK_TRIAL_H

#include "bench/trial_impl.h"

#include <stddef.h>

typedef struct tb_rank_trial_shared {
    tb_trial_heartbeat hb;   /* beaten by rank 0 */
    _Atomic int failed;      /* set by rank 0 when it could not start or record: err says why */
    tb_error err;
    int64_t trial_id;
    tb_trial_options opts;   /* ranks_per_trial R; its strings below (opts' pointers are
                                not used) */
    char store[1024], submission[1024], data_dir[1024], cache_dir[1024];
} tb_rank_trial_shared;

/* A new shared file in $TMPDIR (or /tmp) describing trial_id of store_path; its path into
 * path. *out: the mapping, to tb_rank_trial_release. */
tb_status tb_rank_trial_share(const char *store_path, int64_t trial_id,
                              const tb_submission_ref *sub, const tb_trial_options *opts,
                              tb_rank_trial_shared **out, char *path, size_t cap, tb_error *err);
/* Unmaps sh and removes its file. */
void tb_rank_trial_release(tb_rank_trial_shared *sh, const char *path);
/* In the trial's forked child: the MPI launcher's variables of this process's environment
 * removed (OMPI_*, PMIX_*, PMI_*, SLURM_*, so that the nested mpirun starts a job of its own on
 * this machine), then mpirun -np R of this binary's `bench-trial path`. Does not return: when
 * mpirun cannot be started, sh->err says so and the process _exits with status 2. */
void tb_rank_trial_exec(tb_rank_trial_shared *sh, const char *path);

#endif
