/* child.h: waiting for a child process under a wall-clock limit, and saying how it ended
 * (internal to the benchmark: trial processes, library probes). */
#ifndef TRAINBENCH_BENCH_CHILD_H
#define TRAINBENCH_BENCH_CHILD_H

#include <stdbool.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Forks a child that answers through a pipe: it dies with its parent (PR_SET_PDEATHSIG; it
 * _exits at once if the parent is already gone), its stdout is its stderr (what it runs prints
 * nothing on the caller's stdout), and *fd is the pipe's write end. In the parent *fd is the
 * read end, non-blocking (a process the child started could hold the write end). Returns the
 * pid (0 in the child, which must end with _exit), or -1 with errno set and nothing open.
 * Stdio buffers are flushed first; the caller must not have started threads. */
pid_t tb_child_fork(int *fd);

/* How a child that tb_child_wait waited for ended. */
typedef enum tb_child_end {
    TB_CHILD_ENDED = 0, /* by itself (or a signal from elsewhere): see its wait status */
    TB_CHILD_TIMED_OUT, /* killed for passing the wall-clock limit */
    TB_CHILD_HUNG,      /* killed for making no progress */
} tb_child_end;

/* A child's progress, in memory it shares with its parent. */
typedef struct tb_child_watch {
    const _Atomic uint64_t *beats; /* a counter the child raises as it makes progress */
    const _Atomic int *ready;      /* nonzero once its set-up is done (NULL: from the start) */
    double setup_s;                /* the most seconds between beats before it is ready */
    double stall_s;                /* the most seconds between beats once it is */
} tb_child_watch;

/* Waits for child `pid` (polling every 20 ms, never blocking on it), and SIGKILLs it once
 * limit_s seconds have passed since the call (limit_s <= 0: no limit) or, with watch not
 * NULL, once its beats have not changed for the watch's limit of the child's phase (set-up or
 * not). Writes its wait status to *wstatus. */
tb_child_end tb_child_wait(pid_t pid, double limit_s, const tb_child_watch *watch,
                           int *wstatus);

/* How a child ended, from its wait status: "killed by signal 11 (Segmentation fault)" or
 * "exited with status 3". */
void tb_child_describe(int wstatus, char *buf, size_t cap);

#endif
