/* test_determinism.c: results that must not depend on the CPU backend's thread count. */
#include "testutil.h"

#include "trainbench/optim.h"

#include <stdlib.h>
#include <string.h>

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

int main(void)
{
    test_grad_norm();
    return tb_test_finish("test_determinism");
}
