/* library.c: opening an external submission's shared library so that a crash in it cannot take
 * the caller down: its ELF constructors and its entry point run first in a probe child
 * process, which reports back through a pipe; only a library that loaded there is loaded here. */
#include "bench/library.h"
#include "bench/child.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
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

/* A 64-bit ELF file shorter than its own headers say (a copy cut short) is refused: dlopen
 * would map the missing pages and the probe die of SIGBUS, blamed on the library's code. Other
 * files (not ELF, another class) are left to dlopen, whose messages say what they are. */
static tb_status check_whole(const char *path, const char *spec, tb_error *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return TB_OK; /* dlopen says why */
    struct stat sb;
    Elf64_Ehdr eh;
    uint64_t end = 0;
    bool elf64 = fstat(fd, &sb) == 0 && pread(fd, &eh, sizeof eh, 0) == (ssize_t)sizeof eh &&
                 memcmp(eh.e_ident, ELFMAG, SELFMAG) == 0 && eh.e_ident[EI_CLASS] == ELFCLASS64 &&
                 eh.e_phentsize == sizeof(Elf64_Phdr);
    if (elf64) {
        end = eh.e_shoff + (uint64_t)eh.e_shnum * eh.e_shentsize;
        uint64_t ph_end = eh.e_phoff + (uint64_t)eh.e_phnum * sizeof(Elf64_Phdr);
        if (ph_end > end) end = ph_end;
        for (int i = 0; i < eh.e_phnum && ph_end <= (uint64_t)sb.st_size; i++) {
            Elf64_Phdr ph;
            if (pread(fd, &ph, sizeof ph, (off_t)(eh.e_phoff + i * sizeof ph)) != sizeof ph) break;
            if (ph.p_type == PT_LOAD && ph.p_offset + ph.p_filesz > end)
                end = ph.p_offset + ph.p_filesz;
        }
    }
    close(fd);
    if (!elf64 || end <= (uint64_t)sb.st_size) return TB_OK;
    return tb_fail(err, TB_ERR_INVALID,
                   "submission library %s is truncated: its ELF headers describe %llu bytes, the "
                   "file has %lld", spec, (unsigned long long)end, (long long)sb.st_size);
}

/* open_checked in a child process: TB_OK, its refusal, or TB_ERR_CRASHED when it crashed,
 * exited or hung instead of answering. */
static tb_status probe(const char *path, const char *spec, tb_error *err)
{
    int fd;
    pid_t pid = tb_child_fork(&fd);
    if (pid < 0)
        return tb_fail(err, TB_ERR_IO, "cannot probe submission library %s: %s", spec,
                       strerror(errno));
    if (pid == 0) { /* its stdout is stderr: the library's prints stay off the caller's */
        tb_error cerr = {0};
        void *handle = NULL;
        const tb_submission *s;
        cerr.status = open_checked(path, spec, &handle, &s, &cerr);
        /* one write of a few hundred bytes: atomic, and the pipe holds it */
        ssize_t wrote = write(fd, &cerr, sizeof cerr);
        _exit(wrote == (ssize_t)sizeof cerr ? 0 : 4);
    }
    int wstatus;
    bool timed_out = tb_child_wait(pid, PROBE_LIMIT_S, NULL, &wstatus) == TB_CHILD_TIMED_OUT;
    tb_error cerr = {0};
    bool answered = WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0 &&
                    read(fd, &cerr, sizeof cerr) == (ssize_t)sizeof cerr;
    close(fd);
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
    tb_status st = check_whole(path, spec, err);
    if (st == TB_OK) st = probe(path, spec, err);
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
