/* kfac_stats.c: K-FAC/EKFAC statistics of one layer from its last backward pass.
 *
 * The layer's input gives a-bar (rows of [a, 1]) and its output gradient gives h = N g, where
 * N is the number of examples of the batch-mean loss. Dense layer, input [rows, in]:
 *     A_batch = (1/rows) a-bar^T a-bar,   G_batch = (1/rows) h^T h        (N = rows)
 * Convolution (KFC, Grosse & Martens 2016), input [N, Cin, H, W], T = Ho Wo locations: a-bar
 * holds the unfolded patches (unfolded on the host), h the output gradient as [N T, Cout], and
 *     A_batch = (1/(N T)) sum_{n,t} a-bar a-bar^T,  G_batch = (1/N) sum_{n,t} h h^T,
 * i.e. the |T| factor of the Fisher goes entirely into G (A is a mean over patches, G a sum
 * over locations), so A (x) G approximates E_n[vec(dW_n) vec(dW_n)^T] with no extra factor.
 * EKFAC's S_batch = (1/N) sum_n (U_G^T dW_n U_A)^2: for dense layers via the factorised form
 * (1/N) (Ghat^2)^T (Ahat^2); for convolutions from per-example gradients (batched gemm).
 * Products run on the backend; element-wise squares on the host. */
#include "optim/kfac_impl.h"

#include "optim/kron.h"

#include <stdlib.h>
#include <string.h>

typedef struct batch_mats {
    int64_t rows;     /* rows of abar and h: examples (dense) or examples x locations (conv) */
    int64_t examples; /* N */
    float *abar;      /* device [rows, din] */
    float *h;         /* device [rows, dout] */
} batch_mats;

static const char *layer_name(const tb_kfac_layer *L) { return L->pw->name; }

/* Fills m from the layer's current input and output gradient. */
static tb_status gather(tb_optimizer *opt, tb_kfac_layer *L, batch_mats *m, tb_error *err)
{
    tb_backend *be = opt->be;
    memset(m, 0, sizeof *m);
    tb_var *x = L->ref.kind == TB_LAYER_LINEAR ? L->ref.linear->input : L->ref.conv->input;
    tb_var *y = L->ref.kind == TB_LAYER_LINEAR ? L->ref.linear->output : L->ref.conv->output;
    if (!x || !y || !x->value.data || !y->grad.data)
        return tb_fail(err, TB_ERR_INVALID,
                       "%s: layer '%s' has no input or output gradient: run its forward and a "
                       "backward pass before the statistics",
                       opt->vt->info.name, layer_name(L));
    if (!tb_tensor_is_contiguous(&x->value) || !tb_tensor_is_contiguous(&y->grad))
        return tb_fail(err, TB_ERR_INVALID, "%s: layer '%s': input is not contiguous",
                       opt->vt->info.name, layer_name(L));
    if (L->ref.kind == TB_LAYER_LINEAR) {
        m->rows = m->examples = tb_tensor_numel(&x->value) / L->in;
    } else {
        m->examples = x->value.shape[0];
        m->rows = tb_tensor_numel(&y->value) / L->dout;
    }
    if (m->rows == 0 || m->examples == 0) /* the factors and scaling are means over them */
        return tb_fail(err, TB_ERR_SHAPE, "%s: layer '%s': the last pass had an empty batch",
                       opt->vt->info.name, layer_name(L));
    m->abar = tb_backend_alloc(be, (size_t)(m->rows * L->din) * sizeof(float));
    m->h = tb_backend_alloc(be, (size_t)(m->rows * L->dout) * sizeof(float));
    if (!m->abar || !m->h)
        return tb_fail(err, TB_ERR_NOMEM, "%s: layer '%s': no memory for %lld rows of statistics",
                       opt->vt->info.name, layer_name(L), (long long)m->rows);
    if (L->ref.kind == TB_LAYER_LINEAR) {
        be->ops.fill(be, m->abar, m->rows * L->din, 1.0f);
        int64_t shape[2] = {m->rows, L->in}, ds[2] = {L->din, 1}, ss[2] = {L->in, 1};
        be->ops.strided_copy(be, 2, shape, m->abar, ds, x->value.data, ss, false);
        be->ops.copy(be, m->h, y->grad.data, (size_t)(m->rows * L->dout) * sizeof(float));
    } else {
        const tb_conv_layer *c = L->ref.conv;
        int n = (int)x->value.shape[0], ch = (int)x->value.shape[1];
        int hh = (int)x->value.shape[2], ww = (int)x->value.shape[3];
        int k = (int)c->w->value.shape[2], ho = (int)y->value.shape[2], wo = (int)y->value.shape[3];
        size_t xbytes = tb_tensor_bytes(&x->value), pbytes = (size_t)(m->rows * L->din) * 4;
        float *hx = malloc(xbytes), *hp = malloc(pbytes);
        if (!hx || !hp) {
            free(hx);
            free(hp);
            return tb_fail(err, TB_ERR_NOMEM, "%s: layer '%s': no host memory for patches",
                           opt->vt->info.name, layer_name(L));
        }
        tb_backend_download(be, hx, x->value.data, xbytes);
        tb_kron_unfold(hx, n, ch, hh, ww, k, c->stride, c->pad, ho, wo, L->pb != NULL, hp);
        tb_backend_upload(be, m->abar, hp, pbytes);
        free(hx);
        free(hp);
        /* g [N, Cout, T] -> h [N, T, Cout] */
        int64_t t = (int64_t)ho * wo, shape[3] = {n, L->dout, t};
        int64_t ds[3] = {t * L->dout, 1, L->dout}, ss[3] = {L->dout * t, t, 1};
        be->ops.strided_copy(be, 3, shape, m->h, ds, y->grad.data, ss, false);
    }
    be->ops.scale(be, m->h, m->rows * L->dout, (float)m->examples);
    return TB_OK;
}

/* A <- rho A + (1 - rho) A_batch (A = A_batch the first time), likewise G. */
static void update_factors(tb_optimizer *opt, tb_kfac_layer *L, const batch_mats *m)
{
    tb_backend *be = opt->be;
    double rho = L->have_stats ? tb_opt_hp(opt, "stat_decay") : 0.0;
    int rows = (int)m->rows;
    be->ops.gemm(be, true, false, L->din, L->din, rows, (float)((1.0 - rho) / (double)m->rows),
                 m->abar, L->din, m->abar, L->din, (float)rho, L->A, L->din);
    be->ops.gemm(be, true, false, L->dout, L->dout, rows,
                 (float)((1.0 - rho) / (double)m->examples), m->h, L->dout, m->h, L->dout,
                 (float)rho, L->G, L->dout);
    L->have_stats = true;
}

static void square_on_host(tb_backend *be, float *dev, int64_t n, float *host)
{
    tb_backend_download(be, host, dev, (size_t)n * sizeof(float));
    for (int64_t i = 0; i < n; i++) host[i] *= host[i];
    tb_backend_upload(be, dev, host, (size_t)n * sizeof(float));
}

/* S <- rho S + (1 - rho) S_batch in the current eigenbasis. */
static tb_status update_scale(tb_optimizer *opt, tb_kfac_layer *L, const batch_mats *m,
                              tb_error *err)
{
    tb_backend *be = opt->be;
    const int64_t dd = (int64_t)L->dout * L->din;
    int rows = (int)m->rows, din = L->din, dout = L->dout;
    float *sb_host = L->host; /* S_batch on the host, [dout, din] */
    tb_status st = TB_OK;
    if (L->ref.kind == TB_LAYER_LINEAR) {
        int64_t big = m->rows * (din > dout ? din : dout);
        float *ahat = tb_backend_alloc(be, (size_t)(m->rows * din) * 4);
        float *ghat = tb_backend_alloc(be, (size_t)(m->rows * dout) * 4);
        float *hbuf = malloc((size_t)big * 4);
        if (!ahat || !ghat || !hbuf) {
            st = tb_fail(err, TB_ERR_NOMEM, "%s: layer '%s': no memory for the scaling",
                         opt->vt->info.name, layer_name(L));
        } else {
            be->ops.gemm(be, false, false, rows, din, din, 1.0f, m->abar, din, L->PA, din, 0.0f,
                         ahat, din);
            be->ops.gemm(be, false, false, rows, dout, dout, 1.0f, m->h, dout, L->PG, dout,
                         0.0f, ghat, dout);
            square_on_host(be, ahat, m->rows * din, hbuf);
            square_on_host(be, ghat, m->rows * dout, hbuf);
            be->ops.gemm(be, true, false, dout, din, rows, (float)(1.0 / (double)m->examples),
                         ghat, dout, ahat, din, 0.0f, L->tmp, din);
            tb_backend_download(be, sb_host, L->tmp, (size_t)dd * 4);
        }
        tb_backend_free(be, ahat);
        tb_backend_free(be, ghat);
        free(hbuf);
    } else {
        /* per-example gradients dW_n = h_n^T abar_n, projected: U_G^T dW_n U_A */
        int n = (int)m->examples, t = (int)(m->rows / m->examples);
        float *pe = tb_backend_alloc(be, (size_t)(n * dd) * 4);
        float *pt = tb_backend_alloc(be, (size_t)(n * dd) * 4);
        float *hbuf = malloc((size_t)(n * dd) * 4);
        if (!pe || !pt || !hbuf) {
            st = tb_fail(err, TB_ERR_NOMEM,
                         "%s: layer '%s': no memory for %d per-example gradients of %lld values",
                         opt->vt->info.name, layer_name(L), n, (long long)dd);
        } else {
            be->ops.gemm_batched(be, true, false, dout, din, t, 1.0f, m->h, dout,
                                 (int64_t)t * dout, m->abar, din, (int64_t)t * din, 0.0f, pe,
                                 din, dd, n);
            be->ops.gemm_batched(be, true, false, dout, din, dout, 1.0f, L->PG, dout, 0, pe, din,
                                 dd, 0.0f, pt, din, dd, n);
            be->ops.gemm_batched(be, false, false, dout, din, din, 1.0f, pt, din, dd, L->PA, din,
                                 0, 0.0f, pe, din, dd, n);
            tb_backend_download(be, hbuf, pe, (size_t)(n * dd) * 4);
            for (int64_t j = 0; j < dd; j++) {
                double s = 0.0;
                for (int i = 0; i < n; i++) s += (double)hbuf[i * dd + j] * hbuf[i * dd + j];
                sb_host[j] = (float)(s / n);
            }
        }
        tb_backend_free(be, pe);
        tb_backend_free(be, pt);
        free(hbuf);
    }
    if (st != TB_OK) return st;
    float rho = (float)tb_opt_hp(opt, "stat_decay");
    for (int64_t j = 0; j < dd; j++) L->S[j] = rho * L->S[j] + (1.0f - rho) * sb_host[j];
    return TB_OK;
}

tb_status tb_kfac_layer_stats(tb_optimizer *opt, tb_kfac_layer *L, bool factors, bool scale,
                              tb_error *err)
{
    if (!factors && !scale) return TB_OK;
    batch_mats m;
    tb_status st = gather(opt, L, &m, err);
    if (st == TB_OK && factors) update_factors(opt, L, &m);
    if (st == TB_OK && scale) st = update_scale(opt, L, &m, err);
    tb_backend_free(opt->be, m.abar);
    tb_backend_free(opt->be, m.h);
    return st;
}
