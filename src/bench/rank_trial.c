/* rank_trial.c: a trial data-parallel over R ranks (--ranks-per-trial R). The benchmark's
 * forked trial child (isolate.c) execs `mpirun -np R <this binary> bench-trial FILE` with the
 * launcher's variables removed from its environment, so that a plain benchmark and a worker
 * of an MPI benchmark alike start a job of their own on their machine. FILE, in $TMPDIR, is
 * memory shared by the benchmark and the trial's rank 0: the trial to run (its store, id,
 * submission and options), the heartbeat the benchmark watches for hangs, and rank 0's error
 * when it could not record an outcome. Every rank dies with mpirun (PR_SET_PDEATHSIG), so a
 * trial killed for hanging leaves no ranks behind; a rank that dies ends the job (mpirun ends
 * the others) and the trial is recorded crashed, as a one-process trial that crashes is. */
#define _GNU_SOURCE /* environ, mkstemp */
#include "bench/rank_trial.h"

#include "trainbench/dist.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

extern char **environ;

/* A copy of text into buf, or TB_ERR_INVALID naming what when it does not fit. */
static tb_status copy_text(char *buf, size_t cap, const char *text, const char *what,
                           tb_error *err)
{
    if (!text) text = "";
    if (strlen(text) >= cap)
        return tb_fail(err, TB_ERR_INVALID, "--ranks-per-trial: %s is longer than %zu bytes",
                       what, cap - 1);
    memcpy(buf, text, strlen(text) + 1);
    return TB_OK;
}

tb_status tb_rank_trial_share(const char *store_path, int64_t trial_id,
                              const tb_submission_ref *sub, const tb_trial_options *opts,
                              tb_rank_trial_shared **out, char *path, size_t cap, tb_error *err)
{
    *out = NULL;
    const char *tmp = getenv("TMPDIR");
    snprintf(path, cap, "%s/trainbench-trial-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
    int fd = mkstemp(path);
    if (fd < 0)
        return tb_fail(err, TB_ERR_IO, "cannot make the file a trial's ranks share (%s): %s",
                       path, strerror(errno));
    tb_rank_trial_shared *sh = MAP_FAILED;
    int e = 0;
    if (ftruncate(fd, sizeof *sh) == 0)
        sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    e = errno;
    close(fd);
    if (sh == MAP_FAILED) {
        unlink(path);
        return tb_fail(err, TB_ERR_IO, "cannot map the file a trial's ranks share (%s): %s",
                       path, strerror(e));
    }
    memset(sh, 0, sizeof *sh);
    atomic_init(&sh->hb.beats, 0);
    atomic_init(&sh->hb.step, 0);
    atomic_init(&sh->hb.ready, 0);
    atomic_init(&sh->failed, 0);
    sh->trial_id = trial_id;
    sh->opts = *opts;
    sh->opts.data_dir = sh->opts.cache_dir = sh->opts.cpus = NULL;
    tb_status st = copy_text(sh->store, sizeof sh->store, store_path, "the store's path", err);
    if (st == TB_OK)
        st = copy_text(sh->submission, sizeof sh->submission, tb_submission_ref_spec(sub),
                       "the submission", err);
    if (st == TB_OK)
        st = copy_text(sh->data_dir, sizeof sh->data_dir, opts->data_dir, "--data-dir", err);
    if (st == TB_OK)
        st = copy_text(sh->cache_dir, sizeof sh->cache_dir, opts->cache_dir, "--cache-dir", err);
    if (st != TB_OK) {
        tb_rank_trial_release(sh, path);
        return st;
    }
    *out = sh;
    return TB_OK;
}

void tb_rank_trial_release(tb_rank_trial_shared *sh, const char *path)
{
    if (sh) munmap(sh, sizeof *sh);
    if (path && path[0]) unlink(path);
}

/* Whether an environment variable belongs to the MPI job (or batch system) this process runs
 * in: a nested mpirun that saw them would join that job instead of starting its own. Open
 * MPI's consent to run as root is kept. */
static bool launcher_variable(const char *kv)
{
    if (strncmp(kv, "OMPI_ALLOW_RUN_AS_ROOT", 22) == 0) return false;
    static const char *const prefixes[] = {"OMPI_", "PMIX_", "PMI_", "SLURM_", "OPAL_"};
    for (size_t i = 0; i < sizeof prefixes / sizeof *prefixes; i++)
        if (strncmp(kv, prefixes[i], strlen(prefixes[i])) == 0) return true;
    return false;
}

static void scrub_environment(void)
{
    for (int i = 0; environ[i];) {
        if (!launcher_variable(environ[i])) {
            i++;
            continue;
        }
        char name[256];
        const char *eq = strchr(environ[i], '=');
        size_t n = eq ? (size_t)(eq - environ[i]) : strlen(environ[i]);
        if (n >= sizeof name) n = sizeof name - 1;
        memcpy(name, environ[i], n);
        name[n] = 0;
        unsetenv(name); /* environ shifts: look at i again */
    }
}

void tb_rank_trial_exec(tb_rank_trial_shared *sh, const char *path)
{
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n < 0) {
        tb_fail(&sh->err, TB_ERR_IO, "--ranks-per-trial: cannot find this program "
                "(/proc/self/exe): %s", strerror(errno));
        atomic_store(&sh->failed, 1);
        _exit(2);
    }
    exe[n] = 0;
    scrub_environment();
    char np[16];
    snprintf(np, sizeof np, "%d", sh->opts.ranks_per_trial);
    char root[] = "--allow-run-as-root", mpirun[] = "mpirun", npflag[] = "-np",
         bind[] = "--bind-to", none[] = "none", cmd[] = "bench-trial";
    /* no binding: the trial's ranks keep the CPUs the benchmark gave its process (--cpus) */
    char *argv[12];
    int k = 0;
    argv[k++] = mpirun;
    if (geteuid() == 0) argv[k++] = root; /* root started the benchmark that starts it */
    argv[k++] = bind;
    argv[k++] = none;
    argv[k++] = npflag;
    argv[k++] = np;
    argv[k++] = exe;
    argv[k++] = cmd;
    argv[k++] = (char *)path;
    argv[k] = NULL;
    execvp(mpirun, argv);
    tb_fail(&sh->err, errno == ENOENT ? TB_ERR_MISSING : TB_ERR_IO,
            "--ranks-per-trial %d: cannot start mpirun: %s", sh->opts.ranks_per_trial,
            strerror(errno));
    atomic_store(&sh->failed, 1);
    _exit(2);
}

/* The benchmark's shared file, mapped. */
static tb_status map_shared(const char *file, tb_rank_trial_shared **out, tb_error *err)
{
    *out = NULL;
    int fd = open(file, O_RDWR | O_NONBLOCK | O_CLOEXEC);
    struct stat sb;
    if (fd < 0 || fstat(fd, &sb) != 0) {
        int e = errno;
        if (fd >= 0) close(fd);
        return tb_fail(err, TB_ERR_IO, "bench-trial: cannot open %s: %s", file, strerror(e));
    }
    if (!S_ISREG(sb.st_mode) || sb.st_size != (off_t)sizeof **out) {
        close(fd);
        return tb_fail(err, TB_ERR_FORMAT, "bench-trial: %s is not a trial's shared file (a "
                       "file of %zu bytes written by bench --ranks-per-trial)", file,
                       sizeof **out);
    }
    void *m = mmap(NULL, sizeof **out, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    int e = errno;
    close(fd);
    if (m == MAP_FAILED)
        return tb_fail(err, TB_ERR_IO, "bench-trial: cannot map %s: %s", file, strerror(e));
    *out = m;
    return TB_OK;
}

/* The trial on every rank (rank 0 records it), then every rank's verdict agreed. */
static tb_status run_ranks(tb_rank_trial_shared *sh, tb_dist *d, tb_error *err)
{
    const bool root = tb_dist_rank(d) == 0;
    tb_status st = tb_dist_size(d) == sh->opts.ranks_per_trial
                       ? TB_OK
                       : tb_fail(err, TB_ERR_INVALID, "bench-trial: started as %d ranks, the "
                                 "trial wants %d", tb_dist_size(d), sh->opts.ranks_per_trial);
    tb_submission_ref *ref = NULL;
    if (st == TB_OK) st = tb_submission_load(sh->submission, NULL, &ref, err);
    st = tb_dist_agree(d, st, NULL, err);
    if (st == TB_OK) {
        tb_trial_options o = sh->opts;
        o.data_dir = sh->data_dir[0] ? sh->data_dir : NULL;
        o.cache_dir = sh->cache_dir[0] ? sh->cache_dir : NULL;
        st = tb_trial_execute_dist(sh->store, sh->trial_id, ref, &o, root ? &sh->hb : NULL, d,
                                   err);
        st = tb_dist_agree(d, st, NULL, err);
    }
    tb_submission_unload(ref);
    return st;
}

tb_status tb_bench_trial_ranks_main(const char *file, tb_error *err)
{
    prctl(PR_SET_PDEATHSIG, SIGKILL); /* mpirun killed (a hang): its ranks with it */
    tb_rank_trial_shared *sh;
    tb_status st = map_shared(file, &sh, err);
    if (st != TB_OK) return st;
    tb_dist *d = NULL;
    st = tb_dist_init(&d, err);
    if (st == TB_OK) st = run_ranks(sh, d, err);
    if (st != TB_OK && tb_dist_rank(d) == 0 && !atomic_load(&sh->failed)) {
        sh->err = *err;
        sh->err.status = st;
        atomic_store(&sh->failed, 1);
    }
    tb_error ferr = {0};
    tb_status fst = d ? tb_dist_finalize(d, &ferr) : TB_OK;
    munmap(sh, sizeof *sh);
    if (st == TB_OK && fst != TB_OK) {
        if (err) *err = ferr;
        st = fst;
    }
    return st;
}

/* Whether a program is an executable file in one of PATH's directories. */
static bool on_path(const char *prog)
{
    const char *path = getenv("PATH");
    if (!path || !path[0]) return false;
    char dir[4096];
    for (const char *p = path; *p;) {
        const char *end = strchr(p, ':');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        char file[4200];
        snprintf(dir, sizeof dir, "%.*s", (int)(n < sizeof dir - 1 ? n : sizeof dir - 1), p);
        snprintf(file, sizeof file, "%s/%s", dir[0] ? dir : ".", prog);
        struct stat sb;
        if (stat(file, &sb) == 0 && S_ISREG(sb.st_mode) && access(file, X_OK) == 0)
            return true;
        p += n + (end ? 1 : 0);
    }
    return false;
}

tb_status tb_bench_ranks_per_trial_check(const tb_trial_options *o, tb_error *err)
{
    const int r = o->ranks_per_trial;
    const long cores = sysconf(_SC_NPROCESSORS_ONLN); /* the ranks share the machine */
    if (r < 0)
        return tb_fail(err, TB_ERR_INVALID, "--ranks-per-trial must be at least 1 (got %d)", r);
    if (r <= 1) return TB_OK;
    if (r > cores)
        return tb_fail(err, TB_ERR_INVALID, "--ranks-per-trial %d: more ranks than the %ld "
                       "cores of this machine (each rank of a trial needs a core)", r, cores);
    if (o->device != TB_DEVICE_CPU)
        return tb_fail(err, TB_ERR_UNSUPPORTED, "--ranks-per-trial %d with --device %s: "
                       "data-parallel training runs on the cpu backend only (averaging "
                       "gradients on GPUs would need NCCL, which is not built)", r,
                       tb_device_name(o->device));
    if (!on_path("mpirun"))
        return tb_fail(err, TB_ERR_MISSING, "--ranks-per-trial %d: no mpirun on PATH (a "
                       "trial of several ranks is started with mpirun; install Open MPI, "
                       "openmpi-bin)", r);
    return TB_OK;
}
