/* kfac_limits.c: what K-FAC and EKFAC refuse before they allocate or train: hyperparameters
 * that are in range but cannot work (a fractional interval, a damping below float32's
 * smallest normal number), and layers whose Kronecker factors are too large to hold and
 * invert (a factor side above max_factor_dim), named with the memory and work they would
 * take. */
#include "optim/kfac_impl.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

tb_status tb_kfac_check(const char *algorithm, tb_hparams *hp, const tb_hparams *given,
                        tb_error *err)
{
    (void)given;
    const char *ints[] = {"cov_interval", "inv_interval", "max_factor_dim", "scale_interval"};
    for (size_t i = 0; i < sizeof ints / sizeof *ints; i++) {
        if (!tb_hparams_has(hp, ints[i])) continue; /* scale_interval: EKFAC only */
        double v = tb_hparams_get(hp, ints[i], 1);
        if (v != floor(v))
            return tb_fail(err, TB_ERR_INVALID, "%s: %s = %g must be a whole number", algorithm,
                           ints[i], v);
    }
    /* EKFAC divides by S + damping in float32 (S is 0 along directions no example has taken);
     * K-FAC's factored damping pi sqrt(damping) sets the largest eigenvalue of the inverses
     * kept in float32 */
    return tb_opt_check_guard(hp, algorithm, "damping",
                              strcmp(algorithm, "ekfac") == 0
                                  ? "S + damping would be 0 where S is (directions no example "
                                    "has taken), and the update divides by it"
                                  : "the inverses of A + pi sqrt(damping) I and G + "
                                    "sqrt(damping)/pi I, kept in float32, would overflow where "
                                    "a factor is singular",
                              err);
}

/* Bytes of a layer's factors with din inputs (+1 with a bias) and dout outputs: on the
 * backend A, its inverse or eigenbasis, G and its own [din^2, din^2, dout^2, dout^2], and
 * three [dout, din] buffers; on the host the [dout, din] scratch (and EKFAC's S), and while
 * a refresh runs A and G in double plus a float32 copy of the larger. */
static void layer_bytes(double din, double dout, bool ekfac, double *device, double *host)
{
    *device = 4.0 * (2.0 * din * din + 2.0 * dout * dout + 3.0 * dout * din);
    *host = 4.0 * dout * din * (ekfac ? 2.0 : 1.0) + 8.0 * (din * din + dout * dout) +
            4.0 * fmax(din * din, dout * dout);
}

tb_status tb_kfac_check_layer(const tb_optimizer *opt, const char *layer, int din, int dout,
                              tb_error *err)
{
    double limit = tb_opt_hp(opt, "max_factor_dim");
    if (din <= limit && dout <= limit) return TB_OK;
    const tb_kfac_state *s = opt->state;
    double device, host;
    layer_bytes(din, dout, s->ekfac, &device, &host);
    bool g_side = dout > limit;
    int side = g_side ? dout : din;
    return tb_fail(err, TB_ERR_INVALID,
                   "%s: layer '%s' is too large for Kronecker factors: its factor %s would be "
                   "%d x %d (its %s), above max_factor_dim = %.0f. Its factors would take "
                   "%.1f GiB on the backend and %.1f GiB of host memory, and each refresh (every "
                   "inv_interval steps) at least %.1e flops. Give --hp max_factor_dim=%d to try "
                   "anyway, or use another algorithm",
                   opt->vt->info.name, layer, g_side ? "G" : "A", side, side,
                   g_side ? "outputs" : "inputs, +1 for a bias", limit, device / 0x1p30,
                   host / 0x1p30, (double)din * din * din + (double)dout * dout * dout, side);
}
