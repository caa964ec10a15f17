/* blas_kernels.h: see blas_kernels.c. */
#ifndef TRAINBENCH_CLI_BLAS_KERNELS_H
#define TRAINBENCH_CLI_BLAS_KERNELS_H

#include <stdbool.h>

/* libgomp's spin count before a waiting thread sleeps, unless the user sets a wait policy or
 * a spin count: about 100 microseconds of spinning on the development machine. */
#define TB_CLI_SPIN_COUNT "2000"

/* Unless OPENBLAS_CORETYPE is set, sets it from the CPU's features (SkylakeX with AVX-512,
 * Haswell with AVX2 + FMA); true when it set it. */
bool tb_cli_set_blas_kernels(void);
/* Unless OMP_WAIT_POLICY or GOMP_SPINCOUNT is set, sets GOMP_SPINCOUNT to TB_CLI_SPIN_COUNT;
 * true when it set it. */
bool tb_cli_set_wait_policy(void);
/* Both, then, when either changed the environment, re-executes the program once with the same
 * argv (the libraries read them when they load); returns if nothing needs to change or the
 * re-exec fails (then the program runs as it is). Call first thing in main. */
void tb_cli_choose_runtime(char **argv);

#endif
