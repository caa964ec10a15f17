/* test_tune.c: the Halton sequence (known points of an unscrambled base, coverage of every
 * interval, low discrepancy), search-space mapping, sampling and parsing, including malformed
 * JSON and bad ranges rejected with messages that name the cause; the default search space of
 * every built-in algorithm, accepted by its optimizer across its ranges. */
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

static void test_radical_inverse(void)
{
    const double want[8] = {1. / 3, 2. / 3, 1. / 9, 4. / 9, 7. / 9, 2. / 9, 5. / 9, 8. / 9};
    for (int i = 0; i < 8; i++) CHECK_NEAR(tb_radical_inverse((uint64_t)i + 1, 3, NULL), want[i], 1e-15);
    /* bases: the dims primes just below 997 */
    CHECK(tb_halton_base(0, 1) == 991);
    CHECK(tb_halton_base(0, 2) == 983 && tb_halton_base(1, 2) == 991);
}

/* With skip 0 and no shift, the first b^k points fill each [j/b^k, (j+1)/b^k) once, also with
 * a digit permutation that fixes 0. */
static void test_coverage(void)
{
    const int b = 5, k = 3, n = 125;
    int perm[5] = {0, 3, 1, 4, 2};
    for (int p = 0; p < 2; p++) {
        int hits[125] = {0};
        for (int i = 0; i < n; i++) {
            double x = tb_radical_inverse((uint64_t)i, b, p ? perm : NULL);
            int cell = (int)(x * n);
            if (cell >= 0 && cell < n) hits[cell]++;
        }
        bool once = true;
        for (int j = 0; j < n; j++) once &= hits[j] == 1;
        CHECK(once);
    }
    (void)k;
}

/* Warnock's closed form of the L2-star discrepancy of n points in [0,1)^d. */
static double l2_star(const double *x, int n, int d)
{
    double a = pow(3.0, -d), s1 = 0, s2 = 0;
    for (int i = 0; i < n; i++) {
        double p = 1;
        for (int k = 0; k < d; k++) p *= 1 - x[i * d + k] * x[i * d + k];
        s1 += p;
        for (int j = 0; j < n; j++) {
            double q = 1;
            for (int k = 0; k < d; k++) q *= 1 - fmax(x[i * d + k], x[j * d + k]);
            s2 += q;
        }
    }
    return sqrt(a - pow(2.0, 1 - d) / n * s1 + s2 / ((double)n * n));
}

static void test_halton_discrepancy(void)
{
    tb_error err = {0};
    enum { N = 100, D = 4 };
    static double h[N * D], u[N * D];
    CHECK_OK(tb_halton(N, D, 100, true, 7, h, &err), &err);
    bool in_range = true;
    for (int i = 0; i < N * D; i++) in_range &= h[i] >= 0 && h[i] < 1;
    CHECK(in_range);
    double dh = l2_star(h, N, D), du = 0;
    const int reps = 20;
    for (int r = 0; r < reps; r++) {
        tb_rng rng = tb_rng_make((uint64_t)r, TB_STREAM_HPARAM);
        for (int i = 0; i < N * D; i++) u[i] = tb_rng_uniform(&rng);
        du += l2_star(u, N, D) / reps;
    }
    printf("L2-star discrepancy, N=100 d=4: Halton %.5f, i.i.d. (mean of %d) %.5f\n", dh, reps, du);
    CHECK(dh < du);
    /* reproducible from the seed; another seed changes only the order */
    static double h2[N * D];
    CHECK_OK(tb_halton(N, D, 100, true, 7, h2, &err), &err);
    CHECK(memcmp(h, h2, sizeof h) == 0);
    CHECK_FAILS(tb_halton(N, 0, 0, true, 7, h2, &err), TB_ERR_INVALID, &err, "dims");
}

static void test_space(void)
{
    tb_error err = {0};
    tb_search_space *s;
    const char *json = "{\"learning_rate\": {\"min\": 1e-4, \"max\": 1e-1, \"scaling\": \"log\"},\n"
                       " \"momentum\": {\"min\": 0.8, \"max\": 1.0},\n"
                       " \"nesterov\": {\"feasible_points\": [true, false]}}";
    CHECK_OK(tb_search_space_parse(json, "test", &s, &err), &err);
    CHECK(tb_search_space_dims(s) == 3 && tb_search_space_list_size(s) == 0);
    tb_hparams hp;
    double lo[3] = {0, 0, 0}, hi[3] = {1 - 1e-17, 0.5, 0.99};
    tb_search_space_map(s, lo, &hp);
    CHECK_NEAR(tb_hparams_get(&hp, "learning_rate", 0), 1e-4, 1e-16);
    CHECK_NEAR(tb_hparams_get(&hp, "momentum", 0), 0.8, 1e-15);
    CHECK(tb_hparams_get(&hp, "nesterov", -1) == 1.0);
    tb_search_space_map(s, hi, &hp);
    CHECK_NEAR(tb_hparams_get(&hp, "learning_rate", 0), 1e-1, 1e-12); /* both log ends */
    CHECK_NEAR(tb_hparams_get(&hp, "momentum", 0), 0.9, 1e-15);
    CHECK(tb_hparams_get(&hp, "nesterov", -1) == 0.0);

    /* 3 studies x 4 trials: 12 distinct points inside the ranges */
    tb_hparams pts[12];
    CHECK_OK(tb_search_space_sample(s, 3, 4, 1, pts, &err), &err);
    bool distinct = true, inside = true;
    for (int i = 0; i < 12; i++) {
        double lr = tb_hparams_get(&pts[i], "learning_rate", 0);
        inside &= lr >= 1e-4 && lr <= 1e-1;
        for (int j = 0; j < i; j++)
            distinct &= lr != tb_hparams_get(&pts[j], "learning_rate", 0);
    }
    CHECK(distinct && inside);
    tb_search_space_destroy(s);

    /* the widest ranges map inside them (max / min and max - min overflow a double) */
    CHECK_OK(tb_search_space_parse("{\"a\": {\"min\": 1e-300, \"max\": 1e300, \"scaling\": "
                                   "\"log\"}, \"b\": {\"min\": -1e308, \"max\": 1e308}}",
                                   "wide", &s, &err), &err);
    double mid[2] = {0.5, 0.75};
    tb_search_space_map(s, mid, &hp);
    CHECK_NEAR(tb_hparams_get(&hp, "a", 0), 1.0, 1e-9);
    CHECK_NEAR(tb_hparams_get(&hp, "b", 0) / 1e308, 0.5, 1e-12);
    tb_search_space_destroy(s);

    /* an explicit list: each study takes distinct points of it */
    CHECK_OK(tb_search_space_parse("[{\"lr\": 1}, {\"lr\": 2}, {\"lr\": 3}]", "list", &s, &err), &err);
    CHECK(tb_search_space_list_size(s) == 3);
    CHECK_OK(tb_search_space_sample(s, 2, 3, 5, pts, &err), &err);
    for (int st = 0; st < 2; st++) {
        double sum = 0;
        for (int t = 0; t < 3; t++) sum += tb_hparams_get(&pts[st * 3 + t], "lr", 0);
        CHECK_NEAR(sum, 6, 0);
    }
    CHECK_FAILS(tb_search_space_sample(s, 1, 4, 5, pts, &err), TB_ERR_INVALID, &err,
                "fewer than the 4 trials");
    tb_search_space_destroy(s);
}

static void test_malformed(void)
{
    tb_error err = {0};
    tb_search_space *s = NULL;
    CHECK_FAILS(tb_search_space_parse("{\"lr\": {\"min\": 1e-3,,}}", "space.json", &s, &err),
                TB_ERR_FORMAT, &err, "space.json: malformed JSON at line 1, column");
    CHECK(s == NULL);
    CHECK_FAILS(tb_search_space_parse("{\"lr\": {\"min\": 1,\n \"max\": 2}", "f", &s, &err),
                TB_ERR_FORMAT, &err, "line 2");
    CHECK_FAILS(tb_search_space_parse("", "f", &s, &err), TB_ERR_FORMAT, &err, "malformed");
    CHECK_FAILS(tb_search_space_parse("{\"lr\": {\"min\": 1, \"max\": 0.1}}", "f", &s, &err),
                TB_ERR_INVALID, &err, "'lr': min 1 is above max 0.1");
    CHECK_FAILS(tb_search_space_parse("{\"lr\": {\"min\": 0, \"max\": 1, \"scaling\": \"log\"}}",
                                      "f", &s, &err), TB_ERR_INVALID, &err, "min > 0");
    CHECK_FAILS(tb_search_space_parse("{\"lr\": {\"min\": 1, \"max\": 2, \"scaling\": \"exp\"}}",
                                      "f", &s, &err), TB_ERR_INVALID, &err, "unknown scaling 'exp'");
    CHECK_FAILS(tb_search_space_parse("{\"b\": {\"feasible_points\": []}}", "f", &s, &err),
                TB_ERR_INVALID, &err, "'b': feasible_points must be a non-empty list");
    CHECK_FAILS(tb_search_space_parse("{\"b\": {\"feasible_points\": [\"x\"]}}", "f", &s, &err),
                TB_ERR_INVALID, &err, "not a number");
    CHECK_FAILS(tb_search_space_parse("{\"b\": {\"min\": 1}}", "f", &s, &err), TB_ERR_INVALID,
                &err, "needs both min and max");
    CHECK_FAILS(tb_search_space_parse("{\"b\": {\"min\": 1, \"max\": 2, \"step\": 1}}", "f", &s,
                                      &err), TB_ERR_INVALID, &err, "unknown key 'step'");
    CHECK_FAILS(tb_search_space_parse("{\"b\": 3}", "f", &s, &err), TB_ERR_INVALID, &err,
                "'b' must be an object");
    CHECK_FAILS(tb_search_space_parse("42", "f", &s, &err), TB_ERR_INVALID, &err,
                "expected an object");
    CHECK_FAILS(tb_search_space_load("/nonexistent/space.json", &s, &err), TB_ERR_IO, &err,
                "/nonexistent/space.json");
}

/* Creates optimizer `name` with the point hp (less the baseline's own warmup_fraction and
 * batch_size, as the built-in submissions do) over two small tensors; false, printing the
 * point, if the optimizer refuses it. */
static bool optimizer_accepts(tb_backend *be, const char *name, const tb_hparams *hp)
{
    tb_params *p = NULL;
    tb_error err = {0};
    int64_t sw[2] = {4, 3}, sb = 4;
    tb_params_create(be, &p, NULL);
    tb_params_add(p, "w", TB_PARAM_WEIGHT, 2, sw, NULL);
    tb_params_add(p, "b", TB_PARAM_BIAS, 1, &sb, NULL);
    tb_params_finalize(p, NULL);
    tb_hparams opt_hp = {0};
    for (int i = 0; i < hp->count; i++)
        if (strcmp(hp->names[i], TB_HP_WARMUP_FRACTION) != 0 &&
            strcmp(hp->names[i], "batch_size") != 0)
            tb_hparams_set(&opt_hp, hp->names[i], hp->values[i], NULL);
    tb_optimizer *opt = NULL;
    bool ok = CHECK_OK(tb_optimizer_create(name, p, &opt_hp, &opt, &err), &err);
    if (!ok)
        for (int i = 0; i < hp->count; i++)
            fprintf(stderr, "  %s: %s = %g\n", name, hp->names[i], hp->values[i]);
    tb_optimizer_destroy(opt);
    tb_params_destroy(p);
    return ok;
}

/* Every built-in algorithm has a default search space (search_spaces/<name>.json: bench and
 * compare --search read it), it parses, and the optimizer accepts the points at both ends of
 * every range (each dimension at 0 and just below 1 with the others in the middle, and every
 * dimension at once at either end) and every feasible point. */
static void test_builtin_spaces(void)
{
    tb_backend *be = tb_test_backend();
    for (int i = 0; i < tb_optimizer_count(); i++) {
        const char *name = tb_optimizer_info_at(i)->name;
        char path[512];
        snprintf(path, sizeof path, "%s/search_spaces/%s.json", TB_SOURCE_DIR, name);
        tb_search_space *s = NULL;
        tb_error err = {0};
        if (!CHECK_OK(tb_search_space_load(path, &s, &err), &err)) continue;
        int dims = tb_search_space_dims(s);
        CHECK(dims > 0 && dims <= TB_HPARAMS_MAX);
        double u[TB_HPARAMS_MAX];
        tb_hparams hp;
        /* 0 and 1 - 2^-40 are the ends; the quarters reach every point of a list of up to 4 */
        const double at[] = {0.0, 0.25, 0.5, 0.75, 1.0 - 0x1p-40};
        for (int d = 0; d < dims; d++)
            for (size_t k = 0; k < sizeof at / sizeof at[0]; k++) {
                for (int j = 0; j < dims; j++) u[j] = j == d ? at[k] : 0.5;
                tb_search_space_map(s, u, &hp);
                CHECK(hp.count == dims);
                optimizer_accepts(be, name, &hp);
            }
        for (int end = 0; end < 2; end++) {
            for (int j = 0; j < dims; j++) u[j] = end ? 1.0 - 0x1p-40 : 0.0;
            tb_search_space_map(s, u, &hp);
            optimizer_accepts(be, name, &hp);
        }
        tb_search_space_destroy(s);
    }
    tb_backend_destroy(be);
}

/* tb_search_space_unmap inverts tb_search_space_map; feasible points map to their bin's
 * middle; dimension descriptions; a missing dimension is refused. */
static void test_unmap(void)
{
    tb_error err = {0};
    tb_search_space *s = NULL;
    CHECK_OK(tb_search_space_parse("{\"lr\": {\"min\": 1e-4, \"max\": 1e-1, \"scaling\": \"log\"},"
                                   " \"wd\": {\"min\": 0.0, \"max\": 0.5},"
                                   " \"bs\": {\"feasible_points\": [32, 64, 128, 256]},"
                                   " \"b1\": {\"feasible_points\": [0.9]}}", "t", &s, &err),
             &err);
    if (!s) return;
    const double u[4] = {0.3, 0.75, 0.6, 0.1};
    tb_hparams hp;
    tb_search_space_map(s, u, &hp);
    double back[4];
    CHECK(tb_search_space_unmap(s, &hp, back));
    CHECK_NEAR(back[0], 0.3, 1e-12);
    CHECK_NEAR(back[1], 0.75, 1e-12);
    CHECK_NEAR(back[2], 2.5 / 4, 1e-15); /* 128: the third of four bins */
    CHECK_NEAR(back[3], 0.5, 1e-15);
    /* outside the range: outside [0, 1] */
    tb_hparams_set(&hp, "lr", 1.0, &err);
    CHECK(tb_search_space_unmap(s, &hp, back) && back[0] > 1);
    tb_search_dim d;
    CHECK(tb_search_space_dim(s, 0, &d) && strcmp(d.name, "lr") == 0 &&
          d.scaling == TB_SCALING_LOG && d.min == 1e-4 && d.max == 1e-1);
    CHECK(tb_search_space_dim(s, 2, &d) && d.scaling == TB_SCALING_DISCRETE &&
          d.n_feasible == 4 && d.min == 32 && d.max == 256);
    CHECK(!tb_search_space_dim(s, 4, &d));
    CHECK(tb_search_space_dim_varies(s, 2) && !tb_search_space_dim_varies(s, 3));
    tb_hparams partial = {0};
    tb_hparams_set(&partial, "lr", 0.01, &err);
    CHECK(!tb_search_space_unmap(s, &partial, back));
    tb_search_space_destroy(s);
}

int main(void)
{
    test_radical_inverse();
    test_coverage();
    test_halton_discrepancy();
    test_space();
    test_malformed();
    test_builtin_spaces();
    test_unmap();
    return tb_test_finish("test_tune");
}
