/* rng.c: Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11)
 * and the stream helpers built on it. */
#include "trainbench/rng.h"
#include "core/philox.h"

#include <math.h>
#include <string.h>

static const char *const stream_names[TB_STREAM_COUNT] = {
    "init", "data_order", "dropout", "augment", "split", "hparam",
};

const char *tb_stream_name(tb_stream stream)
{
    if ((int)stream < 0 || stream >= TB_STREAM_COUNT) return NULL;
    return stream_names[stream];
}

tb_status tb_stream_parse(const char *name, tb_stream *out, tb_error *err)
{
    if (!name || !out)
        return tb_fail(err, TB_ERR_INVALID, "stream_parse: %s is NULL", name ? "out" : "name");
    for (int i = 0; i < TB_STREAM_COUNT; i++) {
        if (strcmp(name, stream_names[i]) == 0) {
            *out = (tb_stream)i;
            return TB_OK;
        }
    }
    return tb_fail(err, TB_ERR_INVALID,
                   "unknown source of variation '%s' (expected one of init, data_order, "
                   "dropout, augment, split, hparam)",
                   name);
}

/* splitmix64: a bijective mixer used to turn (seed, stream) into a key. */
static uint64_t mix64(uint64_t z)
{
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

tb_rng tb_rng_make(uint64_t seed, uint64_t stream)
{
    uint64_t k = mix64(mix64(seed) ^ mix64(stream + 0x5851F42D4C957F2Dull));
    tb_rng r;
    r.key[0] = (uint32_t)k;
    r.key[1] = (uint32_t)(k >> 32);
    r.counter = 0;
    return r;
}

void tb_philox4x32(const uint32_t key[2], uint64_t counter, uint32_t out[4])
{
    tb_philox4x32_block(key[0], key[1], counter, out);
}

uint32_t tb_rng_u32(tb_rng *rng)
{
    uint32_t b[4];
    tb_philox4x32(rng->key, rng->counter++, b);
    return b[0];
}

uint64_t tb_rng_u64(tb_rng *rng)
{
    uint32_t b[4];
    tb_philox4x32(rng->key, rng->counter++, b);
    return ((uint64_t)b[1] << 32) | b[0];
}

double tb_rng_uniform(tb_rng *rng)
{
    return (double)(tb_rng_u64(rng) >> 11) * (1.0 / 9007199254740992.0);
}

uint64_t tb_rng_below(tb_rng *rng, uint64_t n)
{
    if (n <= 1) return 0;
    uint64_t limit = UINT64_MAX - UINT64_MAX % n; /* reject the incomplete last bucket */
    for (;;) {
        uint64_t x = tb_rng_u64(rng);
        if (x < limit) return x % n;
    }
}

double tb_rng_normal(tb_rng *rng)
{
    uint32_t b[4];
    tb_philox4x32(rng->key, rng->counter++, b);
    double u1 = ((double)b[0] + 1.0) * (1.0 / 4294967296.0); /* (0, 1] */
    double u2 = (double)b[1] * (1.0 / 4294967296.0);
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

void tb_rng_fill_uniform(tb_rng *rng, float *out, int64_t n, float lo, float hi)
{
    const uint64_t base = rng->counter;
    const float span = hi - lo;
#pragma omp parallel for schedule(static)
    for (int64_t blk = 0; blk < (n + 3) / 4; blk++) {
        uint32_t b[4];
        tb_philox4x32(rng->key, base + (uint64_t)blk, b);
        for (int lane = 0; lane < 4; lane++) {
            int64_t i = blk * 4 + lane;
            if (i < n) out[i] = lo + span * tb_u32_to_unit(b[lane]);
        }
    }
    rng->counter = base + (uint64_t)((n + 3) / 4);
}

void tb_rng_fill_normal(tb_rng *rng, float *out, int64_t n, float mean, float std)
{
    const uint64_t base = rng->counter;
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) {
        uint32_t b[4];
        tb_philox4x32(rng->key, base + (uint64_t)(i / 2), b);
        int lane = (int)(i % 2) * 2;
        double u1 = ((double)b[lane] + 1.0) * (1.0 / 4294967296.0);
        double u2 = (double)b[lane + 1] * (1.0 / 4294967296.0);
        out[i] = mean + std * (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
    }
    rng->counter = base + (uint64_t)((n + 1) / 2);
}

void tb_rng_shuffle_i64(tb_rng *rng, int64_t *idx, int64_t n)
{
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = (int64_t)tb_rng_below(rng, (uint64_t)i + 1);
        int64_t t = idx[i];
        idx[i] = idx[j];
        idx[j] = t;
    }
}
