/* test_pipeline.c: splits (official and bootstrap: disjointness, stratification, sizes),
 * determinism of every stream for a seed (order, augmentation, echoing, split), echoing's copy
 * counts (mean copies per item equals the factor), the prefetch thread (same stream as the
 * synchronous pipeline, shutdown while it is blocked) and bad configs. On Fashion-MNIST. */
#include "testutil.h"
#include "workloads/workload_impl.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

static tb_backend *be;

static tb_workload *make(tb_split_kind kind, uint64_t seed)
{
    tb_workload_config c = {.split_seed = seed, .split_kind = kind};
    tb_workload *wl = NULL;
    tb_error err = {0};
    if (!CHECK_OK(tb_workload_create("fmnist_mlp", be, &c, &wl, &err), &err)) exit(1);
    return wl;
}

static int64_t *ids_of(tb_workload *wl, tb_split s)
{
    int64_t n = tb_workload_size(wl, s);
    int64_t *rows = malloc((size_t)n * sizeof *rows), *ids = malloc((size_t)n * sizeof *ids);
    for (int64_t i = 0; i < n; i++) rows[i] = i;
    tb_error err = {0};
    CHECK_OK(tb_workload_example_ids(wl, s, rows, n, ids, &err), &err);
    free(rows);
    return ids;
}

static void test_splits(tb_workload *wl, bool bootstrap)
{
    int64_t n[3], *ids[3];
    unsigned char *mark = calloc(70000, 1);
    for (int s = 0; s < 3; s++) {
        n[s] = tb_workload_size(wl, (tb_split)s);
        ids[s] = ids_of(wl, (tb_split)s);
    }
    int64_t overlap = 0, dup_eval = 0;
    for (int64_t i = 0; i < n[0]; i++) mark[ids[0][i]] |= 1;
    for (int s = 1; s < 3; s++)
        for (int64_t i = 0; i < n[s]; i++) {
            if (mark[ids[s][i]] & 1) overlap++;
            if (mark[ids[s][i]] & 6) dup_eval++;
            mark[ids[s][i]] |= (unsigned char)(1 << s);
        }
    CHECK(overlap == 0);  /* no validation or test example is in the training set */
    CHECK(dup_eval == 0); /* validation and test are disjoint and without repeats */
    CHECK(n[1] == 5000 && n[2] == 10000);
    if (bootstrap) {
        CHECK(n[0] == 55000);
        int64_t distinct = 0;
        for (int64_t i = 0; i < 70000; i++) distinct += mark[i] & 1;
        CHECK(distinct < 40000 && distinct > 30000); /* with replacement: ~1 - e^-0.79 */
        for (int s = 1; s < 3; s++) { /* stratified: equal counts per class */
            int64_t per[10] = {0};
            for (int64_t i = 0; i < n[s]; i++) per[tb_workload_example_class(wl, ids[s][i])]++;
            bool equal = true;
            for (int c = 0; c < 10; c++) equal = equal && per[c] == n[s] / 10;
            CHECK(equal);
        }
    } else {
        CHECK(n[0] == 55000);
        int64_t outside = 0;
        for (int64_t i = 0; i < n[2]; i++) outside += ids[2][i] < 60000;
        CHECK(outside == 0); /* the official test set */
        int64_t distinct = 0;
        for (int64_t i = 0; i < 70000; i++) distinct += mark[i] & 1;
        CHECK(distinct == 55000);
    }
    for (int s = 0; s < 3; s++) free(ids[s]);
    free(mark);
}

static bool same_split(tb_workload *a, tb_workload *b, tb_split s)
{
    int64_t n = tb_workload_size(a, s);
    if (n != tb_workload_size(b, s)) return false;
    int64_t *x = ids_of(a, s), *y = ids_of(b, s);
    bool same = memcmp(x, y, (size_t)n * sizeof *x) == 0;
    free(x);
    free(y);
    return same;
}

/* Runs `batches` batches and returns a hash of their rows, inputs and targets; counts rows. */
static uint64_t run_stream(tb_workload *wl, tb_pipeline_config c, int batches, int64_t *counts,
                           int64_t *fresh)
{
    tb_pipeline *p;
    tb_tape *tape;
    tb_error err = {0};
    tb_tape_create(be, &tape, &err);
    if (!CHECK_OK(tb_pipeline_create(wl, &c, &p, &err), &err)) return 0;
    uint64_t h = 1469598103934665603ull;
    float *x = malloc((size_t)c.batch_size * 784 * sizeof(float));
    for (int b = 0; b < batches; b++) {
        tb_tape_reset(tape);
        tb_batch batch;
        if (!CHECK_OK(tb_pipeline_next(p, tape, &batch, &err), &err)) break;
        tb_tensor_download(&batch.inputs->value, x, NULL);
        for (int64_t i = 0; i < batch.n; i++) {
            if (counts) counts[batch.rows[i]]++;
            h = (h ^ (uint64_t)batch.rows[i]) * 1099511628211ull;
        }
        for (int64_t i = 0; i < batch.n * 784; i += 97) {
            uint32_t bits;
            memcpy(&bits, &x[i], 4);
            h = (h ^ bits) * 1099511628211ull;
        }
    }
    if (fresh) *fresh = tb_pipeline_fresh_examples(p);
    free(x);
    tb_pipeline_destroy(p);
    tb_tape_destroy(tape);
    return h;
}

static void test_streams(tb_workload *wl)
{
    tb_pipeline_config c = {.batch_size = 64, .data_order_seed = 1, .augment_seed = 2,
                            .augment = true};
    uint64_t a = run_stream(wl, c, 20, NULL, NULL), b = run_stream(wl, c, 20, NULL, NULL);
    CHECK(a == b); /* same seeds, same stream (through the thread) */
    tb_pipeline_config sync = c;
    sync.prefetch = -1;
    CHECK(run_stream(wl, sync, 20, NULL, NULL) == a); /* the thread changes nothing */
    tb_pipeline_config other = c;
    other.augment_seed = 3;
    CHECK(run_stream(wl, other, 20, NULL, NULL) != a);
    other = c;
    other.data_order_seed = 3;
    CHECK(run_stream(wl, other, 20, NULL, NULL) != a);
    /* the augmentation seed moves only the pixels, not the order */
    int64_t *ca = calloc(55000, sizeof *ca), *cb = calloc(55000, sizeof *cb);
    other = c;
    other.augment_seed = 9;
    run_stream(wl, c, 10, ca, NULL);
    run_stream(wl, other, 10, cb, NULL);
    CHECK(memcmp(ca, cb, 55000 * sizeof *ca) == 0);
    /* echoing streams are deterministic too */
    tb_pipeline_config e = c;
    e.echo = TB_ECHO_EXAMPLE_BEFORE_AUGMENT;
    e.echo_factor = 2.5;
    e.shuffle_buffer = 300;
    CHECK(run_stream(wl, e, 20, NULL, NULL) == run_stream(wl, e, 20, NULL, NULL));
    free(ca);
    free(cb);
}

/* Mean copies per fresh item equals the factor; counts are floor or ceil of it. */
static void check_echo(tb_workload *wl, tb_echo_kind kind, double factor, int64_t buffer)
{
    tb_pipeline_config c = {.batch_size = 100, .data_order_seed = 4, .echo = kind,
                            .echo_factor = factor, .shuffle_buffer = buffer};
    int batches = 400;
    int64_t *counts = calloc(55000, sizeof *counts), fresh = 0;
    run_stream(wl, c, batches, counts, &fresh);
    int64_t delivered = (int64_t)batches * 100, lo = (int64_t)factor, hi = lo + (factor > lo);
    double mean = (double)delivered / (double)fresh;
    /* items still in the buffer or cut at the end make the last few count short */
    CHECK_NEAR(mean, factor, 0.05 * factor);
    int64_t odd = 0;
    for (int64_t i = 0; i < 55000; i++)
        if (counts[i] && (counts[i] < lo || counts[i] > hi)) odd++;
    CHECK(odd <= buffer + 100 + 2 * hi); /* only items at the stream's end (buffer, batch) */
    free(counts);
}

static void test_echo(tb_workload *wl)
{
    check_echo(wl, TB_ECHO_EXAMPLE_AFTER_AUGMENT, 2.0, 0);
    check_echo(wl, TB_ECHO_EXAMPLE_BEFORE_AUGMENT, 1.5, 500);
    check_echo(wl, TB_ECHO_BATCH, 3.0, 0);
    check_echo(wl, TB_ECHO_BATCH, 2.5, 0);
    /* factor 1 (or no echo) reproduces the plain stream */
    tb_pipeline_config base = {.batch_size = 64, .data_order_seed = 5};
    tb_pipeline_config one = base;
    one.echo = TB_ECHO_EXAMPLE_BEFORE_AUGMENT;
    one.echo_factor = 1.0;
    CHECK(run_stream(wl, base, 10, NULL, NULL) == run_stream(wl, one, 10, NULL, NULL));
    /* a larger buffer spreads the copies of an item over more batches */
    tb_pipeline_config small = {.batch_size = 50, .data_order_seed = 6,
                                .echo = TB_ECHO_EXAMPLE_AFTER_AUGMENT, .echo_factor = 4};
    tb_pipeline_config big = small;
    big.shuffle_buffer = 2000;
    int64_t dup[2] = {0, 0};
    for (int k = 0; k < 2; k++) {
        tb_pipeline *p;
        tb_tape *tape;
        tb_error err = {0};
        tb_tape_create(be, &tape, &err);
        tb_pipeline_config cfg = k ? big : small;
        CHECK_OK(tb_pipeline_create(wl, &cfg, &p, &err), &err);
        for (int b = 0; b < 40; b++) {
            tb_tape_reset(tape);
            tb_batch batch;
            tb_pipeline_next(p, tape, &batch, &err);
            for (int i = 1; i < batch.n; i++)
                for (int j = 0; j < i; j++) dup[k] += batch.rows[i] == batch.rows[j];
        }
        tb_pipeline_destroy(p);
        tb_tape_destroy(tape);
    }
    CHECK(dup[1] < dup[0] / 4);
}

static void test_fresh_count(tb_workload *wl)
{
    int64_t fresh = 0;
    tb_pipeline_config c = {.batch_size = 32, .data_order_seed = 7};
    run_stream(wl, c, 10, NULL, &fresh);
    CHECK(fresh == 320);
    c.echo = TB_ECHO_BATCH;
    c.echo_factor = 2;
    run_stream(wl, c, 10, NULL, &fresh);
    CHECK(fresh == 160);
    /* reads waiting in the shuffle buffer are not delivered: not counted, nor as epochs */
    tb_pipeline_config buffered = {.batch_size = 32, .data_order_seed = 7,
                                   .shuffle_buffer = 5000, .prefetch = -1};
    run_stream(wl, buffered, 10, NULL, &fresh);
    CHECK(fresh == 320);
    tb_pipeline *p;
    tb_tape *tape;
    tb_error err = {0};
    tb_tape_create(be, &tape, &err);
    CHECK_OK(tb_pipeline_create(wl, &buffered, &p, &err), &err);
    tb_batch b;
    CHECK_OK(tb_pipeline_next(p, tape, &b, &err), &err);
    CHECK(b.fresh == 32 && tb_pipeline_epoch(p) == 1);
    tb_pipeline_destroy(p);
    /* with example echoing a copy is not fresh: fewer fresh than delivered, never more */
    buffered.echo = TB_ECHO_EXAMPLE_AFTER_AUGMENT;
    buffered.echo_factor = 2;
    buffered.shuffle_buffer = 1000;
    run_stream(wl, buffered, 10, NULL, &fresh);
    CHECK(fresh > 0 && fresh < 320);
    tb_tape_destroy(tape);
}

static void test_shutdown(tb_workload *wl)
{
    /* the thread fills the queue and blocks; destroy must stop it, with and without a batch
     * held, and while it sleeps in the slow-upstream delay */
    tb_pipeline_config c = {.batch_size = 16, .prefetch = 2};
    tb_pipeline *p;
    tb_error err = {0};
    CHECK_OK(tb_pipeline_create(wl, &c, &p, &err), &err);
    struct timespec ts = {0, 20000000};
    nanosleep(&ts, NULL);
    tb_pipeline_destroy(p);
    tb_tape *tape;
    tb_tape_create(be, &tape, &err);
    c.upstream_delay_s = 0.001;
    CHECK_OK(tb_pipeline_create(wl, &c, &p, &err), &err);
    tb_batch b;
    CHECK_OK(tb_pipeline_next(p, tape, &b, &err), &err);
    CHECK(b.n == 16 && b.fresh == 16);
    tb_pipeline_destroy(p);
    tb_tape_destroy(tape);
    CHECK(1); /* reaching here is the check */
}

static void test_bad_configs(tb_workload *wl, tb_workload *lm)
{
    tb_pipeline *p;
    tb_error err = {0};
    tb_pipeline_config c = {.batch_size = 8, .echo_factor = 0.5};
    CHECK_FAILS(tb_pipeline_create(wl, &c, &p, &err), TB_ERR_INVALID, &err, "echo factor");
    c = (tb_pipeline_config){.batch_size = 0};
    CHECK_FAILS(tb_pipeline_create(wl, &c, &p, &err), TB_ERR_INVALID, &err, "batch size");
    c = (tb_pipeline_config){.batch_size = 8, .shuffle_buffer = -1};
    CHECK_FAILS(tb_pipeline_create(wl, &c, &p, &err), TB_ERR_INVALID, &err, "shuffle buffer");
    /* a buffer larger than the training split would read past an epoch before a batch */
    c = (tb_pipeline_config){.batch_size = 8, .shuffle_buffer = 55001};
    CHECK_FAILS(tb_pipeline_create(wl, &c, &p, &err), TB_ERR_INVALID, &err,
                "shuffle buffer 55001 exceeds the 55000 training examples");
    c = (tb_pipeline_config){.batch_size = 8, .augment = true};
    CHECK_FAILS(tb_pipeline_create(lm, &c, &p, &err), TB_ERR_INVALID, &err, "image");
    tb_echo_kind k;
    CHECK_FAILS(tb_echo_kind_parse("twice", &k, &err), TB_ERR_INVALID, &err, "twice");
    tb_split_kind sk;
    CHECK_FAILS(tb_split_kind_parse("random", &sk, &err), TB_ERR_INVALID, &err, "random");
    tb_workload_config wc = {.split_kind = TB_SPLITS_BOOTSTRAP, .validation_size = 35000,
                             .test_size = 35000};
    tb_workload *w2;
    CHECK_FAILS(tb_workload_create("fmnist_mlp", be, &wc, &w2, &err), TB_ERR_INVALID, &err,
                "leave no training data");
    wc = (tb_workload_config){.test_size = 100};
    CHECK_FAILS(tb_workload_create("fmnist_mlp", be, &wc, &w2, &err), TB_ERR_INVALID, &err,
                "bootstrap splits only");
}

/* --augment on the autoencoder, whose target is the image: the target gets the same crop and
 * flip as the input (it was the image before augmentation: the model learned to undo them),
 * for every echo kind (augmenting per copy or once per fresh example). */
static void test_augment_target(void)
{
    tb_workload_config wc = {0};
    tb_workload *ae = NULL;
    tb_error err = {0};
    if (!CHECK_OK(tb_workload_create("fmnist_autoencoder", be, &wc, &ae, &err), &err)) return;
    tb_example_layout l = tb_workload_layout(ae);
    CHECK(l.target_is_input && l.image);
    const tb_echo_kind kinds[3] = {TB_ECHO_NONE, TB_ECHO_EXAMPLE_BEFORE_AUGMENT,
                                   TB_ECHO_EXAMPLE_AFTER_AUGMENT};
    enum { B = 16, D = 784 };
    float *x = malloc(B * D * sizeof(float)), *y = malloc(B * D * sizeof(float));
    float *rx = malloc(B * D * sizeof(float)), *ry = malloc(B * D * sizeof(float));
    tb_tape *tape = tb_test_tape(be);
    for (int k = 0; k < 3; k++) {
        tb_pipeline_config c = {.batch_size = B, .data_order_seed = 4, .augment_seed = 5,
                                .augment = true, .echo = kinds[k], .echo_factor = 2};
        tb_pipeline *p;
        if (!CHECK_OK(tb_pipeline_create(ae, &c, &p, &err), &err)) continue;
        bool same = true;
        int64_t changed = 0;
        for (int b = 0; b < 5; b++) {
            tb_tape_reset(tape);
            tb_batch batch;
            if (!CHECK_OK(tb_pipeline_next(p, tape, &batch, &err), &err)) break;
            tb_tensor_download(&batch.inputs->value, x, NULL);
            tb_tensor_download(&batch.targets->value, y, NULL);
            same = same && memcmp(x, y, (size_t)batch.n * D * sizeof(float)) == 0;
            /* and the augmentation did change images */
            CHECK_OK(tb_workload_read(ae, TB_SPLIT_TRAIN, batch.rows, batch.n, rx, ry, &err),
                     &err);
            for (int64_t i = 0; i < batch.n; i++)
                changed += memcmp(x + i * D, rx + i * D, D * sizeof(float)) != 0;
        }
        CHECK(same);
        CHECK(changed > 40); /* of 80: a crop of (0, 0) without a flip leaves 1 in 50 as is */
        tb_pipeline_destroy(p);
    }
    tb_tape_destroy(tape);
    free(x);
    free(y);
    free(rx);
    free(ry);
    tb_workload_destroy(ae);
}

/* Evaluation subsets: N examples spread over the split. A bootstrap validation set was filled
 * class by class, and evaluate took its first rows: 200 examples were all of class 0 (error
 * rate exactly 1 after a few steps). The official KJV test set is in corpus order: the first
 * rows are Genesis. */
static void test_eval_subsets(tb_workload *boot, tb_workload *lm)
{
    tb_error err = {0};
    /* the row picker: increasing, from the first part to the last; the identity when whole */
    int64_t prev = -1;
    bool increasing = true;
    for (int64_t k = 0; k < 200; k++) {
        int64_t r = tb_eval_subset_row(5000, 200, k);
        increasing = increasing && r > prev && r < 5000;
        prev = r;
    }
    CHECK(increasing && tb_eval_subset_row(5000, 200, 0) < 25 && prev >= 4975);
    CHECK(tb_eval_subset_row(7, 7, 3) == 3 && tb_eval_subset_row(7, 9, 5) == 5);

    /* a bootstrap validation set's order holds every class from its start */
    int64_t first[200], per[10] = {0};
    for (int64_t i = 0; i < 200; i++) first[i] = i;
    int64_t ids[200];
    CHECK_OK(tb_workload_example_ids(boot, TB_SPLIT_VALIDATION, first, 200, ids, &err), &err);
    for (int64_t i = 0; i < 200; i++) per[tb_workload_example_class(boot, ids[i])]++;
    bool all = true;
    for (int c = 0; c < 10; c++) all = all && per[c] > 0;
    CHECK(all);

    /* the 200 examples an evaluation reads (one batch: its targets stay staged) are balanced
     * over the classes, in validation and test */
    tb_tape *tape = tb_test_tape(be);
    tb_rng rng = tb_rng_make(1, TB_STREAM_INIT);
    CHECK_OK(tb_workload_init(boot, &rng, &err), &err);
    for (int s = TB_SPLIT_VALIDATION; s <= TB_SPLIT_TEST; s++) {
        tb_eval_metrics m;
        CHECK_OK(tb_workload_evaluate(boot, tape, (tb_split)s, 200, &m, &err), &err);
        CHECK(m.examples == 200);
        int64_t count[10] = {0};
        const int32_t *y = (const int32_t *)boot->stage_y;
        for (int64_t i = 0; i < 200; i++) count[y[i]]++;
        bool balanced = true;
        for (int c = 0; c < 10; c++) balanced = balanced && count[c] >= 8 && count[c] <= 40;
        if (!balanced)
            for (int c = 0; c < 10; c++) fprintf(stderr, "class %d: %lld\n", c, (long long)count[c]);
        CHECK(balanced);
    }
    tb_tape_destroy(tape);

    /* KJV's official test set: 8 examples from the middle of 8 equal parts, the last near
     * Revelation's end (its last batch of inputs stays staged) */
    tape = tb_test_tape(be);
    CHECK_OK(tb_workload_init(lm, &rng, &err), &err);
    int64_t size = tb_workload_size(lm, TB_SPLIT_TEST), rows[8];
    for (int64_t k = 0; k < 8; k++) rows[k] = tb_eval_subset_row(size, 8, k);
    CHECK(rows[0] > 0 && rows[7] > size * 7 / 8);
    tb_example_layout l = tb_workload_layout(lm);
    size_t xb = tb_example_x_bytes(&l), yb = tb_example_y_bytes(&l);
    unsigned char *x = malloc(8 * xb), *y = malloc(8 * yb);
    CHECK_OK(tb_workload_read(lm, TB_SPLIT_TEST, rows, 8, x, y, &err), &err);
    tb_eval_metrics m;
    CHECK_OK(tb_workload_evaluate(lm, tape, TB_SPLIT_TEST, 8, &m, &err), &err);
    CHECK(m.examples == 8 && memcmp(lm->stage_x, x, 8 * xb) == 0);
    free(x);
    free(y);
    tb_tape_destroy(tape);
}

/* Too little data for the default splits: a data error naming the sizes, not empty splits.
 * tiny_10 of QA: 10 training examples gave a validation set of 10 / 12 = 0 examples and a
 * run that 'diverged' on its NaN validation loss. A source without data, sizes only. */
static void test_too_little_data(void)
{
    tb_error err = {0};
    for (int kind = 0; kind < 2; kind++) {
        tb_workload wl;
        memset(&wl, 0, sizeof wl);
        wl.vt = &tb_workload_fmnist_mlp;
        wl.src.n = 10010;
        wl.src.n_official_train = 10;
        tb_workload_config c = {.split_kind = kind ? TB_SPLITS_BOOTSTRAP : TB_SPLITS_OFFICIAL};
        CHECK_FAILS(tb_workload_draw_splits(&wl, &c, &err), TB_ERR_FORMAT, &err,
                    "fmnist_mlp: too little data for its splits: 10010 examples (10 in the "
                    "official training set, 10000 in the official test set) give ");
        CHECK(strstr(err.message, " 0 validation and ") != NULL);
        for (int s = 0; s < 3; s++) free(wl.split_ids[s]);
        /* no official test set */
        memset(&wl, 0, sizeof wl);
        wl.vt = &tb_workload_fmnist_mlp;
        wl.src.n = wl.src.n_official_train = 600;
        CHECK_FAILS(tb_workload_draw_splits(&wl, &c, &err), TB_ERR_FORMAT, &err,
                    "give 550 training, 50 validation and 0 test examples");
        for (int s = 0; s < 3; s++) free(wl.split_ids[s]);
    }
    /* a validation size the caller chose that leaves no training data stays the caller's */
    tb_workload wl;
    memset(&wl, 0, sizeof wl);
    wl.vt = &tb_workload_fmnist_mlp;
    wl.src.n = 700;
    wl.src.n_official_train = 600;
    tb_workload_config c = {.validation_size = 600};
    CHECK_FAILS(tb_workload_draw_splits(&wl, &c, &err), TB_ERR_INVALID, &err,
                "leaves no training data");
}

int main(void)
{
    be = tb_test_backend();
    tb_workload *off = make(TB_SPLITS_OFFICIAL, 0), *boot = make(TB_SPLITS_BOOTSTRAP, 0);
    test_too_little_data();
    test_splits(off, false);
    test_splits(boot, true);
    tb_workload *boot2 = make(TB_SPLITS_BOOTSTRAP, 0), *boot3 = make(TB_SPLITS_BOOTSTRAP, 1);
    CHECK(same_split(boot, boot2, TB_SPLIT_TRAIN) && same_split(boot, boot2, TB_SPLIT_TEST));
    CHECK(!same_split(boot, boot3, TB_SPLIT_TRAIN) && !same_split(boot, boot3, TB_SPLIT_TEST));
    tb_workload_destroy(boot2);
    tb_workload_destroy(boot3);
    test_streams(off);
    test_augment_target();
    test_echo(off);
    test_fresh_count(off);
    test_shutdown(off);
    tb_workload_config lc = {.data_dir = NULL};
    tb_workload *lm = NULL;
    tb_error err = {0};
    if (CHECK_OK(tb_workload_create("kjv_transformer", be, &lc, &lm, &err), &err)) {
        test_bad_configs(off, lm);
        test_eval_subsets(boot, lm);
        tb_workload_destroy(lm);
    }
    tb_workload_destroy(off);
    tb_workload_destroy(boot);
    tb_backend_destroy(be);
    return tb_test_finish("test_pipeline");
}
