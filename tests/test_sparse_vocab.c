/* test_sparse_vocab.c: the large-vocabulary sparse-target variants (wordnet_sparse_*_54k,
 * docs/SPARSE_TARGETS.md) on WordNet's real glosses: the vocabulary is every word of the glosses
 * (D past 50,000, against about 27.7k by default, read from the embedding's size), and the
 * exact layer trains a few steps on a batch there with a finite loss that decreases. */
#include "testutil.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* embedding V x 64, hidden 192 x 256 + 256, projection 256 x 128 + 128 (wordnet_sparse_exact.c) */
static int64_t vocabulary(tb_workload *wl)
{
    int64_t rest = 192 * 256 + 256 + 256 * 128 + 128;
    return (tb_params_trainable(tb_workload_params(wl)) - rest) / 64;
}

static void test_large_vocabulary(tb_backend *be, const char *cache)
{
    tb_error err = {0};
    tb_workload_config cfg = {.cache_dir = cache};
    tb_workload *wl = NULL, *small = NULL;
    if (!CHECK_OK(tb_workload_create("wordnet_sparse_sq_exact_54k", be, &cfg, &wl, &err), &err))
        return;
    if (CHECK_OK(tb_workload_create("wordnet_sparse_sq_exact", be, &cfg, &small, &err), &err)) {
        int64_t big = vocabulary(wl), dflt = vocabulary(small);
        printf("vocabulary: %lld words (default %lld)\n", (long long)big, (long long)dflt);
        CHECK(big > 50000 && dflt > 20000 && dflt < 30000);
        int64_t rest = tb_params_trainable(tb_workload_params(wl)) - 64 * big;
        CHECK(rest == tb_params_trainable(tb_workload_params(small)) - 64 * dflt);
        tb_workload_destroy(small);
    }
    tb_rng init = tb_rng_make(1, TB_STREAM_INIT);
    CHECK_OK(tb_workload_init(wl, &init, &err), &err);
    tb_optimizer *opt = NULL;
    tb_hparams hp = {0};
    tb_hparams_set(&hp, "learning_rate", 1e-3, &err);
    CHECK_OK(tb_optimizer_create("adamw", tb_workload_params(wl), &hp, &opt, &err), &err);
    tb_tape *tape = NULL;
    CHECK_OK(tb_tape_create(be, &tape, &err), &err);
    int64_t rows[16];
    for (int i = 0; i < 16; i++) rows[i] = i * 11;
    float first = NAN, last = NAN;
    for (int step = 0; step < 4 && tape && opt; step++) {
        tb_tape_reset(tape);
        tb_params_zero_grad(tb_workload_params(wl));
        tb_var *loss = tb_workload_loss(wl, tape, rows, 16, NULL);
        if (!CHECK(loss && tb_tape_backward(tape, loss) == TB_OK)) {
            printf("%s\n", tb_tape_error(tape)->message);
            break;
        }
        tb_tensor_download(&loss->value, &last, NULL);
        if (step == 0) first = last;
        CHECK_OK(tb_optimizer_step(opt, 1.0, &err), &err);
    }
    printf("loss %.6f -> %.6f\n", first, last);
    CHECK(isfinite(first) && isfinite(last) && last < first);
    tb_tape_destroy(tape);
    tb_optimizer_destroy(opt);
    tb_workload_destroy(wl);
}

int main(void)
{
    tb_backend *be = tb_test_backend();
    char cache[] = "/tmp/tb_test_sparse_vocab_XXXXXX";
    if (!mkdtemp(cache)) return 1;
    test_large_vocabulary(be, cache);
    const char *files[] = {"wordnet-glosses.tbcache", "wordnet-glosses-all.tbcache"};
    for (int i = 0; i < 2; i++) {
        char path[256];
        snprintf(path, sizeof path, "%s/%s", cache, files[i]);
        unlink(path);
    }
    rmdir(cache);
    tb_backend_destroy(be);
    return tb_test_finish("test_sparse_vocab");
}
