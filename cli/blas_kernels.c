/* blas_kernels.c: the OpenBLAS kernel family for this CPU, chosen before OpenBLAS loads (shared
 * by the trainbench command and bench/bench_step). */
#include "blas_kernels.h"

#include <stdlib.h>
#include <unistd.h>

/* OpenBLAS 0.3.21 (Debian 12) picks its kernels from the CPU model at load time and falls back
 * to the slow generic "Prescott" kernels on CPUs it does not know (e.g. virtualised Xeons),
 * several times slower. Unless the user chose (OPENBLAS_CORETYPE set), pick the kernel family
 * from the CPU's features and restart once with it set, before OpenBLAS is used. */
void tb_cli_choose_blas_kernels(char **argv)
{
    if (getenv("OPENBLAS_CORETYPE")) return;
    const char *core = NULL;
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"))
        core = "SkylakeX";
    else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        core = "Haswell";
    if (!core) return;
    setenv("OPENBLAS_CORETYPE", core, 1);
    execv("/proc/self/exe", argv); /* returns only on failure: then run as we are */
}

