/* optim_traj.h: what the optimizer golden tests share: the comparison of a parameter with a
 * fixture's trajectory and the fixture's hyperparameters (all of them); the names of
 * golden_traj.py's MLP parameters (test_optim_matrix.c, test_optim_sophia.c); and the reader of
 * the fixtures of one weight w and one bias b with fixed gradients (test_optim_torch.c,
 * test_optim_elem.c). */
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

/* A fixture of a weight w [3, 4] (decayed) and a bias b (not), from w0 and b0, with the
 * gradients gw.t and gb.t of each step t and the trajectory w.t, b.t after it
 * (make_optim_golden.py, make_optim_elem_golden.py). */
typedef struct traj_wb {
    tb_golden g;
    tb_hparams hp; /* the fixture's hp.* */
    tb_params *params;
    tb_var *w, *b;
} traj_wb;

/* Loads fixture `name` into t, its parameters on backend be with a bias of b_len values; false
 * (a failed check) when the fixture cannot be read or the parameters made. */
static inline bool traj_wb_open(const char *name, tb_backend *be, int64_t b_len, traj_wb *t)
{
    memset(t, 0, sizeof *t);
    if (!tb_golden_load(name, &t->g)) return tb_test_check(false, name, __FILE__, __LINE__);
    t->hp = traj_hparams(&t->g);
    tb_error err = {0};
    if (!CHECK_OK(tb_params_create(be, &t->params, &err), &err)) return false;
    int64_t ws[2] = {3, 4};
    t->w = tb_params_add(t->params, "w", TB_PARAM_WEIGHT, 2, ws, NULL);
    t->b = tb_params_add(t->params, "b", TB_PARAM_BIAS, 1, &b_len, NULL);
    if (!CHECK_OK(tb_params_finalize(t->params, &err), &err)) return false;
    return tb_golden_upload(&t->g, "w0", &t->w->value) &&
           tb_golden_upload(&t->g, "b0", &t->b->value);
}

/* Uploads step `step`'s gradients gw.<step> and gb.<step>. */
static inline void traj_wb_grads(const traj_wb *t, int step)
{
    char name[32];
    snprintf(name, sizeof name, "gw.%d", step);
    tb_golden_upload(&t->g, name, &t->w->grad);
    snprintf(name, sizeof name, "gb.%d", step);
    tb_golden_upload(&t->g, name, &t->b->grad);
}

/* Compares w and b with w.<step> and b.<step> to atol + rtol |reference|. */
static inline void traj_wb_compare(const traj_wb *t, int step, double atol, double rtol,
                                   double *max_diff)
{
    char name[32];
    snprintf(name, sizeof name, "w.%d", step);
    traj_compare_tol(&t->g, name, &t->w->value, max_diff, atol, rtol);
    snprintf(name, sizeof name, "b.%d", step);
    traj_compare_tol(&t->g, name, &t->b->value, max_diff, atol, rtol);
}

static inline void traj_wb_close(traj_wb *t)
{
    tb_params_destroy(t->params);
    tb_golden_free(&t->g);
}

#endif
