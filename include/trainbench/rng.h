/* rng.h: counter-based random numbers (Philox4x32-10) with named, independent streams.
 *
 * A tb_rng is a key and a counter, nothing else: it is a plain value the caller owns and passes
 * in (no global state). Each source of variation of a training run draws from its own stream,
 * derived from the run's seed for that source, so one source can change while the others keep
 * their bits. Bulk fills give element i the bits of counter block (start + i / lanes), so the
 * output does not depend on how many threads compute it. */
#ifndef TRAINBENCH_RNG_H
#define TRAINBENCH_RNG_H

#include <stdint.h>

#include "trainbench/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The sources of variation of a training run (Bouthillier et al. 2021). */
typedef enum tb_stream {
    TB_STREAM_INIT = 0,       /* weight initialisation */
    TB_STREAM_DATA_ORDER = 1, /* shuffling of training examples */
    TB_STREAM_DROPOUT = 2,    /* dropout masks */
    TB_STREAM_AUGMENT = 3,    /* data augmentation */
    TB_STREAM_SPLIT = 4,      /* train / validation / test split */
    TB_STREAM_HPARAM = 5,     /* hyperparameter sampling */
    TB_STREAM_COUNT
} tb_stream;

typedef struct tb_rng {
    uint32_t key[2];
    uint64_t counter; /* next unused 128-bit block */
} tb_rng;

/* Name of a stream ("init", "data_order", ...), or NULL if out of range. */
const char *tb_stream_name(tb_stream stream);
/* Parses a stream name. Returns TB_ERR_INVALID (with the name in the message) if unknown. */
tb_status tb_stream_parse(const char *name, tb_stream *out, tb_error *err);

/* A generator for (seed, stream). Distinct (seed, stream) pairs give independent keys. */
tb_rng tb_rng_make(uint64_t seed, uint64_t stream);

/* One Philox4x32-10 block: four 32-bit words for (key, counter). Pure function. */
void tb_philox4x32(const uint32_t key[2], uint64_t counter, uint32_t out[4]);

uint32_t tb_rng_u32(tb_rng *rng);
uint64_t tb_rng_u64(tb_rng *rng);
/* Uniform in [0, 1) with 53 random bits. */
double tb_rng_uniform(tb_rng *rng);
/* Uniform integer in [0, n), n > 0, without modulo bias. */
uint64_t tb_rng_below(tb_rng *rng, uint64_t n);
/* Standard normal (Box-Muller on two uniforms). */
double tb_rng_normal(tb_rng *rng);

/* Fills out[0..n) with uniforms in [lo, hi). Element i uses block counter + i/4, lane i%4. */
void tb_rng_fill_uniform(tb_rng *rng, float *out, int64_t n, float lo, float hi);
/* Fills out[0..n) with N(mean, std^2). Element i uses block counter + i/2. */
void tb_rng_fill_normal(tb_rng *rng, float *out, int64_t n, float mean, float std);
/* Fisher-Yates shuffle of idx[0..n). */
void tb_rng_shuffle_i64(tb_rng *rng, int64_t *idx, int64_t n);

/* Maps a 32-bit word to a float uniform in [0, 1) (24 random bits). */
static inline float tb_u32_to_unit(uint32_t x)
{
    return (float)(x >> 8) * (1.0f / 16777216.0f);
}

#ifdef __cplusplus
}
#endif
#endif
