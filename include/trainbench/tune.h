/* tune.h: hyperparameter search spaces (AlgoPerf's JSON format) and the scrambled, shifted
 * Halton sequence AlgoPerf draws its trial points from (docs: ALGORITHMS.md item 10).
 *
 * A search space is either an object of hyperparameters, each a range or a list of feasible
 * points:
 *     {"learning_rate": {"min": 1e-4, "max": 1e-2, "scaling": "log"},
 *      "beta1": {"feasible_points": [0.9]}}
 * ("scaling" is "linear" (the default) or "log"), or an explicit list of points:
 *     [{"learning_rate": 0.1, "momentum": 0.9}, {"learning_rate": 0.03, "momentum": 0.9}]
 * Values are numbers (booleans count as 0/1). */
#ifndef TRAINBENCH_TUNE_H
#define TRAINBENCH_TUNE_H

#include <stdbool.h>
#include <stdint.h>

#include "trainbench/optim.h"
#include "trainbench/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tb_search_space tb_search_space;

/* Parses JSON text. `source` names it in messages (a file name or "sgd's search space"; NULL:
 * "search space").
 * Malformed JSON fails with TB_ERR_FORMAT and the position; a range with min > max, a log
 * range that is not positive, an unknown scaling or key, an empty feasible list or a
 * non-numeric value fail with TB_ERR_INVALID naming the hyperparameter. Free with
 * tb_search_space_destroy. */
tb_status tb_search_space_parse(const char *json, const char *source, tb_search_space **out,
                                tb_error *err);
/* Reads and parses a file (TB_ERR_IO naming the path if it cannot be read). */
tb_status tb_search_space_load(const char *path, tb_search_space **out, tb_error *err);
void tb_search_space_destroy(tb_search_space *space);

/* Dimensions (hyperparameters) of a space of ranges; 0 for an explicit list. */
int tb_search_space_dims(const tb_search_space *space);
/* Points of an explicit list; 0 for a space of ranges. */
int tb_search_space_list_size(const tb_search_space *space);
/* The point of u in [0,1)^dims: linear min + u (max - min); log min exp(u ln(max/min));
 * feasible points feasible[floor(u n)]. A NULL space or u leaves *out empty. */
void tb_search_space_map(const tb_search_space *space, const double *u, tb_hparams *out);

/* Draws `studies` x `trials` points: for a space of ranges, studies*trials distinct Halton
 * points (seeded by seed), split into studies in the sequence's shuffled order; for an
 * explicit list, each study takes `trials` points of the list without replacement in an order
 * drawn from seed (fails if the list has fewer than `trials` points). out has
 * studies*trials entries, study-major. */
tb_status tb_search_space_sample(const tb_search_space *space, int studies, int trials,
                                 uint64_t seed, tb_hparams *out, tb_error *err);

/* ---- Halton -------------------------------------------------------------------------------- */
/* The radical inverse of i in base b with digit permutation perm (NULL: identity). */
double tb_radical_inverse(uint64_t i, int base, const int *perm);

/* AlgoPerf's generator: bases are the `dims` largest odd primes below 1000 except the very
 * largest (primes[-d-1:-1]); per base a digit permutation fixing 0 and a shift in [0,1) drawn
 * from a stream seeded by the base; points i = 1..n+skip, the first skip dropped; the point
 * order shuffled with seed. With scramble false: no permutation, no shift, no shuffle (the
 * plain sequence from i = 1). out is n x dims, row-major. dims <= 100. */
tb_status tb_halton(int n, int dims, int skip, bool scramble, uint64_t seed, double *out,
                    tb_error *err);
/* The base of dimension d (0-based) for a `dims`-dimensional sequence, as tb_halton uses. */
int tb_halton_base(int d, int dims);

#ifdef __cplusplus
}
#endif
#endif
