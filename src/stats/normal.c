/* normal.c: the standard normal CDF and quantile.
 *
 * The quantile starts from the rational approximation of Abramowitz and Stegun 26.2.23
 * (absolute error below 4.5e-4) and refines it with Halley steps on f(x) = Phi(x) - p, whose
 * derivatives are f' = phi(x) and f'' = -x phi(x): x <- x - u / (1 + x u / 2) with
 * u = f(x) / phi(x). Convergence is cubic, so three steps reach machine precision; the steps
 * work on the lower tail min(p, 1 - p), where erfc keeps full relative accuracy. */
#include "stats_impl.h"

#include <math.h>

double tb_normal_cdf(double x)
{
    return 0.5 * erfc(-x * 0.70710678118654752440); /* 1 / sqrt 2 */
}

/* phi(x), the standard normal density. */
static double normal_pdf(double x)
{
    return 0.39894228040143267794 * exp(-0.5 * x * x); /* 1 / sqrt(2 pi) */
}

/* The lower-tail quantile for q in (0, 0.5]. */
static double lower_quantile(double q)
{
    /* A&S 26.2.23: x = -(t - (c0 + c1 t + c2 t^2) / (1 + d1 t + d2 t^2 + d3 t^3)). */
    double t = sqrt(-2.0 * log(q));
    double x = -(t - (2.515517 + t * (0.802853 + t * 0.010328)) /
                         (1.0 + t * (1.432788 + t * (0.189269 + t * 0.001308))));
    for (int step = 0; step < 4; step++) {
        double pdf = normal_pdf(x);
        if (pdf == 0.0) break; /* q denormal: keep the approximation */
        double u = (tb_normal_cdf(x) - q) / pdf;
        double dx = u / (1.0 + 0.5 * x * u);
        x -= dx;
        if (fabs(dx) <= 1e-16 * fabs(x)) break;
    }
    return x;
}

double tb_normal_quantile(double p)
{
    if (isnan(p) || p < 0.0 || p > 1.0) return NAN;
    if (p == 0.0) return -INFINITY;
    if (p == 1.0) return INFINITY;
    if (p == 0.5) return 0.0;
    return p < 0.5 ? lower_quantile(p) : -lower_quantile(1.0 - p);
}

tb_status tb_normal_quantile_checked(double p, double *out, tb_error *err)
{
    if (!out) return tb_fail(err, TB_ERR_INVALID, "normal quantile: out is NULL");
    if (!(p > 0.0 && p < 1.0))
        return tb_fail(err, TB_ERR_INVALID, "normal quantile: probability %g is outside (0, 1)", p);
    *out = tb_normal_quantile(p);
    return TB_OK;
}
