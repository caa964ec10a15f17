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

/* Watching one child without blocking: started with its pid, then polled (tb_child_poll) as
 * often as the caller likes, so that one process can watch several children at once. */
typedef struct tb_child_watcher {
    pid_t pid;
    double limit_s;        /* wall-clock limit (<= 0: none) */
    tb_child_watch watch;  /* its progress (watch.beats NULL: none) */
    double t0, last_progress;
    uint64_t seen;
    tb_child_end end;
} tb_child_watcher;

void tb_child_watch_start(tb_child_watcher *w, pid_t pid, double limit_s,
                          const tb_child_watch *watch);
/* One look at the child: reaps it if it ended (true, its wait status in *wstatus), else
 * SIGKILLs it once it passed the wall-clock limit or, with a watch, once its beats have not
 * changed for the limit of its phase (set-up or not), and returns false. w->end says why it
 * was killed. */
bool tb_child_poll(tb_child_watcher *w, int *wstatus);

/* Waits for child `pid` (polling every 20 ms, never blocking on it), and SIGKILLs it once
 * limit_s seconds have passed since the call (limit_s <= 0: no limit) or, with watch not
 * NULL, once its beats have not changed for the watch's limit of the child's phase (set-up or
 * not). Writes its wait status to *wstatus. */
tb_child_end tb_child_wait(pid_t pid, double limit_s, const tb_child_watch *watch,
                           int *wstatus);

/* Sleeps the 20 ms between two polls. */
void tb_child_nap(void);

/* How a child ended, from its wait status: "killed by signal 11 (Segmentation fault)" or
 * "exited with status 3". */
void tb_child_describe(int wstatus, char *buf, size_t cap);

#endif
