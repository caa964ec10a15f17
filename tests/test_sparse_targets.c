/* test_sparse_targets.c: the sparse-target output layer (trainbench/sparse_out.h,
 * docs/SPARSE_TARGETS.md). On a small D the exact form (W = V U, Q = W^T W) and the naive one
 * (o formed) agree, step after step and across renormalisations, on the loss, the gradient for
 * h and W itself, for both losses and K = 3 targets, and K = 1..3 targets with empty slots
 * (-1); the naive gradients match finite differences; bad input (an index outside the
 * vocabulary, K = 0, a target of empty slots only, a layer too large for memory, a diverging
 * U) fails with a status naming it.
 *
 * Tolerance: float32 throughout (both forms, in different orders of operations) after up to 8
 * updates and 2 renormalisations; we assert |a - b| <= TOL (1 + |b|) with TOL = 2e-4. The
 * observed gap is about 1e-6 .. 1e-5 (printed). */
#include "testutil.h"

#include "trainbench/sparse_out.h"

#include <stdlib.h>
#include <string.h>

#define D 40
#define DIM 8
#define M 6
#define K 3
#define STEPS 8
#define TOL 2e-4

static float frand(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((*s >> 40) & 0xffffff) / (float)0x1000000 * 2.0f - 1.0f;
}

/* m targets of K distinct indices each, positive values */
static void make_targets(uint64_t *s, int32_t *idx, float *val)
{
    for (int i = 0; i < M; i++)
        for (int j = 0; j < K; j++) {
            int32_t c;
            bool dup;
            do {
                c = (int32_t)((frand(s) + 1.0f) * 0.5f * (D - 1) + 0.5f);
                dup = false;
                for (int t = 0; t < j; t++) dup |= idx[i * K + t] == c;
            } while (dup);
            idx[i * K + j] = c;
            val[i * K + j] = 0.5f + 0.5f * (frand(s) + 1.0f);
        }
}

static double max_rel(const float *a, const float *b, int64_t n)
{
    double worst = 0.0;
    for (int64_t i = 0; i < n; i++) {
        double e = fabs((double)a[i] - b[i]) / (1.0 + fabs((double)b[i]));
        if (!(e <= worst)) worst = e;
    }
    return worst;
}

/* Empty slots (-1): example i keeps 1 + i % K indices; the exact form gets -1 with NaN values
 * (not read), the naive one, for squared error, the same targets written out: distinct unused
 * indices of value 0 (for the spherical loss, which refuses a 0, the -1 targets too). */
static void empty_slots(const int32_t *idx, const float *val, int32_t *ie, float *ve,
                        int32_t *in, float *vn, bool spherical)
{
    for (int i = 0; i < M; i++)
        for (int j = 0; j < K; j++) {
            int q = i * K + j;
            bool empty = j >= 1 + i % K;
            ie[q] = empty ? -1 : idx[q];
            ve[q] = empty ? NAN : val[q];
            in[q] = ie[q], vn[q] = ve[q];
            if (!empty || spherical) continue;
            int32_t c = 0;
            for (bool used = true; used; c += used) { /* an index the example does not use */
                used = false;
                for (int t = 0; t < K; t++) used |= idx[i * K + t] == c || in[i * K + t] == c;
            }
            in[q] = c, vn[q] = 0.0f;
        }
}

static void test_agree(tb_sparse_loss loss, bool empty)
{
    tb_error err = {0};
    tb_sparse_out *ex = NULL, *nv = NULL;
    tb_sparse_out_config ce = tb_sparse_out_defaults(D, DIM, M, K, loss, TB_SPARSE_EXACT);
    tb_sparse_out_config cn = tb_sparse_out_defaults(D, DIM, M, K, loss, TB_SPARSE_NAIVE);
    ce.renorm_period = 3; /* renormalises after updates 3 and 6 */
    if (!CHECK_OK(tb_sparse_out_create(&ce, &ex, &err), &err) ||
        !CHECK_OK(tb_sparse_out_create(&cn, &nv, &err), &err))
        return;
    uint64_t s = 42 + (uint64_t)loss;
    static float w[D * DIM], we[D * DIM], wn[D * DIM];
    for (int i = 0; i < D * DIM; i++) w[i] = 0.3f * frand(&s);
    tb_sparse_out_set_weights(ex, w);
    tb_sparse_out_set_weights(nv, w);
    double worst = 0.0;
    for (int step = 0; step < STEPS; step++) {
        float h[M * DIM], dhe[M * DIM], dhn[M * DIM], val[M * K];
        int32_t idx[M * K];
        for (int i = 0; i < M * DIM; i++) h[i] = frand(&s);
        make_targets(&s, idx, val);
        int32_t ie[M * K], in[M * K];
        float ve[M * K], vn[M * K];
        empty_slots(idx, val, ie, ve, in, vn, loss == TB_SPARSE_SPHERICAL);
        tb_sparse_target y = {.m = M, .k = K, .idx = idx, .val = val};
        tb_sparse_target ye = {.m = M, .k = K, .idx = ie, .val = ve};
        tb_sparse_target yn = {.m = M, .k = K, .idx = in, .val = vn};
        double le = 0, ln = 0;
        CHECK_OK(tb_sparse_out_forward(ex, h, empty ? &ye : &y, &le, &err), &err);
        CHECK_OK(tb_sparse_out_forward(nv, h, empty ? &yn : &y, &ln, &err), &err);
        CHECK_NEAR(le, ln, TOL * (1.0 + fabs(ln)));
        CHECK_OK(tb_sparse_out_backward_update(ex, 1.0f, 0.05f, dhe, false, &err), &err);
        CHECK_OK(tb_sparse_out_backward_update(nv, 1.0f, 0.05f, dhn, false, &err), &err);
        double eh = max_rel(dhe, dhn, M * DIM);
        tb_sparse_out_weights(ex, we);
        tb_sparse_out_weights(nv, wn);
        double ew = max_rel(we, wn, D * DIM);
        CHECK(eh <= TOL);
        CHECK(ew <= TOL);
        worst = fmax(worst, fmax(eh, ew));
    }
    CHECK(tb_sparse_out_renormalisations(ex) == 2);
    CHECK(tb_sparse_out_updates(ex) == STEPS);
    CHECK(max_rel(we, w, D * DIM) > 1e-3); /* the model did move */
    printf("  %s%s: exact vs naive after %d updates, largest relative gap %.2g\n",
           loss == TB_SPARSE_SQUARED ? "squared error" : "spherical softmax",
           empty ? " (K = 1..3, empty slots)" : "", STEPS, worst);
    tb_sparse_out_destroy(ex);
    tb_sparse_out_destroy(nv);
}

/* the naive form's gradients against central differences of its loss (in double via a small
 * step), for h and for W (from the update it applies) */
static void test_finite_differences(tb_sparse_loss loss)
{
    tb_error err = {0};
    tb_sparse_out *nv = NULL;
    tb_sparse_out_config c = tb_sparse_out_defaults(D, DIM, M, K, loss, TB_SPARSE_NAIVE);
    if (!CHECK_OK(tb_sparse_out_create(&c, &nv, &err), &err)) return;
    uint64_t s = 7;
    static float w[D * DIM], w2[D * DIM];
    float h[M * DIM], dh[M * DIM], val[M * K];
    int32_t idx[M * K];
    for (int i = 0; i < D * DIM; i++) w[i] = 0.3f * frand(&s);
    for (int i = 0; i < M * DIM; i++) h[i] = frand(&s);
    make_targets(&s, idx, val);
    tb_sparse_target y = {.m = M, .k = K, .idx = idx, .val = val};
    const float e = 1e-2f, lr = 1e-3f;
    int coords[3] = {0, 17, M * DIM - 1}, wcoords[2] = {idx[0] * DIM + 3, 5 * DIM + 1};
    double l0, lp, lm;
    for (int t = 0; t < 3; t++) {
        int q = coords[t];
        float keep = h[q];
        tb_sparse_out_set_weights(nv, w);
        h[q] = keep + e;
        CHECK_OK(tb_sparse_out_forward(nv, h, &y, &lp, &err), &err);
        h[q] = keep - e;
        CHECK_OK(tb_sparse_out_forward(nv, h, &y, &lm, &err), &err);
        h[q] = keep;
        CHECK_OK(tb_sparse_out_forward(nv, h, &y, &l0, &err), &err);
        CHECK_OK(tb_sparse_out_backward_update(nv, 1.0f, lr, dh, false, &err), &err);
        CHECK_NEAR(dh[q], (lp - lm) / (2.0 * e), 2e-3 * (1.0 + fabs(dh[q])));
    }
    for (int t = 0; t < 2; t++) {
        int q = wcoords[t];
        memcpy(w2, w, sizeof w2);
        w2[q] = w[q] + e;
        tb_sparse_out_set_weights(nv, w2);
        CHECK_OK(tb_sparse_out_forward(nv, h, &y, &lp, &err), &err);
        w2[q] = w[q] - e;
        tb_sparse_out_set_weights(nv, w2);
        CHECK_OK(tb_sparse_out_forward(nv, h, &y, &lm, &err), &err);
        tb_sparse_out_set_weights(nv, w);
        CHECK_OK(tb_sparse_out_forward(nv, h, &y, &l0, &err), &err);
        CHECK_OK(tb_sparse_out_backward_update(nv, 1.0f, lr, NULL, false, &err), &err);
        tb_sparse_out_weights(nv, w2);
        double g = (w[q] - w2[q]) / lr;
        CHECK_NEAR(g, (lp - lm) / (2.0 * e), 2e-2 * (1.0 + fabs(g)));
    }
    tb_sparse_out_destroy(nv);
}

static void test_bad_input(void)
{
    tb_error err = {0};
    tb_sparse_out *ex = NULL, *big = NULL;
    tb_sparse_out_config c = tb_sparse_out_defaults(D, DIM, M, K, TB_SPARSE_SQUARED,
                                                    TB_SPARSE_EXACT);
    c.max_condition = 1e3;
    if (!CHECK_OK(tb_sparse_out_create(&c, &ex, &err), &err)) return;
    float h[M * DIM], val[M * K];
    int32_t idx[M * K];
    uint64_t s = 3;
    for (int i = 0; i < M * DIM; i++) h[i] = frand(&s);
    make_targets(&s, idx, val);
    double loss;
    idx[4] = D;
    tb_sparse_target y = {.m = M, .k = K, .idx = idx, .val = val};
    CHECK_FAILS(tb_sparse_out_forward(ex, h, &y, &loss, &err), TB_ERR_INVALID, &err,
                "outside the vocabulary [0, 40)");
    idx[4] = idx[3];
    CHECK_FAILS(tb_sparse_out_forward(ex, h, &y, &loss, &err), TB_ERR_INVALID, &err,
                "appears twice");
    make_targets(&s, idx, val);
    idx[K] = idx[K + 1] = idx[K + 2] = -1; /* example 1: every slot empty */
    CHECK_FAILS(tb_sparse_out_forward(ex, h, &y, &loss, &err), TB_ERR_INVALID, &err,
                "example 1 has no target index");
    idx[K] = -2;
    CHECK_FAILS(tb_sparse_out_forward(ex, h, &y, &loss, &err), TB_ERR_INVALID, &err,
                "index -2 of example 1 is outside");
    make_targets(&s, idx, val);
    y.k = 0;
    CHECK_FAILS(tb_sparse_out_forward(ex, h, &y, &loss, &err), TB_ERR_INVALID, &err, "K = 0");
    y.k = K;
    CHECK_FAILS(tb_sparse_out_backward_update(ex, 1.0f, 0.1f, NULL, false, &err),
                TB_ERR_INVALID, &err, "without a forward pass");
    /* a diverging U: a learning rate far past 1 / (alpha ||h||^2) */
    static float w[D * DIM];
    for (int i = 0; i < D * DIM; i++) w[i] = 0.3f * frand(&s);
    tb_sparse_out_set_weights(ex, w);
    tb_status st = TB_OK;
    for (int step = 0; step < 20 && st == TB_OK; step++) {
        st = tb_sparse_out_forward(ex, h, &y, &loss, &err);
        if (st == TB_OK) st = tb_sparse_out_backward_update(ex, 1.0f, 30.0f, NULL, false, &err);
    }
    CHECK_FAILS(st, TB_ERR_NUMERIC, &err, "U");
    tb_sparse_out_destroy(ex);
    /* too large: refused before allocating, naming the bytes */
    c = tb_sparse_out_defaults(2000000000, 4096, 256, 1, TB_SPARSE_SQUARED, TB_SPARSE_EXACT);
    CHECK_FAILS(tb_sparse_out_create(&c, &big, &err), TB_ERR_NOMEM, &err, "needs");
    CHECK(big == NULL);
    c = tb_sparse_out_defaults(10000, 64, 16, 1, TB_SPARSE_SQUARED, TB_SPARSE_NAIVE);
    c.memory_limit = 1 << 20;
    int64_t bytes = 0;
    CHECK_OK(tb_sparse_out_bytes(&c, &bytes, &err), &err);
    char want[64];
    snprintf(want, sizeof want, "needs %lld bytes", (long long)bytes);
    CHECK_FAILS(tb_sparse_out_create(&c, &big, &err), TB_ERR_NOMEM, &err, want);
    c.max_k = 0;
    CHECK_FAILS(tb_sparse_out_create(&c, &big, &err), TB_ERR_INVALID, &err, "nonzeros");
}

int main(void)
{
    test_agree(TB_SPARSE_SQUARED, false);
    test_agree(TB_SPARSE_SPHERICAL, false);
    test_agree(TB_SPARSE_SQUARED, true);
    test_agree(TB_SPARSE_SPHERICAL, true);
    test_finite_differences(TB_SPARSE_SQUARED);
    test_finite_differences(TB_SPARSE_SPHERICAL);
    test_bad_input();
    return tb_test_finish("test_sparse_targets");
}
