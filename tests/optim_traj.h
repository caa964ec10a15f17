/* optim_traj.h: what the tests of the matrix optimizers share (test_optim_matrix.c,
 * test_optim_sophia.c): the names of golden_traj.py's MLP parameters, the comparison of a
 * parameter with a fixture's trajectory and the fixture's hyperparameters. */
#ifndef TRAINBENCH_TEST_OPTIM_TRAJ_H
#define TRAINBENCH_TEST_OPTIM_TRAJ_H

#include "golden.h"

#include <stdlib.h>
#include <string.h>

/* float32 against float64 over 24 steps; the worst observed differences are in the README of
 * tests/golden/ (they are 1 to 2 orders of magnitude below this). */
#define MAT_ATOL 2e-5
#define MAT_RTOL 2e-5

static const char *const traj_names[] = {"w1", "b1", "w2", "b2", "w3", "b3"};

/* Compares a parameter with the reference to atol + rtol |reference|; prints the first element
 * outside on failure. */
static inline bool traj_compare_tol(const tb_golden *g, const char *name, const tb_tensor *got,
                                    double *max_diff, double atol, double rtol)
{
    const tb_golden_tensor *ref = tb_golden_get(g, name);
    int64_t n = tb_tensor_numel(got);
    if (!ref || ref->numel != n) return tb_test_check(false, name, __FILE__, __LINE__);
    float *host = malloc((size_t)n * sizeof(float));
    tb_tensor_download(got, host, NULL);
    const float *r = ref->data;
    bool ok = true;
    for (int64_t i = 0; i < n; i++) {
        double diff = fabs((double)host[i] - (double)r[i]);
        if (!(diff == diff)) diff = INFINITY;
        if (diff > *max_diff) *max_diff = diff;
        if (ok && diff > atol + rtol * fabs((double)r[i])) {
            fprintf(stderr, "%s: %s[%lld] is %.8g, reference %.8g\n", g->name, name, (long long)i,
                    host[i], r[i]);
            ok = false;
        }
    }
    free(host);
    return tb_test_check(ok, name, __FILE__, __LINE__);
}

/* traj_compare_tol at MAT_ATOL, MAT_RTOL. */
static inline bool traj_compare(const tb_golden *g, const char *name, const tb_tensor *got,
                                double *max_diff)
{
    return traj_compare_tol(g, name, got, max_diff, MAT_ATOL, MAT_RTOL);
}

static inline tb_hparams traj_hparams(const tb_golden *g)
{
    tb_hparams hp = {0};
    for (int i = 0; i < g->count; i++)
        if (strncmp(g->tensors[i].name, "hp.", 3) == 0)
            tb_hparams_set(&hp, g->tensors[i].name + 3, tb_golden_scalar(g, g->tensors[i].name),
                           NULL);
    return hp;
}

#endif
