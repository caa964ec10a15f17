/* pipeline.c: the input pipeline: an upstream thread reads, augments, echoes and shuffles
 * examples into host batches in a bounded queue; tb_pipeline_next projects them (projected
 * variants: projection_stage.c) and uploads them onto a tape. The batches depend only on the
 * seeds, the config and (projected) the weights of the step (the thread only runs ahead). */
#include "trainbench/pipeline.h"

#include "core/clock.h"
#include "workloads/projection_stage.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* sub-streams of the data-order seed, apart from TB_STREAM_DATA_ORDER itself */
#define STREAM_ECHO 101
#define STREAM_SHUFFLE_BUFFER 102

typedef struct hbatch {
    unsigned char *x, *y;
    int64_t *rows;
    int64_t n, fresh;
} hbatch;

struct tb_pipeline {
    tb_workload *wl;
    tb_pipeline_config cfg;
    tb_example_layout lay;
    size_t xb, yb;
    int64_t batch, n, per_epoch;
    /* upstream state: touched only by the producer */
    int64_t *order, pos;
    tb_rng order_rng, echo_rng, shuffle_rng, aug_rng;
    unsigned char *raw_x, *raw_y, *aug_x, *aug_y; /* the current fresh item, augmented */
    int64_t raw_row, copies_left, reads, repeat_left; /* reads: fresh reads so far */
    double ready_at;                      /* slow upstream: when the last read's cost ends */
    bool pace_reset;                      /* the upstream waited: the next read starts now */
    unsigned char *buf_x, *buf_y;         /* shuffle buffer */
    int64_t *buf_rows, buf_n;
    bool *buf_fresh;                      /* per buffered item: the first copy of a fresh read */
    hbatch last;                          /* for batch echoing */
    /* the queue: slots[head] is the oldest; count includes a slot held by the consumer */
    hbatch *slots;
    int nslots, head, count;
    bool held, threaded;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t not_empty, not_full;
    atomic_bool stop;
    /* consumer */
    tb_projection_stage *proj; /* projected variants: the model's own noise, per step */
    int64_t fresh_delivered, batches;
};

const char *tb_echo_kind_name(tb_echo_kind kind)
{
    switch (kind) {
    case TB_ECHO_NONE: return "none";
    case TB_ECHO_EXAMPLE_BEFORE_AUGMENT: return "example_before_augment";
    case TB_ECHO_EXAMPLE_AFTER_AUGMENT: return "example_after_augment";
    case TB_ECHO_BATCH: return "batch";
    }
    return "unknown";
}

tb_status tb_echo_kind_parse(const char *name, tb_echo_kind *out, tb_error *err)
{
    if (!name || !out)
        return tb_fail(err, TB_ERR_INVALID, "echo_kind_parse: %s is NULL", name ? "out" : "name");
    if (strcmp(name, "none") == 0) *out = TB_ECHO_NONE;
    else if (strcmp(name, "example") == 0 || strcmp(name, "example_before_augment") == 0)
        *out = TB_ECHO_EXAMPLE_BEFORE_AUGMENT;
    else if (strcmp(name, "example_after_augment") == 0) *out = TB_ECHO_EXAMPLE_AFTER_AUGMENT;
    else if (strcmp(name, "batch") == 0) *out = TB_ECHO_BATCH;
    else
        return tb_fail(err, TB_ERR_INVALID,
                       "unknown echo kind '%s' (known: none, example_before_augment, "
                       "example_after_augment, batch)",
                       name);
    return TB_OK;
}

/* ---- upstream ------------------------------------------------------------------------------ */

static int64_t next_row(tb_pipeline *p)
{
    if (p->pos >= p->per_epoch) {
        for (int64_t i = 0; i < p->n; i++) p->order[i] = i;
        tb_rng_shuffle_i64(&p->order_rng, p->order, p->n);
        p->pos = 0;
    }
    return p->order[p->pos++];
}

static int64_t draw_copies(tb_pipeline *p)
{
    double e = p->cfg.echo_factor > 0 ? p->cfg.echo_factor : 1.0, k = floor(e);
    if (e > k && tb_rng_uniform(&p->echo_rng) < e - k) k += 1;
    return (int64_t)k;
}

/* One crop offset and flip applied to an image [C, H, W]. */
static void crop_flip(const tb_example_layout *lay, int64_t dy, int64_t dx, bool flip,
                      const float *in, float *out)
{
    int64_t c = lay->x_shape[0], h = lay->x_shape[1], w = lay->x_shape[2];
    for (int64_t ch = 0; ch < c; ch++)
        for (int64_t i = 0; i < h; i++)
            for (int64_t j = 0; j < w; j++) {
                int64_t si = i + dy, sj = (flip ? w - 1 - j : j) + dx;
                out[(ch * h + i) * w + j] =
                    si >= 0 && si < h && sj >= 0 && sj < w ? in[(ch * h + si) * w + sj] : 0.0f;
            }
}

/* Random crop (zero padding) and horizontal flip of an image [C, H, W]: dy, dx, flip drawn
 * for every item, so the stream does not depend on what is enabled elsewhere. When the target
 * is the input itself (the autoencoder), the same crop and flip are applied to it, so that the
 * model reconstructs what it was given, not the image before augmentation. */
static void augment(tb_pipeline *p, const void *in_x, void *out_x, const void *in_y,
                    void *out_y)
{
    int pad = p->cfg.crop_padding > 0 ? p->cfg.crop_padding : 2;
    int64_t dy = (int64_t)tb_rng_below(&p->aug_rng, (uint64_t)(2 * pad + 1)) - pad;
    int64_t dx = (int64_t)tb_rng_below(&p->aug_rng, (uint64_t)(2 * pad + 1)) - pad;
    bool flip = !p->cfg.no_flip && (tb_rng_u32(&p->aug_rng) & 1u);
    crop_flip(&p->lay, dy, dx, flip, in_x, out_x);
    if (p->lay.target_is_input)
        crop_flip(&p->lay, dy, dx, flip, in_y, out_y);
    else
        memcpy(out_y, in_y, p->yb);
}

/* The stated cost of one fresh read (--slow-upstream): sleeps until d seconds after the end of
 * the previous read's cost, an absolute deadline, so that the sleeps' overshoot (the timer's
 * slack, tens of microseconds, as much as a read's cost at a few times a small step) does not
 * add up: a busy upstream reads at the stated rate. After the upstream waited for room in the
 * queue (or ran inline, between steps) the next read's cost starts when it does. */
static void upstream_cost(tb_pipeline *p, double d)
{
    double now = tb_monotonic_s();
    if (p->pace_reset || p->ready_at < now - 1.0) p->ready_at = now;
    p->pace_reset = false;
    p->ready_at += d;
    double whole = floor(p->ready_at);
    struct timespec ts = {(time_t)whole, (long)((p->ready_at - whole) * 1e9)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {}
}

/* The next item of the echo stage into (x, y, row). */
static void echo_item(tb_pipeline *p, unsigned char *x, unsigned char *y, int64_t *row)
{
    tb_echo_kind kind = p->cfg.echo;
    bool aug = p->cfg.augment;
    if (p->copies_left == 0) {
        p->raw_row = next_row(p);
        tb_workload_read(p->wl, TB_SPLIT_TRAIN, &p->raw_row, 1, p->raw_x, p->raw_y, NULL);
        p->reads++;
        if (p->cfg.upstream_delay_s > 0) upstream_cost(p, p->cfg.upstream_delay_s);
        bool example_echo =
            kind == TB_ECHO_EXAMPLE_BEFORE_AUGMENT || kind == TB_ECHO_EXAMPLE_AFTER_AUGMENT;
        p->copies_left = example_echo ? draw_copies(p) : 1;
        if (aug && kind != TB_ECHO_EXAMPLE_BEFORE_AUGMENT)
            augment(p, p->raw_x, p->aug_x, p->raw_y, p->aug_y);
    }
    p->copies_left--;
    if (aug && kind == TB_ECHO_EXAMPLE_BEFORE_AUGMENT) {
        augment(p, p->raw_x, x, p->raw_y, y);
    } else {
        memcpy(x, aug ? p->aug_x : p->raw_x, p->xb);
        memcpy(y, aug ? p->aug_y : p->raw_y, p->yb);
    }
    *row = p->raw_row;
}

/* echo_item, and whether its item is the first copy of a fresh read: what a batch counts as
 * fresh when the item reaches it (echo copies and items still in the buffer are not). */
static bool echo_item_fresh(tb_pipeline *p, unsigned char *x, unsigned char *y, int64_t *row)
{
    int64_t reads = p->reads;
    echo_item(p, x, y, row);
    return p->reads != reads;
}

/* The next item after the shuffle buffer, written to position i of batch b; true if it is the
 * first copy of a fresh read. */
static bool shuffled_item(tb_pipeline *p, hbatch *b, int64_t i)
{
    unsigned char *x = b->x + (size_t)i * p->xb, *y = b->y + (size_t)i * p->yb;
    int64_t size = p->cfg.shuffle_buffer;
    if (size <= 0) return echo_item_fresh(p, x, y, &b->rows[i]);
    while (p->buf_n < size) {
        int64_t k = p->buf_n++;
        p->buf_fresh[k] = echo_item_fresh(p, p->buf_x + (size_t)k * p->xb,
                                          p->buf_y + (size_t)k * p->yb, &p->buf_rows[k]);
    }
    int64_t j = (int64_t)tb_rng_below(&p->shuffle_rng, (uint64_t)size);
    memcpy(x, p->buf_x + (size_t)j * p->xb, p->xb);
    memcpy(y, p->buf_y + (size_t)j * p->yb, p->yb);
    b->rows[i] = p->buf_rows[j];
    bool fresh = p->buf_fresh[j];
    p->buf_fresh[j] = echo_item_fresh(p, p->buf_x + (size_t)j * p->xb,
                                      p->buf_y + (size_t)j * p->yb, &p->buf_rows[j]);
    return fresh;
}

static void copy_batch(const tb_pipeline *p, hbatch *dst, const hbatch *src)
{
    memcpy(dst->x, src->x, (size_t)src->n * p->xb);
    memcpy(dst->y, src->y, (size_t)src->n * p->yb);
    memcpy(dst->rows, src->rows, (size_t)src->n * sizeof *src->rows);
    dst->n = src->n;
}

static void produce(tb_pipeline *p, hbatch *b)
{
    if (p->repeat_left > 0) { /* batch echoing: the same batch again */
        copy_batch(p, b, &p->last);
        b->fresh = 0;
        p->repeat_left--;
        return;
    }
    b->fresh = 0;
    for (int64_t i = 0; i < p->batch; i++) {
        if (atomic_load(&p->stop)) return; /* shutting down: the batch is never delivered */
        b->fresh += shuffled_item(p, b, i);
    }
    b->n = p->batch;
    if (p->cfg.echo == TB_ECHO_BATCH) {
        p->repeat_left = draw_copies(p) - 1;
        if (p->repeat_left > 0) copy_batch(p, &p->last, b);
    }
}

static void *upstream(void *arg)
{
    tb_pipeline *p = arg;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (p->count == p->nslots && !atomic_load(&p->stop)) {
            pthread_cond_wait(&p->not_full, &p->mu);
            p->pace_reset = true;
        }
        if (atomic_load(&p->stop)) break;
        hbatch *slot = &p->slots[(p->head + p->count) % p->nslots];
        pthread_mutex_unlock(&p->mu);
        produce(p, slot); /* the consumer never touches a slot outside [head, head + count) */
        pthread_mutex_lock(&p->mu);
        p->count++;
        pthread_cond_signal(&p->not_empty);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

/* ---- create, next, destroy ------------------------------------------------------------------ */

static bool alloc_batch(hbatch *b, int64_t n, size_t xb, size_t yb)
{
    b->x = malloc((size_t)n * xb);
    b->y = malloc((size_t)n * yb);
    b->rows = malloc((size_t)n * sizeof *b->rows);
    return b->x && b->y && b->rows;
}

static void free_batch(hbatch *b)
{
    free(b->x);
    free(b->y);
    free(b->rows);
}

static tb_status check_config(const tb_pipeline_config *c, const tb_example_layout *lay,
                              int64_t n, tb_error *err)
{
    if (c->batch_size < 1)
        return tb_fail(err, TB_ERR_INVALID, "batch size must be at least 1, got %lld",
                       (long long)c->batch_size);
    if (c->batch_size > n)
        return tb_fail(err, TB_ERR_INVALID, "batch size %lld exceeds the %lld training examples",
                       (long long)c->batch_size, (long long)n);
    if (c->echo_factor != 0 && !(c->echo_factor >= 1 && c->echo_factor <= 1000))
        return tb_fail(err, TB_ERR_INVALID, "echo factor must be in [1, 1000], got %g",
                       c->echo_factor);
    if (c->echo < TB_ECHO_NONE || c->echo > TB_ECHO_BATCH)
        return tb_fail(err, TB_ERR_INVALID, "unknown echo kind %d", (int)c->echo);
    if (c->shuffle_buffer < 0 || c->shuffle_buffer > 10000000)
        return tb_fail(err, TB_ERR_INVALID, "shuffle buffer must be in [0, 1e7], got %lld",
                       (long long)c->shuffle_buffer);
    if (c->shuffle_buffer > n)
        return tb_fail(err, TB_ERR_INVALID,
                       "shuffle buffer %lld exceeds the %lld training examples (filling it "
                       "would read more than an epoch before the first batch): give at most "
                       "%lld",
                       (long long)c->shuffle_buffer, (long long)n, (long long)n);
    if (c->prefetch > 64)
        return tb_fail(err, TB_ERR_INVALID, "prefetch must be at most 64, got %d", c->prefetch);
    if (c->augment && !lay->image)
        return tb_fail(err, TB_ERR_INVALID,
                       "augmentation (crop and flip) applies to image workloads only");
    if (c->augment && lay->target_is_input &&
        (lay->y_dtype != lay->x_dtype || tb_example_y_bytes(lay) != tb_example_x_bytes(lay)))
        return tb_fail(err, TB_ERR_INTERNAL,
                       "a target that is the input must have the input's type and size");
    if (c->crop_padding < 0 || c->crop_padding > 64)
        return tb_fail(err, TB_ERR_INVALID, "crop padding must be in [0, 64], got %d",
                       c->crop_padding);
    if (!(c->upstream_delay_s >= 0 && c->upstream_delay_s < 10))
        return tb_fail(err, TB_ERR_INVALID, "upstream delay must be in [0, 10) s, got %g",
                       c->upstream_delay_s);
    const tb_projection_config *pc = &c->projection;
    if (pc->max_steps < 0 || !(pc->step_size >= 0) || !(pc->tol >= 0) ||
        !(pc->target_error >= 0))
        return tb_fail(err, TB_ERR_INVALID, "projection: max_steps, step_size, tol and "
                       "target_error must not be negative (got %d, %g, %g, %g)",
                       pc->max_steps, pc->step_size, pc->tol, pc->target_error);
    if (!(pc->momentum >= 0 && pc->momentum < 1))
        return tb_fail(err, TB_ERR_INVALID, "projection: momentum = %g is outside [0, 1)",
                       pc->momentum);
    return TB_OK;
}

tb_status tb_pipeline_create(tb_workload *wl, const tb_pipeline_config *cfg, tb_pipeline **out,
                             tb_error *err)
{
    if (!wl || !cfg || !out)
        return tb_fail(err, TB_ERR_INVALID, "pipeline_create: %s is NULL",
                       !wl ? "the workload" : !cfg ? "config" : "out");
    int64_t n = tb_workload_size(wl, TB_SPLIT_TRAIN);
    tb_example_layout lay = tb_workload_layout(wl);
    tb_status st = check_config(cfg, &lay, n, err);
    if (st != TB_OK) return st;
    tb_pipeline *p = calloc(1, sizeof *p);
    if (!p) return tb_fail(err, TB_ERR_NOMEM, "out of memory for the input pipeline");
    p->wl = wl;
    p->cfg = *cfg;
    p->lay = lay;
    p->xb = tb_example_x_bytes(&lay);
    p->yb = tb_example_y_bytes(&lay);
    p->batch = cfg->batch_size;
    p->n = n;
    p->per_epoch = n / p->batch * p->batch;
    p->pos = p->per_epoch; /* the first read starts an epoch */
    p->order_rng = tb_rng_make(cfg->data_order_seed, TB_STREAM_DATA_ORDER);
    p->echo_rng = tb_rng_make(cfg->data_order_seed, STREAM_ECHO);
    p->shuffle_rng = tb_rng_make(cfg->data_order_seed, STREAM_SHUFFLE_BUFFER);
    p->aug_rng = tb_rng_make(cfg->augment_seed, TB_STREAM_AUGMENT);
    p->threaded = cfg->prefetch >= 0;
    p->nslots = p->threaded ? (cfg->prefetch > 0 ? cfg->prefetch : 2) + 1 : 1;
    p->order = malloc((size_t)n * sizeof *p->order);
    p->raw_x = malloc(p->xb);
    p->raw_y = malloc(p->yb);
    p->aug_x = malloc(p->xb);
    p->aug_y = malloc(p->yb);
    p->slots = calloc((size_t)p->nslots, sizeof *p->slots);
    bool ok = p->order && p->raw_x && p->raw_y && p->aug_x && p->aug_y && p->slots;
    for (int i = 0; ok && i < p->nslots; i++)
        ok = alloc_batch(&p->slots[i], p->batch, p->xb, p->yb);
    if (ok && cfg->echo == TB_ECHO_BATCH) ok = alloc_batch(&p->last, p->batch, p->xb, p->yb);
    if (ok && cfg->shuffle_buffer > 0) {
        p->buf_x = malloc((size_t)cfg->shuffle_buffer * p->xb);
        p->buf_y = malloc((size_t)cfg->shuffle_buffer * p->yb);
        p->buf_rows = malloc((size_t)cfg->shuffle_buffer * sizeof *p->buf_rows);
        p->buf_fresh = malloc((size_t)cfg->shuffle_buffer * sizeof *p->buf_fresh);
        ok = p->buf_x && p->buf_y && p->buf_rows && p->buf_fresh;
    }
    atomic_init(&p->stop, false);
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->not_empty, NULL);
    pthread_cond_init(&p->not_full, NULL);
    if (ok && tb_workload_projection_rate(wl) > 0 &&
        (st = tb_projection_stage_create(wl, &cfg->projection, cfg->dropout_seed, &p->proj,
                                         err)) != TB_OK) {
        p->threaded = false; /* no thread yet */
        tb_pipeline_destroy(p);
        return st;
    }
    if (ok && p->threaded && pthread_create(&p->thread, NULL, upstream, p) != 0) {
        p->threaded = false;
        tb_pipeline_destroy(p);
        return tb_fail(err, TB_ERR_INTERNAL, "cannot start the input pipeline's thread");
    }
    if (!ok) {
        p->threaded = false;
        tb_pipeline_destroy(p);
        return tb_fail(err, TB_ERR_NOMEM, "out of memory for the input pipeline");
    }
    *out = p;
    return TB_OK;
}

void tb_pipeline_destroy(tb_pipeline *p)
{
    if (!p) return;
    if (p->threaded) {
        pthread_mutex_lock(&p->mu);
        atomic_store(&p->stop, true);
        pthread_cond_broadcast(&p->not_full);
        pthread_mutex_unlock(&p->mu);
        pthread_join(p->thread, NULL);
    }
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->not_empty);
    pthread_cond_destroy(&p->not_full);
    for (int i = 0; p->slots && i < p->nslots; i++) free_batch(&p->slots[i]);
    free(p->slots);
    free_batch(&p->last);
    free(p->order);
    free(p->raw_x);
    free(p->raw_y);
    free(p->aug_x);
    free(p->aug_y);
    free(p->buf_x);
    free(p->buf_y);
    free(p->buf_rows);
    free(p->buf_fresh);
    tb_projection_stage_destroy(p->proj);
    free(p);
}

tb_status tb_pipeline_next(tb_pipeline *p, tb_tape *tape, tb_batch *out, tb_error *err)
{
    if (!p || !tape || !out)
        return tb_fail(err, TB_ERR_INVALID, "pipeline_next: %s is NULL",
                       !p ? "the pipeline" : !tape ? "the tape" : "out");
    pthread_mutex_lock(&p->mu);
    if (p->held) { /* give back the slot of the previous batch */
        p->head = (p->head + 1) % p->nslots;
        p->count--;
        p->held = false;
        pthread_cond_signal(&p->not_full);
    }
    if (!p->threaded && p->count == 0) {
        p->pace_reset = true;
        produce(p, &p->slots[p->head]);
        p->count++;
    }
    while (p->count == 0) pthread_cond_wait(&p->not_empty, &p->mu);
    hbatch *b = &p->slots[p->head];
    p->held = true;
    pthread_mutex_unlock(&p->mu);
    /* the slot is the consumer's until the next call: projected in place */
    tb_status st = p->proj ? tb_projection_stage_apply(p->proj, b->n, (float *)b->x, err) : TB_OK;
    if (st != TB_OK) return st;
    tb_var *x, *y;
    if (!tb_workload_upload(p->wl, tape, b->n, b->x, b->y, &x, &y))
        return tb_fail(err, tb_tape_status(tape), "input pipeline: %s",
                       tb_tape_error(tape)->message);
    p->fresh_delivered += b->fresh;
    p->batches++;
    out->n = b->n;
    out->inputs = x;
    out->targets = y;
    out->fresh = b->fresh;
    out->rows = b->rows;
    return TB_OK;
}

int64_t tb_pipeline_epoch(const tb_pipeline *p)
{
    return p && p->per_epoch ? (p->fresh_delivered + p->per_epoch - 1) / p->per_epoch : 0;
}
int64_t tb_pipeline_fresh_examples(const tb_pipeline *p) { return p ? p->fresh_delivered : 0; }
int64_t tb_pipeline_batches(const tb_pipeline *p) { return p ? p->batches : 0; }

void tb_pipeline_projection_stats(const tb_pipeline *p, tb_projection_stats *out)
{
    if (out) tb_projection_stage_stats(p ? p->proj : NULL, out);
}
