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

tb_child_end tb_child_wait(pid_t pid, double limit_s, const tb_child_watch *watch,
                           int *wstatus)
{
    double t0 = tb_monotonic_s(), last_progress = t0;
    const _Atomic uint64_t *progress = watch ? watch->beats : NULL;
    uint64_t seen = progress ? atomic_load(progress) : 0;
    tb_child_end end = TB_CHILD_ENDED;
    *wstatus = 0;
    for (;;) {
        pid_t w = waitpid(pid, wstatus, WNOHANG);
        if (w == pid) break;
        if (w < 0 && errno != EINTR) {
            kill(pid, SIGKILL);
            waitpid(pid, wstatus, 0);
            break;
        }
        const double now = tb_monotonic_s();
        if (progress) {
            uint64_t beats = atomic_load(progress);
            if (beats != seen) {
                seen = beats;
                last_progress = now;
            }
        }
        if (end == TB_CHILD_ENDED) {
            if (limit_s > 0 && now - t0 > limit_s) end = TB_CHILD_TIMED_OUT;
            else if (progress && now - last_progress > stall_limit(watch))
                end = TB_CHILD_HUNG;
            if (end != TB_CHILD_ENDED) kill(pid, SIGKILL); /* a stopped process too */
        }
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return end;
}

void tb_child_describe(int wstatus, char *buf, size_t cap)
{
    if (WIFSIGNALED(wstatus))
        snprintf(buf, cap, "killed by signal %d (%s)", WTERMSIG(wstatus),
                 strsignal(WTERMSIG(wstatus)));
    else
        snprintf(buf, cap, "exited with status %d", WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1);
}
