/* library.c: opening an external submission's shared library so that a crash in it cannot take
 * the caller down: its ELF constructors and its entry point run first in a probe child
 * process, which reports back through a pipe; only a library that loaded there is loaded here. */
#define _GNU_SOURCE /* pipe2 */
#include "harness/library.h"
#include "harness/child.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

/* Loading is quick; a probe that takes longer hangs (in a constructor or the entry point). */
#define PROBE_LIMIT_S 60.0

/* The first required field of s that is not set, in words, or NULL. */
static const char *missing_field(const tb_submission *s)
{
    if (!s->name || !s->name[0]) return "a name";
    if (!s->get_batch_size) return "get_batch_size";
    if (!s->init_optimizer_state) return "init_optimizer_state";
    if (!s->update_params) return "update_params";
    return NULL;
}

/* dlopen, the entry point and the checks of its table, in this process. */
static tb_status open_checked(const char *path, const char *spec, void **handle,
                              const tb_submission **out, tb_error *err)
{
    *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!*handle)
        return tb_fail(err, TB_ERR_INVALID, "cannot load submission library %s: %s", path,
                       dlerror());
    void *sym = dlsym(*handle, TB_SUBMISSION_ENTRY_NAME);
    if (!sym)
        return tb_fail(err, TB_ERR_INVALID,
                       "submission library %s does not export %s() (see docs/SUBMISSIONS.md)",
                       spec, TB_SUBMISSION_ENTRY_NAME);
    tb_submission_entry_fn entry;
    memcpy(&entry, &sym, sizeof entry); /* object pointer to function pointer (POSIX) */
    const tb_submission *s = entry(TB_SUBMISSION_ABI_VERSION);
    if (!s)
        return tb_fail(err, TB_ERR_INVALID,
                       "submission library %s does not support submission ABI version %d", spec,
                       TB_SUBMISSION_ABI_VERSION);
    if (s->abi_version != TB_SUBMISSION_ABI_VERSION)
        return tb_fail(err, TB_ERR_INVALID,
                       "submission library %s was built for ABI version %d, this trainbench has %d",
                       spec, s->abi_version, TB_SUBMISSION_ABI_VERSION);
    const char *missing = missing_field(s);
    if (missing)
        return tb_fail(err, TB_ERR_INVALID,
                       "submission library %s lacks %s (a required field of its tb_submission "
                       "table; see docs/SUBMISSIONS.md)", spec, missing);
    *out = s;
    return TB_OK;
}

/* open_checked in a child process: TB_OK, its refusal, or TB_ERR_CRASHED when it crashed,
 * exited or hung instead of answering. */
static tb_status probe(const char *path, const char *spec, tb_error *err)
{
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0)
        return tb_fail(err, TB_ERR_IO, "cannot probe submission library %s: pipe: %s", spec,
                       strerror(errno));
    pid_t parent = getpid();
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        close(fds[0]);
        close(fds[1]);
        return tb_fail(err, TB_ERR_IO, "cannot probe submission library %s: fork: %s", spec,
                       strerror(e));
    }
    if (pid == 0) {
        close(fds[0]);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent) _exit(3); /* the parent died before prctl */
        dup2(STDERR_FILENO, STDOUT_FILENO); /* the library's prints: not on the caller's stdout */
        tb_error cerr = {0};
        void *handle = NULL;
        const tb_submission *s;
        cerr.status = open_checked(path, spec, &handle, &s, &cerr);
        /* one write of a few hundred bytes: atomic, and the pipe holds it */
        ssize_t wrote = write(fds[1], &cerr, sizeof cerr);
        _exit(wrote == (ssize_t)sizeof cerr ? 0 : 4);
    }
    close(fds[1]);
    /* never block on it: a process the library started could hold the write end */
    fcntl(fds[0], F_SETFL, O_NONBLOCK);
    int wstatus;
    bool timed_out = tb_child_wait(pid, PROBE_LIMIT_S, &wstatus);
    tb_error cerr = {0};
    bool answered = WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0 &&
                    read(fds[0], &cerr, sizeof cerr) == (ssize_t)sizeof cerr;
    close(fds[0]);
    if (answered) {
        cerr.message[sizeof cerr.message - 1] = 0;
        return cerr.status == TB_OK ? TB_OK : tb_fail(err, cerr.status, "%s", cerr.message);
    }
    char how[160];
    if (timed_out) snprintf(how, sizeof how, "still running after %g s, killed", PROBE_LIMIT_S);
    else tb_child_describe(wstatus, how, sizeof how);
    return tb_fail(err, TB_ERR_CRASHED,
                   "submission library %s crashed while loading (in an ELF constructor or in "
                   "%s()): %s; caught in a probe process", spec, TB_SUBMISSION_ENTRY_NAME, how);
}

tb_status tb_library_open(const char *path, const char *spec, void **handle,
                          const tb_submission **sub, tb_error *err)
{
    *handle = NULL;
    *sub = NULL;
    tb_status st = probe(path, spec, err);
    if (st != TB_OK) return st;
    /* it loaded in the probe: load it here, its prints (constructors, entry) sent to stderr */
    fflush(stdout);
    int saved = dup(STDOUT_FILENO);
    if (saved >= 0) dup2(STDERR_FILENO, STDOUT_FILENO);
    st = open_checked(path, spec, handle, sub, err);
    if (saved >= 0) {
        fflush(stdout);
        dup2(saved, STDOUT_FILENO);
        close(saved);
    }
    return st;
}
