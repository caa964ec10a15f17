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
 * before they sleep. On a machine another process shares, a spinning thread holds its core
 * against that process and a descheduled one stalls every barrier of the step: with one busy
 * process beside it, the transformer's 2-thread step took 3.5-4.9 times its 1-thread step,
 * and 0.25-0.5 times with passive waiting (docs/SPEED.md "Under contention"). Unless the
 * user chose (OMP_WAIT_POLICY or GOMP_SPINCOUNT set), wait passively. */
bool tb_cli_set_wait_policy(void)
{
    if (getenv("OMP_WAIT_POLICY") || getenv("GOMP_SPINCOUNT")) return false;
    setenv("OMP_WAIT_POLICY", TB_CLI_WAIT_POLICY, 1);
    return true;
}

void tb_cli_choose_runtime(char **argv)
{
    const bool kernels = tb_cli_set_blas_kernels(), policy = tb_cli_set_wait_policy();
    if (kernels || policy)
        execv("/proc/self/exe", argv); /* returns only on failure: then run as we are */
}
