/* blas_kernels.c: the runtime settings read when the libraries load, chosen before they do
 * (shared by the trainbench command and the bench programs): OpenBLAS's kernel family for this
 * CPU and OpenMP's wait policy. */
#include "blas_kernels.h"

#include <stdlib.h>
#include <unistd.h>

/* OpenBLAS 0.3.21 (Debian 12) picks its kernels from the CPU model at load time and falls back
 * to the slow generic "Prescott" kernels on CPUs it does not know (e.g. virtualised Xeons),
 * several times slower. Unless the user chose (OPENBLAS_CORETYPE set), pick the kernel family
 * from the CPU's features. */
bool tb_cli_set_blas_kernels(void)
{
    if (getenv("OPENBLAS_CORETYPE")) return false;
    const char *core = NULL;
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"))
        core = "SkylakeX";
    else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        core = "Haswell";
    if (!core) return false;
    setenv("OPENBLAS_CORETYPE", core, 1);
    return true;
}

/* libgomp's threads spin about 300000 times at every barrier and between parallel regions
 * before they sleep. On a machine another process shares, a long spin holds the core against
 * that process and a descheduled thread stalls every barrier of the step: with one busy
 * process beside it, the transformer's 2-thread step took 3.5-4.9 times its 1-thread step
 * (docs/SPEED.md "Under contention"). Sleeping at once (passive) costs a wake-up of about 50
 * microseconds per parallel region on this virtual machine, 5-15% of a step on an idle
 * machine. A spin of about 100 microseconds catches the next region of a step while it comes
 * at once and sleeps when it does not: on the idle machine it was 6-16% faster than passive,
 * and beside busy processes within a few per cent of it. Unless the user chose
 * (OMP_WAIT_POLICY or GOMP_SPINCOUNT set), spin TB_CLI_SPIN_COUNT times. */
bool tb_cli_set_wait_policy(void)
{
    if (getenv("OMP_WAIT_POLICY") || getenv("GOMP_SPINCOUNT")) return false;
    setenv("GOMP_SPINCOUNT", TB_CLI_SPIN_COUNT, 1);
    return true;
}

/* The program's own path, so that the re-executed process keeps its name (ps, pgrep): one
 * started as /proc/self/exe is called "exe". If neither exec works the program runs as it
 * is, with the libraries' own defaults. */
static const char *own_path(char *buf, size_t size)
{
    const ssize_t n = readlink("/proc/self/exe", buf, size - 1);
    if (n <= 0 || (size_t)n >= size - 1) return "/proc/self/exe";
    buf[n] = '\0';
    return buf;
}

void tb_cli_choose_runtime(char **argv)
{
    const bool kernels = tb_cli_set_blas_kernels(), policy = tb_cli_set_wait_policy();
    char path[4096];
    if (!kernels && !policy) return;
    execv(own_path(path, sizeof path), argv); /* returns only on failure */
    execv("/proc/self/exe", argv);            /* e.g. the file replaced since: its old copy */
}
