/* gp_fit.c: the negative log marginal likelihood of a GP (averaged over tasks: HyperBO's NLL
 * pre-training objective) with its analytic gradient, and the fit that minimises it: outputs
 * standardised, log parameters bounded to a box through a sigmoid, multi-start L-BFGS
 * (docs/MATH.md section 3). */
#include "tune/gp_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define SQRT5 2.23606797749978969641
#define LOG_2PI 1.83787706640934548356
#define MAX_THETA (TB_GP_MAX_DIMS + 3)

int tb_gp_theta_count(int dims) { return dims + 3; }

void tb_gp_theta_pack(const tb_gp_params *p, double *theta)
{
    theta[0] = p->mean;
    theta[1] = log(p->amplitude);
    for (int k = 0; k < p->dims; k++) theta[2 + k] = log(p->lengthscales[k]);
    theta[2 + p->dims] = log(p->noise);
}

void tb_gp_theta_unpack(int dims, const double *theta, tb_gp_params *p)
{
    memset(p, 0, sizeof *p);
    p->dims = dims;
    p->mean = theta[0];
    p->amplitude = exp(theta[1]);
    for (int k = 0; k < dims; k++) p->lengthscales[k] = exp(theta[2 + k]);
    p->noise = exp(theta[2 + dims]);
}

/* ---- the objective --------------------------------------------------------------------------- */
/* One task's NLL and (grad != NULL) its gradient added to grad. work holds 2 n^2 + n doubles. */
static tb_status task_nll(const tb_gp_params *p, const tb_gp_task *t, double *work, double *nll,
                          double *grad, tb_error *err)
{
    const int n = t->n, d = p->dims;
    double *l = work, *kinv = work + (size_t)n * n, *alpha = kinv + (size_t)n * n;
    tb_status st = tb_gp_factor(p, t->x, n, l, err);
    if (st != TB_OK) return st;
    for (int i = 0; i < n; i++) alpha[i] = t->y[i] - p->mean;
    tb_chol_lower_solve(l, n, alpha);
    double quad = 0, logdet = 0;
    for (int i = 0; i < n; i++) {
        quad += alpha[i] * alpha[i];
        logdet += log(l[(size_t)i * n + i]);
    }
    tb_chol_upper_solve(l, n, alpha); /* now (K + noise I)^-1 (y - mean) */
    *nll = 0.5 * quad + logdet + 0.5 * n * LOG_2PI;
    if (!grad) return TB_OK;
    /* K^-1 column by column */
    for (int j = 0; j < n; j++) {
        double *col = kinv + (size_t)j * n; /* symmetric: column j stored as row j */
        memset(col, 0, (size_t)n * sizeof *col);
        col[j] = 1;
        tb_chol_lower_solve(l, n, col);
        tb_chol_upper_solve(l, n, col);
    }
    /* dNLL/dtheta = 1/2 tr((K^-1 - alpha alpha^T) dK/dtheta); dNLL/dmean = -sum alpha */
    for (int i = 0; i < n; i++) {
        grad[0] -= alpha[i];
        for (int j = 0; j <= i; j++) {
            double w = (kinv[(size_t)i * n + j] - alpha[i] * alpha[j]) * (i == j ? 0.5 : 1.0);
            const double *a = t->x + (size_t)i * d, *b = t->x + (size_t)j * d;
            double r2 = 0, s2[TB_GP_MAX_DIMS];
            for (int k = 0; k < d; k++) {
                double z = (a[k] - b[k]) / p->lengthscales[k];
                s2[k] = z * z;
                r2 += s2[k];
            }
            double r = sqrt(r2), e = exp(-SQRT5 * r);
            grad[1] += w * p->amplitude * (1 + SQRT5 * r + 5.0 / 3.0 * r2) * e;
            double dls = w * p->amplitude * 5.0 / 3.0 * (1 + SQRT5 * r) * e;
            for (int k = 0; k < d; k++) grad[2 + k] += dls * s2[k];
            if (i == j) grad[2 + d] += w * p->noise;
        }
    }
    return TB_OK;
}

tb_status tb_gp_nll(const tb_gp_params *p, const tb_gp_task *tasks, int n_tasks, double *nll,
                    double *grad, tb_error *err)
{
    tb_status st = tb_gp_params_check(p, err);
    if (st != TB_OK) return st;
    if (n_tasks < 1) return tb_fail(err, TB_ERR_INVALID, "Gaussian process: no tasks");
    int max_n = 0;
    for (int i = 0; i < n_tasks; i++) {
        if (tasks[i].n < 1)
            return tb_fail(err, TB_ERR_INVALID, "Gaussian process: task %d has no observations",
                           i + 1);
        if (tasks[i].n > max_n) max_n = tasks[i].n;
    }
    double *work = malloc((2 * (size_t)max_n * max_n + max_n) * sizeof *work);
    if (!work) return tb_fail(err, TB_ERR_NOMEM, "Gaussian process: out of memory");
    const int nt = tb_gp_theta_count(p->dims);
    if (grad) memset(grad, 0, (size_t)nt * sizeof *grad);
    double total = 0;
    for (int i = 0; st == TB_OK && i < n_tasks; i++) {
        double one = 0;
        st = task_nll(p, &tasks[i], work, &one, grad, err);
        total += one;
    }
    free(work);
    if (st != TB_OK) return st;
    *nll = total / n_tasks;
    for (int k = 0; grad && k < nt; k++) grad[k] /= n_tasks;
    return TB_OK;
}

/* ---- the fit ----------------------------------------------------------------------------------- */
/* theta_k = lo_k + (hi_k - lo_k) sigmoid(z_k): the optimiser moves freely in z. */
typedef struct fit_ctx {
    const tb_gp_task *tasks;
    int n_tasks, dims, nt;
    double lo[MAX_THETA], hi[MAX_THETA];
} fit_ctx;

static double sigmoid(double z) { return 1 / (1 + exp(-z)); }

/* The NLL at z and its gradient in z (gz); +inf where it cannot be computed. */
static double objective(const fit_ctx *c, const double *z, double *gz)
{
    double theta[MAX_THETA], g[MAX_THETA];
    for (int k = 0; k < c->nt; k++) theta[k] = c->lo[k] + (c->hi[k] - c->lo[k]) * sigmoid(z[k]);
    tb_gp_params p;
    tb_gp_theta_unpack(c->dims, theta, &p);
    double f;
    if (tb_gp_nll(&p, c->tasks, c->n_tasks, &f, g, NULL) != TB_OK || !isfinite(f)) return INFINITY;
    for (int k = 0; k < c->nt; k++) {
        double s = sigmoid(z[k]);
        gz[k] = g[k] * (c->hi[k] - c->lo[k]) * s * (1 - s);
    }
    return f;
}

static double dot(const double *a, const double *b, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++) s += a[i] * b[i];
    return s;
}

/* Minimises the objective from z (updated in place) by L-BFGS (memory 6) with a backtracking
 * (Armijo) line search; returns the value at the end. */
static double lbfgs(const fit_ctx *c, double *z, int max_iters)
{
    enum { M = 6 };
    const int n = c->nt;
    double s[M][MAX_THETA], y[M][MAX_THETA], rho[M], a[M];
    double g[MAX_THETA], d[MAX_THETA], zn[MAX_THETA], gn[MAX_THETA];
    int used = 0, head = 0;
    double f = objective(c, z, g);
    for (int it = 0; it < max_iters && isfinite(f); it++) {
        /* two-loop recursion: d = -H g */
        for (int k = 0; k < n; k++) d[k] = -g[k];
        for (int i = 0; i < used; i++) {
            int j = (head - 1 - i + M) % M;
            a[j] = rho[j] * dot(s[j], d, n);
            for (int k = 0; k < n; k++) d[k] -= a[j] * y[j][k];
        }
        if (used > 0) {
            int j = (head - 1 + M) % M;
            double scale = dot(s[j], y[j], n) / dot(y[j], y[j], n);
            for (int k = 0; k < n; k++) d[k] *= scale;
        }
        for (int i = used - 1; i >= 0; i--) {
            int j = (head - 1 - i + M) % M;
            double b = rho[j] * dot(y[j], d, n);
            for (int k = 0; k < n; k++) d[k] += (a[j] - b) * s[j][k];
        }
        double gd = dot(g, d, n);
        if (!(gd < 0)) { /* not a descent direction: start over from steepest descent */
            for (int k = 0; k < n; k++) d[k] = -g[k];
            gd = -dot(g, g, n);
            used = 0;
        }
        if (!(gd < 0)) break; /* a zero gradient */
        double step = used == 0 ? fmin(1.0, 1.0 / sqrt(-gd)) : 1.0, fn = INFINITY;
        bool accepted = false;
        for (int tries = 0; tries < 40 && !accepted; tries++, step *= 0.5) {
            for (int k = 0; k < n; k++) zn[k] = z[k] + step * d[k];
            fn = objective(c, zn, gn);
            accepted = fn <= f + 1e-4 * step * gd;
        }
        if (!accepted) break;
        for (int k = 0; k < n; k++) {
            s[head][k] = zn[k] - z[k];
            y[head][k] = gn[k] - g[k];
        }
        double sy = dot(s[head], y[head], n);
        if (sy > 1e-12) {
            rho[head] = 1 / sy;
            head = (head + 1) % M;
            if (used < M) used++;
        }
        double change = f - fn, gmax = 0;
        memcpy(z, zn, (size_t)n * sizeof *z);
        memcpy(g, gn, (size_t)n * sizeof *g);
        f = fn;
        for (int k = 0; k < n; k++) gmax = fmax(gmax, fabs(g[k]));
        if (change <= 1e-10 * (1 + fabs(f)) || gmax < 1e-7) break;
    }
    return f;
}

tb_status tb_gp_fit(const tb_gp_task *tasks, int n_tasks, int dims,
                    const tb_gp_fit_options *opts, tb_gp_params *out, tb_error *err)
{
    tb_gp_fit_options o = opts ? *opts : (tb_gp_fit_options){0};
    if (o.restarts <= 0) o.restarts = 4;
    if (o.max_iters <= 0) o.max_iters = 80;
    if (!(o.min_noise > 0)) o.min_noise = 1e-6;
    if (dims < 1 || dims > TB_GP_MAX_DIMS)
        return tb_fail(err, TB_ERR_INVALID, "Gaussian process: %d dimensions (1 to %d)", dims,
                       TB_GP_MAX_DIMS);
    if (n_tasks < 1) return tb_fail(err, TB_ERR_INVALID, "Gaussian process: no tasks to fit");
    /* the outputs standardised, all tasks pooled */
    int total = 0;
    double sum = 0, sum2 = 0;
    for (int i = 0; i < n_tasks; i++) {
        if (tasks[i].n < 1)
            return tb_fail(err, TB_ERR_INVALID, "Gaussian process: task %d has no observations",
                           i + 1);
        for (int j = 0; j < tasks[i].n; j++) {
            if (!isfinite(tasks[i].y[j]))
                return tb_fail(err, TB_ERR_INVALID,
                               "Gaussian process: output %d of task %d is not finite", j + 1,
                               i + 1);
            sum += tasks[i].y[j];
            total++;
        }
    }
    if (total < 2)
        return tb_fail(err, TB_ERR_INVALID,
                       "Gaussian process: a fit needs at least 2 observations, got %d", total);
    const double shift = sum / total;
    for (int i = 0; i < n_tasks; i++)
        for (int j = 0; j < tasks[i].n; j++) sum2 += pow(tasks[i].y[j] - shift, 2);
    double scale = sqrt(sum2 / total);
    if (!(scale > 1e-12)) scale = 1;
    double *ys = malloc((size_t)total * sizeof *ys);
    tb_gp_task *std_tasks = malloc((size_t)n_tasks * sizeof *std_tasks);
    if (!ys || !std_tasks) {
        free(ys);
        free(std_tasks);
        return tb_fail(err, TB_ERR_NOMEM, "Gaussian process: out of memory");
    }
    for (int i = 0, o2 = 0; i < n_tasks; i++) {
        std_tasks[i] = (tb_gp_task){tasks[i].x, ys + o2, tasks[i].n};
        for (int j = 0; j < tasks[i].n; j++) ys[o2++] = (tasks[i].y[j] - shift) / scale;
    }
    fit_ctx c = {.tasks = std_tasks, .n_tasks = n_tasks, .dims = dims,
                 .nt = tb_gp_theta_count(dims)};
    c.lo[0] = -5;
    c.hi[0] = 5;
    c.lo[1] = log(0.02);
    c.hi[1] = log(50.0);
    for (int k = 0; k < dims; k++) {
        c.lo[2 + k] = log(0.02);
        c.hi[2 + k] = log(20.0);
    }
    c.lo[2 + dims] = log(o.min_noise);
    c.hi[2 + dims] = log(1.0);
    if (c.lo[2 + dims] >= c.hi[2 + dims]) c.lo[2 + dims] = c.hi[2 + dims] - 1;
    /* multi-start: the middle of the box, then starts drawn from the seed */
    tb_rng rng = tb_rng_make(o.seed, 0x6770ull);
    double best = INFINITY, best_z[MAX_THETA] = {0}, z[MAX_THETA];
    for (int r = 0; r < o.restarts; r++) {
        for (int k = 0; k < c.nt; k++) z[k] = r == 0 ? 0 : 1.5 * tb_rng_normal(&rng);
        double f = lbfgs(&c, z, o.max_iters);
        if (f < best) {
            best = f;
            memcpy(best_z, z, sizeof z);
        }
    }
    free(ys);
    free(std_tasks);
    if (!isfinite(best))
        return tb_fail(err, TB_ERR_NUMERIC,
                       "Gaussian process: the marginal likelihood could not be evaluated at any "
                       "start (covariances not positive definite)");
    double theta[MAX_THETA];
    for (int k = 0; k < c.nt; k++)
        theta[k] = c.lo[k] + (c.hi[k] - c.lo[k]) * sigmoid(best_z[k]);
    tb_gp_theta_unpack(dims, theta, out);
    out->mean = shift + scale * out->mean;
    out->amplitude *= scale * scale;
    out->noise *= scale * scale;
    return TB_OK;
}
