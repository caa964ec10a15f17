/* philox.h: the Philox4x32-10 block function (Salmon et al., SC 2011), one definition for the
 * host (tb_philox4x32, src/core/rng.c) and the CUDA kernels (cuda_internal.h), so every backend
 * draws the same bits by construction (internal to the library). */
#ifndef TRAINBENCH_PHILOX_H
#define TRAINBENCH_PHILOX_H

#include <stdint.h>

#ifdef __CUDACC__
#define TB_HOST_DEVICE __host__ __device__
#else
#define TB_HOST_DEVICE
#endif

/* The four 32-bit words of block `counter` of the stream keyed (k0, k1). */
static inline TB_HOST_DEVICE void tb_philox4x32_block(uint32_t k0, uint32_t k1, uint64_t counter,
                                                      uint32_t out[4])
{
    uint32_t c0 = (uint32_t)counter, c1 = (uint32_t)(counter >> 32), c2 = 0, c3 = 0;
    for (int round = 0; round < 10; round++) {
        uint64_t p0 = (uint64_t)0xD2511F53u * c0;
        uint64_t p1 = (uint64_t)0xCD9E8D57u * c2;
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0;
        uint32_t n1 = (uint32_t)p1;
        uint32_t n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
        uint32_t n3 = (uint32_t)p0;
        c0 = n0;
        c1 = n1;
        c2 = n2;
        c3 = n3;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    out[0] = c0;
    out[1] = c1;
    out[2] = c2;
    out[3] = c3;
}

#endif
