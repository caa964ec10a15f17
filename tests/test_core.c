/* test_core.c: status messages, tensors and views, shapes and parameter declarations, arenas,
 * Philox streams. */
#include "testutil.h"

#include "backend/cpu/cpu.h"

#include <stdlib.h>
#include <string.h>

#include <omp.h>

static void test_philox_known_answer(void)
{
    /* Known-answer vectors of Random123's Philox4x32-10 (kat_vectors). */
    uint32_t out[4];
    uint32_t key0[2] = {0, 0};
    tb_philox4x32(key0, 0, out);
    CHECK(out[0] == 0x6627e8d5u && out[1] == 0xe169c58du && out[2] == 0xbc57ac4cu &&
          out[3] == 0x9b00dbd8u);
}

static void test_streams_independent_and_reproducible(void)
{
    tb_rng a = tb_rng_make(42, TB_STREAM_INIT), b = tb_rng_make(42, TB_STREAM_INIT);
    tb_rng c = tb_rng_make(42, TB_STREAM_DROPOUT), d = tb_rng_make(43, TB_STREAM_INIT);
    bool same = true, diff_stream = false, diff_seed = false;
    for (int i = 0; i < 100; i++) {
        uint32_t x = tb_rng_u32(&a), y = tb_rng_u32(&b), z = tb_rng_u32(&c), w = tb_rng_u32(&d);
        same &= x == y;
        diff_stream |= x != z;
        diff_seed |= x != w;
    }
    CHECK(same);
    CHECK(diff_stream);
    CHECK(diff_seed);
    tb_stream s;
    tb_error err = {0};
    CHECK_OK(tb_stream_parse("data_order", &s, &err), &err);
    CHECK(s == TB_STREAM_DATA_ORDER);
    CHECK_FAILS(tb_stream_parse("weather", &s, &err), TB_ERR_INVALID, &err, "weather");
}

static void test_fill_is_thread_count_independent(void)
{
    enum { N = 100003 };
    float *one = malloc(N * sizeof(float)), *two = malloc(N * sizeof(float));
    float *seq = malloc(N * sizeof(float));
    tb_rng r1 = tb_rng_make(7, TB_STREAM_INIT), r2 = r1;
    /* host fills run on the caller's OpenMP thread count (no backend sets it) */
    const int caller = omp_get_max_threads();
    omp_set_num_threads(1);
    tb_rng_fill_normal(&r1, one, N, 0.0f, 1.0f);
    omp_set_num_threads(2);
    tb_rng_fill_normal(&r2, two, N, 0.0f, 1.0f);
    omp_set_num_threads(caller);
    CHECK(memcmp(one, two, N * sizeof(float)) == 0);
    CHECK(r1.counter == r2.counter);
    /* filling in two halves continues the same sequence as one fill of the whole */
    tb_rng r3 = tb_rng_make(7, TB_STREAM_AUGMENT), r4 = r3;
    tb_rng_fill_uniform(&r3, seq, N, 0.0f, 1.0f);
    tb_rng_fill_uniform(&r4, one, 40000, 0.0f, 1.0f);
    tb_rng_fill_uniform(&r4, one + 40000, N - 40000, 0.0f, 1.0f);
    CHECK(memcmp(one, seq, N * sizeof(float)) == 0);
    double mean = 0, var = 0;
    for (int i = 0; i < N; i++) mean += two[i];
    mean /= N;
    for (int i = 0; i < N; i++) var += (two[i] - mean) * (two[i] - mean);
    var /= N;
    CHECK_NEAR(mean, 0.0, 0.02);
    CHECK_NEAR(var, 1.0, 0.03);
    free(one);
    free(two);
    free(seq);
}

static void test_below_and_shuffle(void)
{
    tb_rng r = tb_rng_make(1, TB_STREAM_DATA_ORDER);
    int counts[3] = {0};
    for (int i = 0; i < 30000; i++) counts[tb_rng_below(&r, 3)]++;
    for (int i = 0; i < 3; i++) CHECK(abs(counts[i] - 10000) < 500);
    int64_t idx[1000];
    for (int i = 0; i < 1000; i++) idx[i] = i;
    tb_rng_shuffle_i64(&r, idx, 1000);
    int seen[1000] = {0}, moved = 0;
    for (int i = 0; i < 1000; i++) {
        seen[idx[i]]++;
        moved += idx[i] != i;
    }
    bool perm = true;
    for (int i = 0; i < 1000; i++) perm &= seen[i] == 1;
    CHECK(perm);
    CHECK(moved > 900);
}

static void test_tensor_views(void)
{
    float data[24];
    for (int i = 0; i < 24; i++) data[i] = (float)i;
    int64_t shape[3] = {2, 3, 4};
    tb_tensor t;
    CHECK_OK(tb_tensor_wrap(NULL, data, TB_F32, 3, shape, &t, NULL), NULL);
    CHECK(tb_tensor_numel(&t) == 24);
    CHECK(tb_tensor_is_contiguous(&t));
    tb_tensor v, tr, nr;
    tb_error err = {0};
    int64_t s2[2] = {-1, 8};
    CHECK_OK(tb_tensor_reshape(&t, 2, s2, &v, &err), &err);
    CHECK(v.shape[0] == 3 && v.shape[1] == 8);
    int64_t bad[2] = {5, 5};
    CHECK_FAILS(tb_tensor_reshape(&t, 2, bad, &v, &err), TB_ERR_SHAPE, &err, "24 elements");
    CHECK_OK(tb_tensor_transpose(&t, 1, 2, &tr, &err), &err);
    CHECK(tr.shape[1] == 4 && tr.shape[2] == 3 && !tb_tensor_is_contiguous(&tr));
    /* element [1][2][0] of the transpose is element [1][0][2] of t */
    float *p = tb_tensor_f32(&tr);
    CHECK(p[1 * tr.stride[0] + 2 * tr.stride[1] + 0 * tr.stride[2]] == 14.0f);
    CHECK_FAILS(tb_tensor_reshape(&tr, 2, s2, &v, &err), TB_ERR_SHAPE, &err, "contiguous");
    CHECK_OK(tb_tensor_narrow(&t, 2, 1, 2, &nr, &err), &err);
    CHECK(tb_tensor_f32(&nr)[0] == 1.0f && nr.shape[2] == 2);
    CHECK_FAILS(tb_tensor_narrow(&t, 2, 3, 2, &nr, &err), TB_ERR_SHAPE, &err, "outside");
    char buf[64];
    CHECK(strcmp(tb_shape_str(&t, buf, sizeof buf), "[2, 3, 4]") == 0);
}

/* Shapes entering the library: negative dimensions, too many dimensions and sizes whose
 * element or byte count overflows int64 are refused with TB_ERR_INVALID naming the shape
 * (they were accepted with a wrapped-around size, or clamped to 6 dimensions). */
static void test_shape_checks(void)
{
    tb_backend *be = tb_test_backend();
    tb_error err = {0};
    tb_tensor t = {0}, v;
    const int64_t huge = (int64_t)1 << 62;
    CHECK_FAILS(tb_tensor_alloc(be, TB_F32, 2, (int64_t[]){huge, 64}, &t, &err), TB_ERR_INVALID,
                &err, "shape [4611686018427387904, 64] is too large");
    CHECK_FAILS(tb_tensor_alloc(be, TB_F32, 3, (int64_t[]){(int64_t)1 << 31, (int64_t)1 << 31, 4},
                                &t, &err),
                TB_ERR_INVALID, &err, "too large");
    /* the byte count overflows although the element count (2^61) does not */
    CHECK_FAILS(tb_tensor_alloc(be, TB_F32, 1, (int64_t[]){(int64_t)1 << 61}, &t, &err),
                TB_ERR_INVALID, &err, "too large");
    /* a zero dimension does not make the others' product harmless: strides use it */
    CHECK_FAILS(tb_tensor_alloc(be, TB_F32, 3, (int64_t[]){0, huge, huge}, &t, &err),
                TB_ERR_INVALID, &err, "too large");
    CHECK_FAILS(tb_tensor_alloc(be, TB_F32, 2, (int64_t[]){3, -1}, &t, &err), TB_ERR_INVALID,
                &err, "shape [3, -1] has a negative dimension");
    CHECK_FAILS(tb_tensor_wrap(be, NULL, TB_F32, 7, (int64_t[]){1, 2, 3, 4, 5, 6, 7}, &t, &err),
                TB_ERR_INVALID, &err, "7 dimensions (at most TB_MAX_DIMS = 6)");
    CHECK_OK(tb_tensor_alloc(be, TB_F32, 2, (int64_t[]){0, 5}, &t, &err), &err);
    CHECK(tb_tensor_numel(&t) == 0);
    /* reshape of an empty tensor to a shape whose element count overflows */
    CHECK_FAILS(tb_tensor_reshape(&t, 3, (int64_t[]){(int64_t)1 << 32, (int64_t)1 << 32, 4}, &v,
                                  &err),
                TB_ERR_INVALID, &err, "too large");
    CHECK_FAILS(tb_tensor_reshape(&t, 2, (int64_t[]){0, (int64_t)1 << 62}, &v, &err),
                TB_ERR_INVALID, &err, "too large");
    CHECK_FAILS(tb_tensor_reshape(&t, 2, (int64_t[]){-2, 0}, &v, &err), TB_ERR_INVALID, &err,
                "negative dimension");
    CHECK_OK(tb_tensor_reshape(&t, 3, (int64_t[]){5, 0, 7}, &v, &err), &err);
    tb_tensor_free(&t);
    /* narrow: start + len overflows int64 */
    CHECK_OK(tb_tensor_alloc(be, TB_F32, 1, (int64_t[]){4}, &t, &err), &err);
    CHECK_FAILS(tb_tensor_narrow(&t, 0, INT64_MAX, 2, &v, &err), TB_ERR_SHAPE, &err, "outside");
    CHECK_FAILS(tb_tensor_narrow(&t, 0, 2, INT64_MAX, &v, &err), TB_ERR_SHAPE, &err, "outside");
    CHECK_OK(tb_tensor_narrow(&t, 0, 4, 0, &v, &err), &err);
    tb_tensor_free(&t);
    /* tape variables */
    tb_tape *tape;
    CHECK_OK(tb_tape_create(be, &tape, &err), &err);
    CHECK(tb_tape_new_var(tape, TB_F32, 1, (int64_t[]){-5}, true) == NULL);
    CHECK(tb_tape_status(tape) == TB_ERR_INVALID &&
          strstr(tb_tape_error(tape)->message, "shape [-5] has a negative dimension"));
    tb_tape_reset(tape);
    CHECK(tb_tape_new_var(tape, TB_F32, 2, (int64_t[]){huge, 4}, true) == NULL);
    CHECK(tb_tape_status(tape) == TB_ERR_INVALID &&
          strstr(tb_tape_error(tape)->message, "too large"));
    tb_tape_destroy(tape);
    /* parameters */
    tb_params *params;
    CHECK_OK(tb_params_create(be, &params, &err), &err);
    CHECK(tb_params_add(params, "neg", TB_PARAM_WEIGHT, 1, (int64_t[]){-5}, &err) == NULL);
    CHECK(err.status == TB_ERR_INVALID && strstr(err.message, "parameter 'neg'") &&
          strstr(err.message, "negative dimension"));
    CHECK(tb_params_add(params, "big", TB_PARAM_WEIGHT, 2, (int64_t[]){huge, 4}, &err) == NULL);
    CHECK(err.status == TB_ERR_INVALID && strstr(err.message, "too large"));
    /* each fits, their sum does not */
    CHECK(tb_params_add(params, "a", TB_PARAM_WEIGHT, 1, (int64_t[]){(int64_t)1 << 60}, &err));
    CHECK(tb_params_add(params, "b", TB_PARAM_WEIGHT, 1, (int64_t[]){(int64_t)1 << 60}, &err) ==
          NULL);
    CHECK(err.status == TB_ERR_INVALID && strstr(err.message, "total size"));
    tb_params_destroy(params);
    tb_backend_destroy(be);
}

/* Parameter names that do not fit are refused naming the limit (they were truncated to 63
 * characters, so two long names differing at the end collided). */
static void test_param_names(void)
{
    tb_backend *be = tb_test_backend();
    tb_error err = {0};
    tb_params *params;
    CHECK_OK(tb_params_create(be, &params, &err), &err);
    char fits[TB_PARAM_NAME_MAX], n1[80], n2[80];
    memset(fits, 'f', sizeof fits - 1);
    fits[sizeof fits - 1] = '\0';
    memset(n1, 'a', sizeof n1 - 1);
    n1[sizeof n1 - 1] = '\0';
    strcpy(n2, n1);
    n2[78] = 'b';
    CHECK(tb_params_add(params, fits, TB_PARAM_WEIGHT, 1, (int64_t[]){2}, &err) != NULL);
    CHECK(strcmp(tb_params_get(params, 0)->name, fits) == 0);
    CHECK(tb_params_add(params, n1, TB_PARAM_WEIGHT, 1, (int64_t[]){2}, &err) == NULL);
    CHECK(err.status == TB_ERR_INVALID && strstr(err.message, "79 characters") &&
          strstr(err.message, "TB_PARAM_NAME_MAX"));
    CHECK(tb_params_add(params, n2, TB_PARAM_WEIGHT, 1, (int64_t[]){2}, &err) == NULL);
    CHECK(tb_params_count(params) == 1);
    /* a layer whose "<name>.weight" does not fit */
    tb_linear_layer layer;
    n1[60] = '\0';
    CHECK_FAILS(tb_linear_layer_init(&layer, params, n1, 2, 3, true, &err), TB_ERR_INVALID, &err,
                "67 characters");
    tb_params_destroy(params);
    tb_backend_destroy(be);
}

/* NULL arguments to tensor, arena, backend and stream calls fail with TB_ERR_INVALID naming
 * the argument (most of them segfaulted). */
static void test_null_arguments(void)
{
    tb_backend *be = tb_test_backend();
    tb_error err = {0};
    tb_tensor t, v;
    const int64_t s4[1] = {4};
    CHECK_FAILS(tb_tensor_alloc(NULL, TB_F32, 1, s4, &t, &err), TB_ERR_INVALID, &err,
                "backend is NULL");
    CHECK_FAILS(tb_tensor_alloc(be, TB_F32, 1, s4, NULL, &err), TB_ERR_INVALID, &err,
                "out is NULL");
    CHECK_FAILS(tb_tensor_alloc(be, TB_F32, 1, NULL, &t, &err), TB_ERR_INVALID, &err,
                "shape is NULL");
    CHECK_FAILS(tb_tensor_wrap(NULL, NULL, TB_F32, 1, s4, NULL, &err), TB_ERR_INVALID, &err,
                "out is NULL");
    CHECK_OK(tb_tensor_wrap(NULL, NULL, TB_F32, 0, NULL, &t, &err), &err); /* a scalar */
    CHECK_FAILS(tb_tensor_download(NULL, NULL, &err), TB_ERR_INVALID, &err, "tensor is NULL");
    CHECK_FAILS(tb_tensor_upload(NULL, s4, &err), TB_ERR_INVALID, &err, "tensor is NULL");
    CHECK_OK(tb_tensor_alloc(be, TB_F32, 1, s4, &t, &err), &err);
    CHECK_FAILS(tb_tensor_download(&t, NULL, &err), TB_ERR_INVALID, &err, "host is NULL");
    CHECK_FAILS(tb_tensor_upload(&t, NULL, &err), TB_ERR_INVALID, &err, "host is NULL");
    CHECK_FAILS(tb_tensor_reshape(&t, 1, NULL, &v, &err), TB_ERR_INVALID, &err,
                "shape is NULL");
    CHECK_FAILS(tb_tensor_reshape(NULL, 1, s4, &v, &err), TB_ERR_INVALID, &err, "is NULL");
    CHECK_FAILS(tb_tensor_transpose(&t, 0, 0, NULL, &err), TB_ERR_INVALID, &err, "out is NULL");
    CHECK_FAILS(tb_tensor_narrow(NULL, 0, 0, 1, &v, &err), TB_ERR_INVALID, &err, "is NULL");
    tb_tensor bare;
    CHECK_OK(tb_tensor_wrap(be, NULL, TB_F32, 1, s4, &bare, &err), &err);
    float host[4] = {0};
    CHECK_FAILS(tb_tensor_download(&bare, host, &err), TB_ERR_INVALID, &err, "no memory");
    tb_tensor_free(&t);
    tb_tensor_free(NULL);
    CHECK_FAILS(tb_arena_create(NULL, 1 << 16, NULL, &err), TB_ERR_INVALID, &err, "out is NULL");
    CHECK(tb_arena_alloc(NULL, 64) == NULL);
    tb_arena_reset(NULL);
    CHECK(tb_arena_used(NULL) == 0 && tb_arena_peak(NULL) == 0);
    tb_device dev;
    tb_stream stream;
    CHECK_FAILS(tb_device_parse(NULL, &dev, &err), TB_ERR_INVALID, &err, "name is NULL");
    CHECK_FAILS(tb_precision_parse("fp32", NULL, &err), TB_ERR_INVALID, &err, "out is NULL");
    CHECK_FAILS(tb_stream_parse(NULL, &stream, &err), TB_ERR_INVALID, &err, "name is NULL");
    CHECK_FAILS(tb_backend_create(NULL, NULL, &err), TB_ERR_INVALID, &err, "out is NULL");
    CHECK_FAILS(tb_backend_check(NULL, &err), TB_ERR_INVALID, &err, "backend is NULL");
    CHECK_FAILS(tb_backend_capture_begin(NULL, &err), TB_ERR_INVALID, &err, "backend is NULL");
    CHECK_FAILS(tb_backend_step_upload(NULL, &err), TB_ERR_INVALID, &err, "backend is NULL");
    tb_backend *dflt = NULL; /* config NULL: the defaults */
    CHECK_OK(tb_backend_create(NULL, &dflt, &err), &err);
    tb_backend_destroy(dflt);
    tb_backend_destroy(NULL);
    tb_backend_destroy(be);
}

static void test_arena_reuses_memory(void)
{
    tb_arena *a = NULL;
    tb_error err = {0};
    CHECK_OK(tb_arena_create(NULL, 1 << 16, &a, &err), &err);
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < 10; i++) {
            char *p = tb_arena_alloc(a, 50000);
            CHECK(p != NULL && ((uintptr_t)p % 64) == 0);
            memset(p, round, 50000);
        }
        tb_arena_reset(a);
    }
    /* round 1 grew (several blocks), the merge made one block; rounds 2 and 3 allocated
     * nothing more */
    uint64_t after = tb_arena_block_allocations(a);
    for (int i = 0; i < 10; i++) tb_arena_alloc(a, 50000);
    tb_arena_reset(a);
    CHECK(tb_arena_block_allocations(a) == after);
    CHECK(tb_arena_peak(a) >= 500000);
    /* sizes whose rounding up to 64 bytes wraps around are out of memory */
    CHECK(tb_arena_alloc(a, SIZE_MAX - 10) == NULL);
    CHECK(tb_arena_alloc(a, SIZE_MAX) == NULL);
    tb_arena_destroy(a);
}

/* A round may take more than 64 blocks (the arena had a fixed table of 64 and failed with
 * memory free); the merge still leaves later rounds allocating nothing. */
static void test_arena_many_blocks(void)
{
    tb_arena *a = NULL;
    tb_error err = {0};
    CHECK_OK(tb_arena_create(NULL, 1 << 16, &a, &err), &err);
    for (int round = 0; round < 2; round++) {
        int ok = 0;
        for (int i = 0; i < 200; i++) { /* a bit over half a block: one chunk per block */
            char *p = tb_arena_alloc(a, 40000);
            if (p) memset(p, i, 40000);
            ok += p != NULL;
        }
        CHECK(ok == 200);
        tb_arena_reset(a);
    }
    uint64_t after = tb_arena_block_allocations(a);
    for (int i = 0; i < 200; i++) tb_arena_alloc(a, 40000);
    tb_arena_reset(a);
    CHECK(tb_arena_block_allocations(a) == after);
    /* a request far beyond the block size gets a block of its own */
    CHECK(tb_arena_alloc(a, (size_t)100 << 20) != NULL);
    tb_arena_destroy(a);
}

static void test_fast_exp(void)
{
    double worst = 0;
    for (float x = -87.0f; x <= 88.0f; x += 0.0137f) {
        double want = exp((double)x), got = tb_cpu_expf(x);
        double rel = fabs(got - want) / want;
        if (rel > worst) worst = rel;
    }
    CHECK(worst < 3e-7);
    CHECK(tb_cpu_expf(-1000.0f) > 0.0f && tb_cpu_expf(-1000.0f) < 1e-37f);
    CHECK(isfinite(tb_cpu_expf(1000.0f)));
    CHECK(tb_cpu_expf(0.0f) == 1.0f);
    CHECK(isnan(tb_cpu_expf(NAN)));
}

static void test_status_messages(void)
{
    tb_error err = {0};
    CHECK(tb_fail(&err, TB_ERR_IO, "cannot open %s", "x.gz") == TB_ERR_IO);
    tb_error_prefix(&err, "reading %s", "train");
    CHECK(strcmp(err.message, "reading train: cannot open x.gz") == 0);
    CHECK(strcmp(tb_status_name(TB_ERR_MISSING), "missing") == 0);
    CHECK(tb_fail(NULL, TB_ERR_FORMAT, "no crash without an error object") == TB_ERR_FORMAT);
}

int main(void)
{
    test_philox_known_answer();
    test_streams_independent_and_reproducible();
    test_fill_is_thread_count_independent();
    test_below_and_shuffle();
    test_tensor_views();
    test_shape_checks();
    test_param_names();
    test_null_arguments();
    test_arena_reuses_memory();
    test_arena_many_blocks();
    test_status_messages();
    test_fast_exp();
    return tb_test_finish("test_core");
}
