/* test_determinism.c: results that must not depend on the CPU backend's thread count. */
#include "testutil.h"

#include "trainbench/optim.h"

#include <stdlib.h>
#include <string.h>

#include <omp.h>

/* OpenBLAS's process-wide thread count (declared in its cblas.h, repeated for other headers). */
extern void openblas_set_num_threads(int num_threads);
extern int openblas_get_num_threads(void);

static tb_backend *cpu_backend(int threads)
{
    tb_backend_config cfg = {.device = TB_DEVICE_CPU, .threads = threads};
    tb_backend *be = NULL;
    tb_error err = {0};
    if (!CHECK_OK(tb_backend_create(&cfg, &be, &err), &err)) exit(1);
    return be;
}

/* ---- gradient norms ------------------------------------------------------------------------- */

/* The norm and the clipped gradients of a parameter set of n values on a backend of `threads`
 * threads; the clipped gradients are returned (malloc'd, *numel of them). */
static float *norms_at(int threads, int64_t n, double *norm, double *clip_norm, int64_t *numel)
{
    tb_backend *be = cpu_backend(threads);
    tb_error err = {0};
    tb_params *p = NULL;
    CHECK_OK(tb_params_create(be, &p, &err), &err);
    tb_params_add(p, "w", TB_PARAM_WEIGHT, 1, (int64_t[]){n}, &err);
    tb_params_add(p, "b", TB_PARAM_BIAS, 1, (int64_t[]){37}, &err);
    CHECK_OK(tb_params_finalize(p, &err), &err);
    tb_rng rng = tb_rng_make(3, TB_STREAM_INIT);
    tb_rng_fill_uniform(&rng, tb_params_grads(p), tb_params_numel(p), -1.0f, 1.0f);
    *norm = tb_params_grad_norm(p);
    *clip_norm = tb_params_clip_grad_norm(p, 1.0);
    *numel = tb_params_numel(p);
    float *g = malloc((size_t)*numel * sizeof *g);
    memcpy(g, tb_params_grads(p), (size_t)*numel * sizeof *g);
    tb_params_destroy(p);
    tb_backend_destroy(be);
    return g;
}

/* tb_params_grad_norm and tb_params_clip_grad_norm give the same doubles (and the same
 * clipped gradients) at 1, 2 and 3 threads: below the parallel threshold, above it, and
 * above TB_CPU_PARTS parts of the minimum length (longer parts). */
static void test_grad_norm(void)
{
    static const int64_t sizes[] = {1000, 100003, 5000000};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        double n1, c1;
        int64_t numel;
        float *g1 = norms_at(1, sizes[i], &n1, &c1, &numel);
        for (int threads = 2; threads <= 3; threads++) {
            double n, c;
            float *g = norms_at(threads, sizes[i], &n, &c, &numel);
            if (!CHECK(n == n1 && c == c1))
                printf("  %lld values: norm %.17g at 1 thread, %.17g at %d\n",
                       (long long)sizes[i], n1, n, threads);
            CHECK(memcmp(g, g1, (size_t)numel * sizeof *g) == 0);
            free(g);
        }
        CHECK(n1 > 0.0 && c1 == n1);
        free(g1);
    }
}

/* ---- a backend's thread count is its own ----------------------------------------------------- */

/* A convolution's weight gradient and the norm of 100003 gradient values on be (both above
 * their parallel thresholds), as bytes in out[0, 432 + 2). */
static void compute_on(tb_backend *be, float *out)
{
    tb_error err = {0};
    tb_rng rng = tb_rng_make(4, TB_STREAM_INIT);
    tb_var *x = tb_test_var(be, 4, (int64_t[]){8, 3, 16, 16}, &rng, -1, 1, false);
    tb_var *w = tb_test_var(be, 4, (int64_t[]){16, 3, 3, 3}, &rng, -1, 1, true);
    tb_tape *t = tb_test_tape(be);
    tb_var *loss = tb_test_reduce(t, tb_op_conv2d(t, x, w, NULL, 1, 1));
    CHECK(loss && tb_tape_backward(t, loss) == TB_OK);
    memcpy(out, w->grad.data, 432 * sizeof *out);
    tb_tape_destroy(t);
    tb_test_var_free(x);
    tb_test_var_free(w);
    tb_params *p = NULL;
    CHECK_OK(tb_params_create(be, &p, &err), &err);
    tb_params_add(p, "w", TB_PARAM_WEIGHT, 1, (int64_t[]){100003}, &err);
    CHECK_OK(tb_params_finalize(p, &err), &err);
    tb_rng_fill_uniform(&rng, tb_params_grads(p), tb_params_numel(p), -1.0f, 1.0f);
    double norm = tb_params_grad_norm(p);
    memcpy(out + 432, &norm, sizeof norm);
    tb_params_destroy(p);
}

/* Creating backends leaves the caller's OpenMP thread count alone (OpenBLAS's count, which its
 * OpenMP build sets together with the caller's, included), sets OpenBLAS's to 1, and does not
 * change how an existing backend computes. */
static void test_backends_own_their_threads(void)
{
    const int caller = omp_get_max_threads();
    /* a caller that set OpenBLAS's count (which OpenMP builds of OpenBLAS may pass on to the
     * caller's OpenMP count), then its own OpenMP count */
    openblas_set_num_threads(3);
    omp_set_num_threads(1);
    tb_backend *one = cpu_backend(1);
    CHECK(omp_get_max_threads() == 1);
    CHECK(openblas_get_num_threads() == 1);
    float before[434], other[434], after[434];
    compute_on(one, before);
    tb_backend *two = cpu_backend(2);
    CHECK(omp_get_max_threads() == 1);
    CHECK(tb_backend_threads(one) == 1 && tb_backend_threads(two) == 2);
    compute_on(two, other);
    compute_on(one, after);
    CHECK(memcmp(before, after, sizeof before) == 0);
    CHECK(memcmp(before, other, sizeof before) == 0);
    omp_set_num_threads(3);
    tb_backend *zero = cpu_backend(0); /* all cores */
    CHECK(omp_get_max_threads() == 3);
    compute_on(zero, other);
    CHECK(memcmp(before, other, sizeof before) == 0);
    tb_backend_destroy(zero);
    tb_backend_destroy(two);
    tb_backend_destroy(one);
    omp_set_num_threads(caller);
}

int main(void)
{
    test_grad_norm();
    test_backends_own_their_threads();
    return tb_test_finish("test_determinism");
}
