/* child.c: waiting for a child process under a wall-clock limit and a progress watch, and
 * how it ended. */
#define _GNU_SOURCE /* strsignal, pipe2 */
#include "bench/child.h"
#include "core/clock.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

pid_t tb_child_fork(int *fd)
{
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) return -1;
    pid_t parent = getpid();
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        close(fds[0]);
        close(fds[1]);
        errno = e;
        return -1;
    }
    if (pid == 0) {
        close(fds[0]);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent) _exit(3); /* the parent died before prctl */
        dup2(STDERR_FILENO, STDOUT_FILENO);
        *fd = fds[1];
        return 0;
    }
    close(fds[1]);
    fcntl(fds[0], F_SETFL, O_NONBLOCK);
    *fd = fds[0];
    return pid;
}

/* The watch's limit on the seconds between beats in the child's present phase. */
static double stall_limit(const tb_child_watch *w)
{
    return w->ready && !atomic_load(w->ready) ? w->setup_s : w->stall_s;
}

void tb_child_watch_start(tb_child_watcher *w, pid_t pid, double limit_s,
                          const tb_child_watch *watch)
{
    memset(w, 0, sizeof *w);
    w->pid = pid;
    w->limit_s = limit_s;
    if (watch) w->watch = *watch;
    w->t0 = w->last_progress = tb_monotonic_s();
    w->seen = w->watch.beats ? atomic_load(w->watch.beats) : 0;
    w->end = TB_CHILD_ENDED;
}

bool tb_child_poll(tb_child_watcher *w, int *wstatus)
{
    *wstatus = 0;
    pid_t got = waitpid(w->pid, wstatus, WNOHANG);
    if (got == w->pid) return true;
    if (got < 0 && errno != EINTR) {
        kill(w->pid, SIGKILL);
        waitpid(w->pid, wstatus, 0);
        return true;
    }
    const double now = tb_monotonic_s();
    const _Atomic uint64_t *progress = w->watch.beats;
    if (progress) {
        uint64_t beats = atomic_load(progress);
        if (beats != w->seen) {
            w->seen = beats;
            w->last_progress = now;
        }
    }
    if (w->end == TB_CHILD_ENDED) {
        if (w->limit_s > 0 && now - w->t0 > w->limit_s) w->end = TB_CHILD_TIMED_OUT;
        else if (progress && now - w->last_progress > stall_limit(&w->watch))
            w->end = TB_CHILD_HUNG;
        if (w->end != TB_CHILD_ENDED) kill(w->pid, SIGKILL); /* a stopped process too */
    }
    return false;
}

void tb_child_nap(void)
{
    struct timespec ts = {0, 20 * 1000 * 1000};
    nanosleep(&ts, NULL);
}

tb_child_end tb_child_wait(pid_t pid, double limit_s, const tb_child_watch *watch,
                           int *wstatus)
{
    tb_child_watcher w;
    tb_child_watch_start(&w, pid, limit_s, watch);
    while (!tb_child_poll(&w, wstatus)) tb_child_nap();
    return w.end;
}

void tb_child_describe(int wstatus, char *buf, size_t cap)
{
    if (WIFSIGNALED(wstatus))
        snprintf(buf, cap, "killed by signal %d (%s)", WTERMSIG(wstatus),
                 strsignal(WTERMSIG(wstatus)));
    else
        snprintf(buf, cap, "exited with status %d", WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1);
}
