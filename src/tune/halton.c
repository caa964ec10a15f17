/* halton.c: the scrambled, shifted Halton sequence as AlgoPerf's algoperf/halton.py builds it
 * (docs/MATH.md section 2), with trainbench's Philox streams in place of numpy's generator. */
#include "trainbench/tune.h"

#include "trainbench/rng.h"

#include <stdlib.h>

#define MAX_DIMS 100

/* The odd primes below 1000, ascending (2 excluded, as AlgoPerf's helper does). */
static int odd_primes(int *out)
{
    int n = 0;
    for (int p = 3; p < 1000; p += 2) {
        bool prime = true;
        for (int q = 3; q * q <= p; q += 2)
            if (p % q == 0) {
                prime = false;
                break;
            }
        if (prime) out[n++] = p;
    }
    return n;
}

int tb_halton_base(int d, int dims)
{
    int primes[200];
    int n = odd_primes(primes);
    if (dims < 1 || dims > MAX_DIMS || d < 0 || d >= dims) return 0;
    /* primes[-dims-1:-1]: the dims primes just below the largest */
    return primes[n - 1 - dims + d];
}

double tb_radical_inverse(uint64_t i, int base, const int *perm)
{
    double x = 0, scale = 1.0 / base;
    while (i > 0) {
        int digit = (int)(i % (uint64_t)base);
        x += (perm ? perm[digit] : digit) * scale;
        i /= (uint64_t)base;
        scale /= base;
    }
    return x;
}

tb_status tb_halton(int n, int dims, int skip, bool scramble, uint64_t seed, double *out,
                    tb_error *err)
{
    if (!out && n > 0) return tb_fail(err, TB_ERR_INVALID, "halton: out is NULL");
    if (n < 0 || skip < 0 || dims < 1 || dims > MAX_DIMS)
        return tb_fail(err, TB_ERR_INVALID,
                       "Halton: need n >= 0, skip >= 0 and 1 <= dims <= %d (got n %d, dims %d, "
                       "skip %d)", MAX_DIMS, n, dims, skip);
    int *perm = malloc(1000 * sizeof *perm);
    if (!perm) return tb_fail(err, TB_ERR_NOMEM, "Halton: cannot allocate");
    for (int d = 0; d < dims; d++) {
        int b = tb_halton_base(d, dims);
        double shift = 0;
        if (scramble) {
            /* sigma = [0] + shuffle(1..b-1) and the shift, from a stream seeded by the base */
            tb_rng rng = tb_rng_make((uint64_t)b, TB_STREAM_HPARAM);
            perm[0] = 0;
            for (int k = 1; k < b; k++) perm[k] = k;
            for (int k = b - 1; k > 1; k--) {
                int j = 1 + (int)tb_rng_below(&rng, (uint64_t)k);
                int t = perm[k];
                perm[k] = perm[j];
                perm[j] = t;
            }
            shift = tb_rng_uniform(&rng);
        }
        for (int i = 0; i < n; i++) {
            double x = tb_radical_inverse((uint64_t)(i + 1 + skip), b, scramble ? perm : NULL);
            x += shift;
            if (x >= 1.0) x -= 1.0;
            out[(int64_t)i * dims + d] = x;
        }
    }
    free(perm);
    if (scramble && n > 1) { /* shuffle the point order (rows) */
        tb_rng rng = tb_rng_make(seed, TB_STREAM_HPARAM);
        for (int i = n - 1; i > 0; i--) {
            int j = (int)tb_rng_below(&rng, (uint64_t)i + 1);
            for (int d = 0; d < dims; d++) {
                double t = out[(int64_t)i * dims + d];
                out[(int64_t)i * dims + d] = out[(int64_t)j * dims + d];
                out[(int64_t)j * dims + d] = t;
            }
        }
    }
    return TB_OK;
}
