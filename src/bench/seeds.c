/* seeds.c: the benchmark's seed derivations (bench_impl.h): splitmix64's finaliser, FNV-1a of
 * a text, and the seed of a benchmark's Halton points. */
#include "bench/bench_impl.h"

/* ---- seeds ------------------------------------------------------------------------------------- */
uint64_t tb_bench_mix(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

uint64_t tb_bench_hash(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

uint64_t tb_bench_points_seed(const tb_bench_spec *s) { return tb_bench_mix(s->seed ^ 0x4850ull); }
