/* bo.c: one step of Bayesian optimisation: fit (or take) a GP, then find the point of the unit
 * cube with the largest expected improvement (docs/MATH.md section 4). */
#include "tune/gp_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { TOP_OBSERVED = 5, PERTURBATIONS = 24, REFINED = 3 };

typedef struct acq {
    const tb_gp *gp;
    int dims;
    double best;
} acq;

static double acq_ei(const acq *a, const double *x)
{
    double m, v;
    tb_gp_predict(a->gp, x, &m, &v);
    return tb_gp_expected_improvement(m, v, a->best);
}

static double clamp01(double v) { return v < 0 ? 0 : v > 1 ? 1 : v; }

/* Coordinate search from x (updated) with steps 0.05 down to 0.001; returns its EI. */
static double refine(const acq *a, double *x, double ei)
{
    double trial[TB_GP_MAX_DIMS];
    for (double step = 0.05; step >= 0.001; step *= 0.5) {
        bool moved = true;
        for (int rounds = 0; moved && rounds < 20; rounds++) {
            moved = false;
            for (int k = 0; k < a->dims; k++)
                for (int sgn = -1; sgn <= 1; sgn += 2) {
                    memcpy(trial, x, (size_t)a->dims * sizeof *x);
                    trial[k] = clamp01(x[k] + sgn * step);
                    double e = acq_ei(a, trial);
                    if (e > ei) {
                        ei = e;
                        memcpy(x, trial, (size_t)a->dims * sizeof *x);
                        moved = true;
                    }
                }
        }
    }
    return ei;
}

/* Indices of the k lowest of y[0..n) into idx (k <= n), lowest first, ties by index. */
static void lowest(const double *y, int n, int k, int *idx)
{
    for (int j = 0; j < k; j++) {
        int b = -1;
        for (int i = 0; i < n; i++) {
            bool taken = false;
            for (int t = 0; t < j; t++) taken |= idx[t] == i;
            if (!taken && (b < 0 || y[i] < y[b])) b = i;
        }
        idx[j] = b;
    }
}

tb_status tb_bo_suggest(int dims, const double *x, const double *y, int n,
                        const tb_bo_options *opts, double *next, double *ei_out, tb_error *err)
{
    tb_bo_options o = opts ? *opts : (tb_bo_options){0};
    if (o.candidates <= 0) o.candidates = 1000;
    if (dims < 1 || dims > TB_GP_MAX_DIMS)
        return tb_fail(err, TB_ERR_INVALID, "Bayesian optimisation: %d dimensions (1 to %d)",
                       dims, TB_GP_MAX_DIMS);
    if (n < (o.prior ? 1 : 2))
        return tb_fail(err, TB_ERR_INVALID,
                       "Bayesian optimisation needs at least %d observations %s, got %d",
                       o.prior ? 1 : 2, o.prior ? "with a prior" : "to fit its GP", n);
    tb_gp_task data = {x, y, n};
    tb_gp_params p;
    tb_status st = TB_OK;
    if (o.prior) {
        p = *o.prior;
        if (p.dims != dims)
            return tb_fail(err, TB_ERR_INVALID,
                           "Bayesian optimisation: the prior has %d dimensions, the data %d",
                           p.dims, dims);
    } else {
        tb_gp_fit_options fo = o.fit;
        fo.seed = o.fit.seed ? o.fit.seed : o.seed;
        st = tb_gp_fit(&data, 1, dims, &fo, &p, err);
    }
    tb_gp *gp = NULL;
    if (st == TB_OK) st = tb_gp_create(&p, &data, &gp, err);
    if (st != TB_OK) return tb_error_prefix(err, "Bayesian optimisation");
    acq a = {gp, dims, y[0]};
    for (int i = 1; i < n; i++) a.best = fmin(a.best, y[i]);
    /* candidates: quasi-random points, then perturbations of the best observed points */
    const int top = n < TOP_OBSERVED ? n : TOP_OBSERVED;
    const int n_cand = o.candidates + top * PERTURBATIONS;
    double *cand = malloc((size_t)n_cand * dims * sizeof *cand);
    double *score = malloc((size_t)n_cand * sizeof *score);
    if (!cand || !score) st = tb_fail(err, TB_ERR_NOMEM, "Bayesian optimisation: out of memory");
    if (st == TB_OK) st = tb_halton(o.candidates, dims, 100, true, o.seed, cand, err);
    if (st == TB_OK) {
        int best_obs[TOP_OBSERVED];
        lowest(y, n, top, best_obs);
        tb_rng rng = tb_rng_make(o.seed, 0x626full);
        double *c = cand + (size_t)o.candidates * dims;
        for (int t = 0; t < top; t++)
            for (int j = 0; j < PERTURBATIONS; j++, c += dims)
                for (int k = 0; k < dims; k++)
                    c[k] = clamp01(x[(size_t)best_obs[t] * dims + k] +
                                   (j % 2 ? 0.1 : 0.02) * tb_rng_normal(&rng));
        for (int i = 0; i < n_cand; i++) score[i] = acq_ei(&a, cand + (size_t)i * dims);
        /* the best few, refined; the best of them wins (ties: the earlier candidate) */
        int picked[REFINED];
        const int n_ref = n_cand < REFINED ? n_cand : REFINED;
        for (int j = 0; j < n_ref; j++) {
            int b = -1;
            for (int i = 0; i < n_cand; i++) {
                bool taken = false;
                for (int t = 0; t < j; t++) taken |= picked[t] == i;
                if (!taken && (b < 0 || score[i] > score[b])) b = i;
            }
            picked[j] = b;
        }
        double best_ei = -1, pt[TB_GP_MAX_DIMS];
        for (int j = 0; j < n_ref; j++) {
            memcpy(pt, cand + (size_t)picked[j] * dims, (size_t)dims * sizeof *pt);
            double e = refine(&a, pt, score[picked[j]]);
            if (e > best_ei) {
                best_ei = e;
                memcpy(next, pt, (size_t)dims * sizeof *pt);
            }
        }
        if (ei_out) *ei_out = best_ei;
    }
    free(cand);
    free(score);
    tb_gp_destroy(gp);
    return st;
}
