/* kfac_impl.h: the state of the K-FAC and EKFAC optimizers, shared by kfac.c (schedule,
 * inverses, preconditioned update) and kfac_stats.c (factor and scaling statistics), and read
 * by tests (internal).
 *
 * Per attached layer, with din = columns of the weight matrix (+1 for the bias's homogeneous
 * coordinate, so the bias is the last column of W-bar [dout, din]):
 *   A [din, din], G [dout, dout]  EMAs of E[a-bar a-bar^T] and E[h h^T], h = N g (device)
 *   PA, PG                        K-FAC: damped inverses; EKFAC: eigenvectors U_A, U_G in
 *                                 their columns (device)
 *   S [dout, din]                 EKFAC: second moments in the eigenbasis (host) */
#ifndef TRAINBENCH_KFAC_IMPL_H
#define TRAINBENCH_KFAC_IMPL_H

#include "optim/optim_impl.h"

typedef struct tb_kfac_layer {
    tb_layer_ref ref;
    tb_param *pw, *pb;      /* weight and bias (NULL) parameters */
    int dout, din, in;      /* in: weight columns (din - 1 with a bias, else din) */
    float *A, *G, *PA, *PG; /* device, see above */
    float *S;               /* host [dout, din], EKFAC only */
    float *host;            /* host scratch [dout, din] */
    float *grad, *tmp, *delta; /* device [dout, din] */
    bool have_stats, have_precond;
} tb_kfac_layer;

typedef struct tb_kfac_state {
    bool ekfac;
    tb_kfac_layer *layers;
    int n_layers;
    float *dir;          /* device [numel]: update direction of every parameter */
    float *mom;          /* device [numel]: momentum */
    float *dot;          /* device scalar for <delta, grad> */
    int64_t fisher_step; /* the step the last statistics were given for (0: none) */
} tb_kfac_state;

/* Which work step t (1-based) does, from the interval hyperparameters. */
bool tb_kfac_is_cov_step(const tb_optimizer *opt, int64_t t);
bool tb_kfac_is_inv_step(const tb_optimizer *opt, int64_t t);
bool tb_kfac_is_scale_step(const tb_optimizer *opt, int64_t t);

/* The hyperparameter check of both algorithms (whole intervals and max_factor_dim, damping
 * at least float32's smallest normal number). kfac_limits.c. */
tb_status tb_kfac_check(const char *algorithm, tb_hparams *hp, const tb_hparams *given,
                        tb_error *err);
/* TB_ERR_INVALID when a layer with din factor inputs (+1 for a bias) and dout outputs has a
 * factor side above max_factor_dim, naming the layer, the factor's size, the memory its
 * factors would take and the work of a refresh. kfac_limits.c. */
tb_status tb_kfac_check_layer(const tb_optimizer *opt, const char *layer, int din, int dout,
                              tb_error *err);

/* Reads the layer's a and g of the last backward and updates A and G (when factors) and
 * EKFAC's S in the current eigenbasis (when scale). kfac_stats.c. */
tb_status tb_kfac_layer_stats(tb_optimizer *opt, tb_kfac_layer *L, bool factors, bool scale,
                              tb_error *err);

#endif
