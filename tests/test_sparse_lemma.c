/* test_sparse_lemma.c: the lemma variants (wordnet_sparse_*_lemma, docs/SPARSE_TARGETS.md) on
 * WordNet's real data files: the lemma vocabulary is built (D in the 10^5 range, the lemmas of
 * known synsets at their ids, lower-cased), a synset's input is the start of its gloss in the
 * glosses' own word ids, naive and exact give the same losses for a few steps at the full D
 * (a batch of 4), and a layer of that D is refused under a memory limit below its size. */
#include "testutil.h"

#include "data/source.h"
#include "trainbench/sparse_out.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define WORDS 8 /* wordnet_sparse_exact.c's WN_LEMMA_WORDS */

static void test_vocabulary(const char *cache)
{
    tb_error err = {0};
    tb_example_source src, words;
    if (!CHECK_OK(tb_wordnet_lemma_source_load(NULL, cache, "t", WORDS, &src, &err), &err))
        return;
    int k = src.layout.y_shape[0];
    printf("lemmas: D = %d, %lld synsets (%lld official test), K at most %d\n", src.classes,
           (long long)src.n, (long long)(src.n - src.n_official_train), k);
    CHECK(src.classes > 140000 && src.classes < 160000);
    CHECK(src.n > 100000 && src.n_official_train == src.n - src.n / 50);
    CHECK(src.layout.y_ndim == 1 && k > 1 && k < 256 && src.layout.x_shape[0] == WORDS);
    CHECK(src.input_vocab > 20000 && src.input_vocab < 30000);
    int32_t x[WORDS], y[256];
    /* synset 0 of data.noun: "entity"; synset 2: "abstraction", "abstract_entity" */
    src.read(src.data, 0, x, y);
    CHECK(y[1] == -1 && y[0] == tb_wordnet_lemma_id(&src, "entity"));
    const char *name = tb_wordnet_lemma_name(&src, y[0]);
    CHECK(name && strcmp(name, "entity") == 0);
    int32_t x2[WORDS];
    src.read(src.data, 2, x2, y);
    CHECK(y[0] == tb_wordnet_lemma_id(&src, "abstraction") &&
          y[1] == tb_wordnet_lemma_id(&src, "abstract_entity") && y[2] == -1 && y[0] >= 0);
    /* lower-cased: "Canis_familiaris" is the lemma canis_familiaris */
    CHECK(tb_wordnet_lemma_id(&src, "canis_familiaris") >= 0);
    CHECK(tb_wordnet_lemma_id(&src, "Canis_familiaris") == -1);
    CHECK(tb_wordnet_lemma_name(&src, src.classes) == NULL);
    /* the input: gloss 0's first words, as the next-word source has them (its targets) */
    if (CHECK_OK(tb_wordnet_source_load(NULL, cache, "t", 3, &words, &err), &err)) {
        bool same = true;
        for (int j = 0; j < WORDS; j++) {
            int32_t wx[3], wy;
            words.read(words.data, j, wx, &wy);
            same = same && wy == x[j];
        }
        CHECK(same && x[0] > 1); /* "that", a known word */
        CHECK(tb_wordnet_lemma_name(&words, 0) == NULL);
        tb_example_source_free(&words);
    }
    tb_example_source_free(&src);
}

/* Naive and exact from the same seeds: the same losses at every step (float32 rounding). */
static void test_naive_exact(tb_backend *be, const char *cache, const char *sq_or_sph)
{
    tb_error err = {0};
    tb_workload_config cfg = {.cache_dir = cache};
    tb_workload *wl[2] = {NULL, NULL};
    tb_optimizer *opt[2] = {NULL, NULL};
    tb_tape *tape = NULL;
    float loss[2][3] = {{NAN, NAN, NAN}, {NAN, NAN, NAN}};
    CHECK_OK(tb_tape_create(be, &tape, &err), &err);
    for (int f = 0; f < 2 && tape; f++) {
        char id[64];
        snprintf(id, sizeof id, "wordnet_sparse_%s_%s_lemma", sq_or_sph, f ? "exact" : "naive");
        if (!CHECK_OK(tb_workload_create(id, be, &cfg, &wl[f], &err), &err)) break;
        tb_rng init = tb_rng_make(5, TB_STREAM_INIT);
        CHECK_OK(tb_workload_init(wl[f], &init, &err), &err);
        tb_hparams hp = {0};
        tb_hparams_set(&hp, "learning_rate", 0.01, &err);
        if (!CHECK_OK(tb_optimizer_create("sgd", tb_workload_params(wl[f]), &hp, &opt[f], &err),
                      &err))
            break;
        int64_t rows[4] = {0, 2, 1000, 54321};
        for (int step = 0; step < 3; step++) {
            tb_tape_reset(tape);
            tb_params_zero_grad(tb_workload_params(wl[f]));
            tb_var *l = tb_workload_loss(wl[f], tape, rows, 4, NULL);
            if (!CHECK(l && tb_tape_backward(tape, l) == TB_OK)) {
                printf("%s: %s\n", id, tb_tape_error(tape)->message);
                break;
            }
            tb_tensor_download(&l->value, &loss[f][step], NULL);
            CHECK_OK(tb_optimizer_step(opt[f], 1.0, &err), &err);
        }
    }
    printf("%s: naive %.6f %.6f %.6f, exact %.6f %.6f %.6f\n", sq_or_sph, loss[0][0],
           loss[0][1], loss[0][2], loss[1][0], loss[1][1], loss[1][2]);
    for (int step = 0; step < 3; step++)
        CHECK(isfinite(loss[0][step]) &&
              fabs(loss[0][step] - loss[1][step]) <= 1e-4 * (1.0 + fabs(loss[0][step])));
    CHECK(loss[0][2] < loss[0][0]); /* it trains */
    for (int f = 0; f < 2; f++) {
        tb_optimizer_destroy(opt[f]);
        tb_workload_destroy(wl[f]);
    }
    tb_tape_destroy(tape);
}

/* The layers at the lemma variants' size: what each needs, and a limit below it refused. */
static void test_memory(void)
{
    tb_error err = {0};
    for (int f = 0; f < 2; f++) {
        tb_sparse_out_config c = tb_sparse_out_defaults(147306, 128, 1024, 28, TB_SPARSE_SQUARED,
                                                        f ? TB_SPARSE_EXACT : TB_SPARSE_NAIVE);
        int64_t bytes = 0;
        CHECK_OK(tb_sparse_out_bytes(&c, &bytes, &err), &err);
        printf("%s layer at D = 147306, d = 128, batch 1024, K 28: %lld bytes (%.0f MiB)\n",
               f ? "exact" : "naive", (long long)bytes, bytes / 1048576.0);
        CHECK(bytes >= 147306LL * 128 * 4); /* W, or V */
        c.memory_limit = bytes - 1;
        tb_sparse_out *l = NULL;
        char want[64];
        snprintf(want, sizeof want, "needs %lld bytes", (long long)bytes);
        CHECK_FAILS(tb_sparse_out_create(&c, &l, &err), TB_ERR_NOMEM, &err, want);
        CHECK(l == NULL);
    }
}

int main(void)
{
    tb_backend *be = tb_test_backend();
    char cache[] = "/tmp/tb_test_sparse_lemma_XXXXXX";
    if (!mkdtemp(cache)) return 1;
    test_vocabulary(cache);
    test_naive_exact(be, cache, "sq");
    test_naive_exact(be, cache, "sph");
    test_memory();
    const char *files[] = {"wordnet-glosses.tbcache", "wordnet-lemmas.tbcache"};
    for (int i = 0; i < 2; i++) {
        char path[256];
        snprintf(path, sizeof path, "%s/%s", cache, files[i]);
        unlink(path);
    }
    rmdir(cache);
    tb_backend_destroy(be);
    return tb_test_finish("test_sparse_lemma");
}
