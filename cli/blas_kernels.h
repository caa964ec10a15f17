/* blas_kernels.h: see blas_kernels.c. */
#ifndef TRAINBENCH_CLI_BLAS_KERNELS_H
#define TRAINBENCH_CLI_BLAS_KERNELS_H

/* Unless OPENBLAS_CORETYPE is set, sets it from the CPU's features (SkylakeX with AVX-512,
 * Haswell with AVX2 + FMA) and re-executes the program once with the same argv; returns if
 * nothing needs to change or the re-exec fails (then the program runs as it is). Call first
 * thing in main, before any BLAS call. */
void tb_cli_choose_blas_kernels(char **argv);

#endif
