/* ranks.h: a benchmark across the ranks of an MPI job (internal): what rank 0 (the
 * coordinator, which owns the store) and the other ranks (workers, which run trials in child
 * processes against a scratch store of their own) say to each other. Messages are structs
 * sent as bytes: every rank runs the same build, which HELLO checks first. */
#ifndef TRAINBENCH_BENCH_RANKS_H
#define TRAINBENCH_BENCH_RANKS_H

#include "bench/bench_impl.h"
#include "trainbench/dist.h"

enum {
    TB_MSG_HELLO = 1, /* worker -> 0: tb_msg_hello, once; 0 -> worker: rank 0's, in answer
                         (its host: the worker's layout), unless it is refused (STOP) */
    TB_MSG_REQUEST,   /* worker -> 0: ready for a trial (an int, 0) */
    TB_MSG_ASSIGN,    /* 0 -> worker: the trial to run (tb_trial_record, its point chosen) */
    TB_MSG_STOP,      /* 0 -> worker: no more trials (an int: 0, or 1 when refused) */
    TB_MSG_START,     /* worker -> 0: the trial started (tb_msg_start) */
    TB_MSG_EVAL,      /* worker -> 0: one of its evals (tb_msg_eval), as it is measured */
    TB_MSG_END,       /* worker -> 0: its outcome (tb_trial_record, the store's id) */
    TB_MSG_FAIL,      /* worker -> 0: it could not run or record (tb_msg_fail): the machine's
                         failure, not the submission's; the benchmark stops */
    TB_MSG_BEAT,      /* worker -> 0: alive, running trial (an int64 id) */
};

typedef struct tb_msg_hello {
    char code_version[64];
    char host[64];
    int record_bytes;         /* sizeof(tb_trial_record) in its build */
    int threads;              /* of its trials */
} tb_msg_hello;

typedef struct tb_msg_start {
    int64_t id;
    char code_version[64];
    char machine[512];
} tb_msg_start;

typedef struct tb_msg_eval {
    int64_t id;
    tb_eval_record eval;
} tb_msg_eval;

typedef struct tb_msg_fail {
    int64_t id;
    tb_error error;
} tb_msg_fail;

/* Seconds between a worker's beats while it runs a trial. */
#define TB_WORKER_BEAT_S 1.0

/* Rank 0: runs the plan's unfinished trials on the other ranks (coordinator.c). */
tb_status tb_bench_coordinate(const tb_bench_plan *plan, tb_dist *d, double worker_timeout_s,
                              tb_bench_progress_fn progress, void *user, tb_bench_summary *sum,
                              tb_error *err);
/* Rank 0, when the benchmark was refused before its trials were handed out: tells every
 * worker to stop as it says hello. */
void tb_bench_dismiss(tb_dist *d);
/* A rank above 0: asks rank 0 for trials and runs each until told to stop (worker.c). */
tb_status tb_bench_work(tb_dist *d, const tb_bench_spec *spec, tb_submission_ref *const *refs,
                        int n_refs, tb_error *err);

#endif
