/* tune.h: hyperparameter search spaces (AlgoPerf's JSON format) and the scrambled, shifted
 * Halton sequence AlgoPerf draws its trial points from (docs/MATH.md section 2).
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
#include "trainbench/rng.h"
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
/* Point i (0-based, file order) of an explicit list; false when there is none. */
bool tb_search_space_list_point(const tb_search_space *space, int i, tb_hparams *out);
/* The point of u in [0,1)^dims: linear min + u (max - min); log min exp(u ln(max/min));
 * feasible points feasible[floor(u n)]. A NULL space or u leaves *out empty. */
void tb_search_space_map(const tb_search_space *space, const double *u, tb_hparams *out);

/* One dimension of a space of ranges, as parsed (pointers into the space). */
typedef enum tb_search_scaling {
    TB_SCALING_LINEAR = 0,
    TB_SCALING_LOG = 1,
    TB_SCALING_DISCRETE = 2, /* a list of feasible points */
} tb_search_scaling;

typedef struct tb_search_dim {
    const char *name;
    tb_search_scaling scaling;
    double min, max;        /* ranges; for feasible points their smallest and largest */
    const double *feasible; /* feasible points in the file's order (NULL for ranges) */
    int n_feasible;
} tb_search_dim;

/* Dimension i (0-based) of a space of ranges; false when there is none. */
bool tb_search_space_dim(const tb_search_space *space, int i, tb_search_dim *out);
/* Whether dimension i can take more than one value (a range with min < max, or two or more
 * feasible points): what a model of the objective can learn from. */
bool tb_search_space_dim_varies(const tb_search_space *space, int i);
/* The inverse of tb_search_space_map: the unit point u of the values in hp (linear
 * (v - min) / (max - min), log the same of the logs, 0.5 for a range with min = max;
 * a feasible point k of n: (k + 0.5) / n, the nearest one for a value that is not feasible).
 * Values outside a range give u outside [0, 1]. False (u untouched past the dimension) when hp
 * lacks a dimension or a value is not finite (or not positive for a log range). */
bool tb_search_space_unmap(const tb_search_space *space, const tb_hparams *hp, double *u);

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

/* ---- Gaussian processes (gp.c, gp_fit.c; docs/MATH.md section 3) -------------------------
 * A GP over points x in the unit cube of a search space (log-scaled dimensions are already
 * log there: tb_search_space_map's u) with a constant mean, a Matern-5/2 kernel with one
 * lengthscale per dimension (ARD) and Gaussian observation noise. Outputs are to be minimised;
 * errors are best warped with tb_gp_warp_error first. Fitting standardises the outputs (all
 * tasks pooled) and returns the parameters in the outputs' own units. Every computation is
 * plain C on the calling thread (no BLAS or OpenMP: a benchmark's parent process, which forks
 * trials, uses it) and deterministic. */
#define TB_GP_MAX_DIMS TB_HPARAMS_MAX

typedef struct tb_gp_params {
    int dims;
    double mean;                         /* constant prior mean */
    double amplitude;                    /* signal variance: k(x, x) */
    double lengthscales[TB_GP_MAX_DIMS]; /* in unit-cube coordinates */
    double noise;                        /* observation noise variance */
} tb_gp_params;

/* The observations of one task (one objective function): n points x (n x dims, row-major)
 * with outputs y. */
typedef struct tb_gp_task {
    const double *x;
    const double *y;
    int n;
} tb_gp_task;

/* Checks p: dims in [1, TB_GP_MAX_DIMS], a finite mean, a positive finite amplitude and
 * lengthscales, a non-negative finite noise (TB_ERR_INVALID naming the bad one). */
tb_status tb_gp_params_check(const tb_gp_params *p, tb_error *err);

/* HyperBO's warp for error rates, -log(err + 1e-10) (docs/MATH.md section 3), its sign turned so
 * lower stays better: log(err + 1e-10). */
double tb_gp_warp_error(double err);

/* The parameters as one vector theta of tb_gp_theta_count(dims) = dims + 3 numbers: mean,
 * log amplitude, log lengthscale 1..dims, log noise (the coordinates of tb_gp_nll's gradient). */
int tb_gp_theta_count(int dims);
void tb_gp_theta_pack(const tb_gp_params *p, double *theta);
void tb_gp_theta_unpack(int dims, const double *theta, tb_gp_params *p);

/* The negative log marginal likelihood averaged over tasks (HyperBO's NLL objective; one task:
 * the usual one), -1/T sum_i log N(y_i | mean, K_i + noise I), and its gradient with respect to
 * theta (grad may be NULL). TB_ERR_NUMERIC when a covariance is not positive definite even
 * with jitter; TB_ERR_INVALID for bad parameters (non-positive amplitude, lengthscale or
 * noise, dims outside [1, TB_GP_MAX_DIMS]) or a task without points. */
tb_status tb_gp_nll(const tb_gp_params *p, const tb_gp_task *tasks, int n_tasks, double *nll,
                    double *grad, tb_error *err);

typedef struct tb_gp_fit_options {
    int restarts;     /* starts of the optimiser (0: 4): the first at the middle of the box,
                         the others drawn from seed */
    int max_iters;    /* L-BFGS iterations per start (0: 80) */
    uint64_t seed;
    double min_noise; /* lower bound of the noise variance in standardised units (0: 1e-6) */
} tb_gp_fit_options;

/* Fits the parameters by maximising the marginal likelihood averaged over tasks (one task: the
 * usual type-II maximum likelihood; several: HyperBO's pre-training, which shares mean, kernel
 * and noise across tasks). Multi-start L-BFGS over the log parameters, each bounded to a box
 * in standardised units (amplitude [0.02, 50], lengthscales [0.02, 20], noise [min_noise, 1],
 * mean [-5, 5]). Needs at least 2 observations in all (TB_ERR_INVALID otherwise); non-finite
 * outputs are refused. opts may be NULL (defaults). */
tb_status tb_gp_fit(const tb_gp_task *tasks, int n_tasks, int dims,
                    const tb_gp_fit_options *opts, tb_gp_params *out, tb_error *err);

/* A GP with fixed parameters conditioned on one task's data (data->n may be 0: the prior).
 * Copies what it needs. Free with tb_gp_destroy. */
typedef struct tb_gp tb_gp;
tb_status tb_gp_create(const tb_gp_params *p, const tb_gp_task *data, tb_gp **out,
                       tb_error *err);
void tb_gp_destroy(tb_gp *gp);
const tb_gp_params *tb_gp_get_params(const tb_gp *gp);
/* Posterior mean and variance of the latent function (without the noise) at x. */
void tb_gp_predict(const tb_gp *gp, const double *x, double *mean, double *var);
/* One joint draw of the latent function at m points x (m x dims) from the posterior, into out
 * (m values), using rng. TB_ERR_NUMERIC if the covariance cannot be factored. */
tb_status tb_gp_sample(const tb_gp *gp, const double *x, int m, tb_rng *rng, double *out,
                       tb_error *err);
/* Expected improvement below best of a normal N(mean, var) (minimisation):
 * (best - mean) Phi(z) + sd phi(z), z = (best - mean) / sd; max(best - mean, 0) when var = 0. */
double tb_gp_expected_improvement(double mean, double var, double best);

/* ---- Bayesian optimisation (bo.c) ----------------------------------------------------------- */
typedef struct tb_bo_options {
    /* NULL: the GP's parameters are fitted to the data (type-II maximum likelihood, `fit`);
     * else HyperBO: these (pre-trained) parameters, conditioned on the data as they are */
    const tb_gp_params *prior;
    tb_gp_fit_options fit;
    int candidates; /* quasi-random candidates of the acquisition search (0: 1000) */
    uint64_t seed;  /* of the candidates and the fit's starts */
} tb_bo_options;

/* The next point of a minimisation in [0, 1]^dims: the one that maximises expected
 * improvement below the best observed y under the GP given the n observations x (n x dims),
 * y. The search scores scrambled Halton candidates and perturbations of the best observed
 * points, then refines the best few by coordinate steps. Deterministic: the same data, options
 * and seed give the same point. Needs n >= 2 (n >= 1 with a prior) and finite y; ei (may be
 * NULL) receives the expected improvement of the point. opts may be NULL (defaults). */
tb_status tb_bo_suggest(int dims, const double *x, const double *y, int n,
                        const tb_bo_options *opts, double *next, double *ei, tb_error *err);

/* ---- search-space utility (utility.c; Ariafar et al., AISTATS 2022) ------------------------
 * U(S; b) = E_{f ~ GP posterior} E_{x_1..b ~ Unif(S)} [u(min_j f(x_j))], by Monte Carlo: each
 * draw takes max(budgets) points of S and one joint posterior sample of f at them (Cholesky of
 * its covariance), and scores every budget b on the first b of them (so the estimates of a
 * space at two budgets share their draws, and the best value cannot grow with b). */

/* Writes one point drawn uniformly from a candidate space, in the GP's coordinates, to x. */
typedef void (*tb_utility_draw_fn)(void *user, tb_rng *rng, double *x);

typedef struct tb_utility {
    int budget;
    double expected_best; /* E[min_j f(x_j)] over b points (u = -value) */
    double std_error;     /* its Monte Carlo standard error */
    double p_below;       /* P(min_j f(x_j) < threshold) (u = 1[best < threshold]) */
} tb_utility;

/* Estimates the utility of the space `draw` samples from at each of budgets[0..n_budgets)
 * (each >= 1, at most 1024) with `draws` Monte Carlo draws (>= 2) from rng seed; out has
 * n_budgets entries. TB_ERR_INVALID for bad budgets or draws; TB_ERR_NUMERIC if a posterior
 * covariance cannot be factored. */
tb_status tb_gp_utility(const tb_gp *gp, tb_utility_draw_fn draw, void *user,
                        const int *budgets, int n_budgets, int draws, double threshold,
                        uint64_t seed, tb_utility *out, tb_error *err);

#ifdef __cplusplus
}
#endif
#endif
