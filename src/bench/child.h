/* child.h: waiting for a child process under a wall-clock limit, and saying how it ended
 * (internal to the benchmark: trial processes, library probes). */
#ifndef TRAINBENCH_BENCH_CHILD_H
#define TRAINBENCH_BENCH_CHILD_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Forks a child that answers through a pipe: it dies with its parent (PR_SET_PDEATHSIG; it
 * _exits at once if the parent is already gone), its stdout is its stderr (what it runs prints
 * nothing on the caller's stdout), and *fd is the pipe's write end. In the parent *fd is the
 * read end, non-blocking (a process the child started could hold the write end). Returns the
 * pid (0 in the child, which must end with _exit), or -1 with errno set and nothing open.
 * Stdio buffers are flushed first; the caller must not have started threads. */
pid_t tb_child_fork(int *fd);

/* Waits for child `pid` (polling every 20 ms, never blocking on it), and SIGKILLs it once
 * limit_s seconds have passed since the call. Writes its wait status to *wstatus and returns
 * whether it was killed for passing the limit. */
bool tb_child_wait(pid_t pid, double limit_s, int *wstatus);

/* How a child ended, from its wait status: "killed by signal 11 (Segmentation fault)" or
 * "exited with status 3". */
void tb_child_describe(int wstatus, char *buf, size_t cap);

#endif
