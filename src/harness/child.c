/* child.c: waiting for a child process under a wall-clock limit, and how it ended. */
#define _GNU_SOURCE /* strsignal */
#include "harness/child.h"
#include "core/clock.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

bool tb_child_wait(pid_t pid, double limit_s, int *wstatus)
{
    double t0 = tb_monotonic_s();
    bool timed_out = false;
    *wstatus = 0;
    for (;;) {
        pid_t w = waitpid(pid, wstatus, WNOHANG);
        if (w == pid) break;
        if (w < 0 && errno != EINTR) {
            kill(pid, SIGKILL);
            waitpid(pid, wstatus, 0);
            break;
        }
        if (!timed_out && tb_monotonic_s() - t0 > limit_s) {
            timed_out = true;
            kill(pid, SIGKILL);
        }
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return timed_out;
}

void tb_child_describe(int wstatus, char *buf, size_t cap)
{
    if (WIFSIGNALED(wstatus))
        snprintf(buf, cap, "killed by signal %d (%s)", WTERMSIG(wstatus),
                 strsignal(WTERMSIG(wstatus)));
    else
        snprintf(buf, cap, "exited with status %d", WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1);
}
