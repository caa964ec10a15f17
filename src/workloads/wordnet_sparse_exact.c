/* wordnet_sparse_exact.c: variants of wordnet_sparse whose output layer is the sparse-target
 * layer (trainbench/sparse_out.h, docs/SPARSE_TARGETS.md): the 3 previous words embedded (64
 * each), a hidden layer of 256 (ReLU), a linear projection to d = 128, then o = W h over the
 * whole vocabulary (about 27k words) against the next word as a 1-sparse target, with squared
 * error or the spherical softmax, computed naively or exactly. Naive and exact give the same
 * model (to float32 rounding) from the same seeds. The _54k variants: every word of the glosses
 * in the vocabulary (about 54k, TB_WORDNET_VOCAB_ALL), the same model otherwise. The _lemma
 * variants: one example per synset, the first 8 words of its gloss (embedded as above) against
 * the lemmas the synset defines, a K-sparse target over WordNet's 147,306 lemmas
 * (tb_wordnet_lemma_source_load; K = 1 .. 28).
 *
 * The output layer is not a tb_params parameter: it updates itself in the loss's backward pass,
 * by SGD at its own fixed rate (WN_OUT_LR), whatever the submission's optimizer does with the
 * rest of the model. So a curvature optimizer's extra backward pass (K-FAC's Fisher) would
 * update it twice: use first-order optimizers. Metric: validation loss (the layer's); the
 * model has no logits over the vocabulary to take an argmax of, so accuracy and error rate
 * are NaN (no_error_rate), as for the autoencoder. */
#include "workloads/workload_impl.h"

#include "trainbench/sparse_out.h"

#include <math.h>
#include <stdlib.h>

#define WN_CONTEXT 3
#define WN_EMBED 64
#define WN_HIDDEN 256
#define WN_DIM 128
#define WN_MAX_BATCH 1024
#define WN_OUT_LR 1e-3f
#define WN_LEMMA_WORDS 8 /* the gloss words a _lemma variant reads */

typedef struct wnx_options {
    tb_sparse_loss loss;
    tb_sparse_algo algo;
    tb_wordnet_vocab vocab;
    bool lemma; /* the synset's lemmas from its gloss, not the next word */
} wnx_options;

typedef struct wnx_model {
    tb_var *emb;
    tb_linear_layer hidden, proj;
    tb_sparse_out *out;
} wnx_model;

static tb_status wnx_load(tb_workload *wl, const tb_workload_config *cfg, tb_error *err)
{
    const wnx_options *o = wl->vt->options;
    if (o->lemma)
        return tb_wordnet_lemma_source_load(cfg->data_dir, cfg->cache_dir, wl->vt->info.id,
                                            WN_LEMMA_WORDS, &wl->src, err);
    return tb_wordnet_source_load_vocab(cfg->data_dir, cfg->cache_dir, wl->vt->info.id,
                                        WN_CONTEXT, o->vocab, &wl->src, err);
}

static tb_status wnx_create(tb_workload *wl, tb_error *err)
{
    const wnx_options *o = wl->vt->options;
    wnx_model *m = calloc(1, sizeof *m);
    if (!m) return tb_fail(err, TB_ERR_NOMEM, "cannot allocate the WordNet model");
    wl->model = m;
    const tb_example_layout *lay = &wl->src.layout;
    int64_t v = wl->src.classes, words = lay->x_shape[0], k = lay->y_ndim ? lay->y_shape[0] : 1;
    int64_t shape[2] = {wl->src.input_vocab ? wl->src.input_vocab : v, WN_EMBED};
    m->emb = tb_params_add(wl->params, "embedding", TB_PARAM_EMBEDDING, 2, shape, err);
    if (!m->emb) return err ? err->status : TB_ERR_INVALID;
    tb_status st = tb_linear_layer_init(&m->hidden, wl->params, "hidden", words * WN_EMBED,
                                        WN_HIDDEN, true, err);
    if (st == TB_OK)
        st = tb_linear_layer_init(&m->proj, wl->params, "proj", WN_HIDDEN, WN_DIM, true, err);
    if (st == TB_OK) st = tb_workload_add_layer(wl, TB_LAYER_LINEAR, "hidden", &m->hidden, err);
    if (st == TB_OK) st = tb_workload_add_layer(wl, TB_LAYER_LINEAR, "proj", &m->proj, err);
    tb_sparse_out_config c = tb_sparse_out_defaults(v, WN_DIM, WN_MAX_BATCH, k, o->loss, o->algo);
    if (st == TB_OK) st = tb_sparse_out_create(&c, &m->out, err);
    return st;
}

/* embeddings N(0, 1), linear layers fan-in uniform; the output layer uniform in
 * +-1/sqrt(D) from the same stream (so naive and exact start from the same W): with torch's
 * +-1/sqrt(d), Q = W^T W would have eigenvalues near D / (3 d) = 70 and the squared error's
 * gradient for h, 2 Q h, blew the lower layers up at SGD rate 0.01 */
static tb_status wnx_init(tb_workload *wl, tb_rng *rng, tb_error *err)
{
    wnx_model *m = wl->model;
    tb_status st = tb_init_normal(m->emb, rng, 0.0f, 1.0f, err);
    if (st == TB_OK) st = tb_init_linear_default(&m->hidden, rng, err);
    if (st == TB_OK) st = tb_init_linear_default(&m->proj, rng, err);
    int64_t n = (int64_t)wl->src.classes * WN_DIM;
    float *w = st == TB_OK ? malloc((size_t)n * sizeof *w) : NULL;
    if (st == TB_OK && !w) st = tb_fail(err, TB_ERR_NOMEM, "cannot allocate the output layer");
    if (st != TB_OK) return st;
    float b = 1.0f / sqrtf((float)wl->src.classes);
    tb_rng_fill_uniform(rng, w, n, -b, b);
    tb_sparse_out_set_weights(m->out, w);
    free(w);
    return TB_OK;
}

static tb_var *wnx_forward(tb_workload *wl, tb_tape *tape, tb_var *x, tb_rng *dropout)
{
    (void)dropout;
    wnx_model *m = wl->model;
    int64_t flat[2] = {x ? x->value.shape[0] : 0, -1};
    tb_var *e = tb_op_reshape(tape, tb_op_embedding(tape, m->emb, x), 2, flat);
    return tb_mlp_forward(tape, &m->hidden, TB_RELU, &m->proj, e, NULL); /* h [N, d] */
}

static tb_var *wnx_loss(tb_workload *wl, tb_tape *tape, tb_var *h, tb_var *targets)
{
    wnx_model *m = wl->model;
    return tb_op_sparse_out(tape, m->out, h, targets, WN_OUT_LR);
}

static void wnx_destroy(tb_workload *wl)
{
    wnx_model *m = wl->model;
    if (m) tb_sparse_out_destroy(m->out);
    free(m);
}

/* Not calibrated: placeholders, not what a baseline reaches in its budget (docs/WORKLOADS.md). */
#define WNX_SQ_TARGET 0.99
#define WNX_SPH_TARGET 7.5

#define WNX_INFO                                                                                \
    .data_package = "wordnet-base", .metric = "loss", .default_batch_size = 256,                \
    .base = "wordnet_sparse", .lower_is_better = true, .eval_period_s = 5.0, .step_hint = 3000, \
    .data_source = "/usr/share/wordnet/data.{noun,verb,adj,adv} (glosses)",                     \
    .max_runtime_s = 120.0, .no_error_rate = true

#define WNX_COMMON                                                                              \
    .load_data = wnx_load, .create_model = wnx_create,                                         \
    .init_model = wnx_init, .forward = wnx_forward, .loss = wnx_loss,                          \
    .destroy_model = wnx_destroy, .metric_kind = TB_METRIC_LOSS, .default_validation = 10000,   \
    .default_test = 10000, .eval_batch = 500

#define WNX_VARIANT(name, id_, loss_, algo_, vocab_, target, desc, lossdesc)                    \
    static const wnx_options name##_opts = {.loss = loss_, .algo = algo_, .vocab = vocab_,      \
                                            .lemma = vocab_##_LEMMA};                        \
    const tb_workload_vtable name = {                                                           \
        .info = {.id = id_, .summary = vocab_##_TASK desc, .variant = desc,                    \
                 .validation_target = target, .test_target = target,                            \
                 .quick_target = target, .loss_desc = lossdesc, WNX_INFO},                      \
        WNX_COMMON,                                                                             \
        .prepare = vocab_##_PREPARE,                                                             \
        .options = &name##_opts,                                                                \
    }

#define WNX_SQ "squared error ||o - y||^2 over the vocabulary"
#define WNX_SPH "spherical softmax cross-entropy (nats)"
#define WNX_D TB_WORDNET_VOCAB_DEFAULT /* the vocabularies, and the cache each one prepares */
#define WNX_ALL TB_WORDNET_VOCAB_ALL
#define WNX_D_PREPARE tb_wordnet_prepare
#define WNX_ALL_PREPARE tb_wordnet_prepare_all
#define WNX_LEMMA TB_WORDNET_VOCAB_DEFAULT /* the glosses' words as input */
#define WNX_LEMMA_PREPARE tb_wordnet_prepare_lemma
#define WNX_D_LEMMA false
#define WNX_ALL_LEMMA false
#define WNX_LEMMA_LEMMA true
#define WNX_D_TASK "WordNet glosses, next word, "
#define WNX_ALL_TASK WNX_D_TASK
#define WNX_LEMMA_TASK "WordNet synsets, lemmas from the gloss, "
WNX_VARIANT(tb_workload_wordnet_sparse_sq_naive, "wordnet_sparse_sq_naive", TB_SPARSE_SQUARED,
            TB_SPARSE_NAIVE, WNX_D, WNX_SQ_TARGET, "squared error, naive output layer", WNX_SQ);
WNX_VARIANT(tb_workload_wordnet_sparse_sq_exact, "wordnet_sparse_sq_exact", TB_SPARSE_SQUARED,
            TB_SPARSE_EXACT, WNX_D, WNX_SQ_TARGET, "squared error, exact sparse-target layer",
            WNX_SQ);
WNX_VARIANT(tb_workload_wordnet_sparse_sph_naive, "wordnet_sparse_sph_naive",
            TB_SPARSE_SPHERICAL, TB_SPARSE_NAIVE, WNX_D, WNX_SPH_TARGET,
            "spherical softmax, naive output layer", WNX_SPH);
WNX_VARIANT(tb_workload_wordnet_sparse_sph_exact, "wordnet_sparse_sph_exact",
            TB_SPARSE_SPHERICAL, TB_SPARSE_EXACT, WNX_D, WNX_SPH_TARGET,
            "spherical softmax, exact sparse-target layer", WNX_SPH);
WNX_VARIANT(tb_workload_wordnet_sparse_sq_naive_54k, "wordnet_sparse_sq_naive_54k",
            TB_SPARSE_SQUARED, TB_SPARSE_NAIVE, WNX_ALL, WNX_SQ_TARGET,
            "squared error, naive output layer, every gloss word (54k)", WNX_SQ);
WNX_VARIANT(tb_workload_wordnet_sparse_sq_exact_54k, "wordnet_sparse_sq_exact_54k",
            TB_SPARSE_SQUARED, TB_SPARSE_EXACT, WNX_ALL, WNX_SQ_TARGET,
            "squared error, exact sparse-target layer, every gloss word (54k)", WNX_SQ);
WNX_VARIANT(tb_workload_wordnet_sparse_sph_naive_54k, "wordnet_sparse_sph_naive_54k",
            TB_SPARSE_SPHERICAL, TB_SPARSE_NAIVE, WNX_ALL, WNX_SPH_TARGET,
            "spherical softmax, naive output layer, every gloss word (54k)", WNX_SPH);
WNX_VARIANT(tb_workload_wordnet_sparse_sph_exact_54k, "wordnet_sparse_sph_exact_54k",
            TB_SPARSE_SPHERICAL, TB_SPARSE_EXACT, WNX_ALL, WNX_SPH_TARGET,
            "spherical softmax, exact sparse-target layer, every gloss word (54k)", WNX_SPH);
WNX_VARIANT(tb_workload_wordnet_sparse_sq_naive_lemma, "wordnet_sparse_sq_naive_lemma",
            TB_SPARSE_SQUARED, TB_SPARSE_NAIVE, WNX_LEMMA, WNX_SQ_TARGET,
            "squared error, naive output layer, every lemma (147k)", WNX_SQ);
WNX_VARIANT(tb_workload_wordnet_sparse_sq_exact_lemma, "wordnet_sparse_sq_exact_lemma",
            TB_SPARSE_SQUARED, TB_SPARSE_EXACT, WNX_LEMMA, WNX_SQ_TARGET,
            "squared error, exact sparse-target layer, every lemma (147k)", WNX_SQ);
WNX_VARIANT(tb_workload_wordnet_sparse_sph_naive_lemma, "wordnet_sparse_sph_naive_lemma",
            TB_SPARSE_SPHERICAL, TB_SPARSE_NAIVE, WNX_LEMMA, WNX_SPH_TARGET,
            "spherical softmax, naive output layer, every lemma (147k)", WNX_SPH);
WNX_VARIANT(tb_workload_wordnet_sparse_sph_exact_lemma, "wordnet_sparse_sph_exact_lemma",
            TB_SPARSE_SPHERICAL, TB_SPARSE_EXACT, WNX_LEMMA, WNX_SPH_TARGET,
            "spherical softmax, exact sparse-target layer, every lemma (147k)", WNX_SPH);
