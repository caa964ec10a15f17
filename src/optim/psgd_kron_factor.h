/* psgd_kron_factor.h: PSGD Kron's Kronecker factors of one parameter and their algebra
 * (internal; psgd_kron.c drives them, psgd_kron_factor.c computes). */
#ifndef TRAINBENCH_PSGD_KRON_FACTOR_H
#define TRAINBENCH_PSGD_KRON_FACTOR_H

#include <stdbool.h>
#include <stdint.h>

/* One dimension's factor: upper triangular [n, n] or diagonal [n]; q NULL: the identity (the
 * missing row side of a 1-D parameter), never updated. */
typedef struct kron_side {
    int n;
    bool tri;
    double *q;
} kron_side;

/* A parameter viewed as the matrix [a, b] (a 1-D one as [1, b] with side 0 the identity). */
typedef struct kron_factors {
    int a, b;
    kron_side side[2];
} kron_factors;

/* Scratch for one parameter: x, y [a b], t [2 largest side^2] doubles, u [largest side]. */
typedef struct kron_scratch {
    double *x, *y, *t, *u;
} kron_scratch;

/* The preconditioner update of kron-torch's _update_precond from the pair (V, G), G [a, b]
 * perturbed in place by sqrt(eps32) mean|G| V as the reference does; lr is precond_lr. */
void kron_update_precond(kron_factors *f, double *g, const double *v, double lr,
                         kron_scratch *s);

/* out = Q0^T Q0 g Q1^T Q1 (g and out [a, b], out may not be g). */
void kron_precondition(const kron_factors *f, const double *g, double *out);

/* Every factor times gm / max|Q_k| (the geometric mean gm of the max|Q_k|), _balance_Q. */
void kron_balance(kron_factors *f);

#endif
