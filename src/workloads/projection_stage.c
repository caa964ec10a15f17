/* projection_stage.c: the input pipeline's projection stage (docs/DROPOUT.md, "Training on
 * projected samples"): each batch of a projected variant replaced by x*, the input whose clean
 * first hidden layer matches one dropout draw of it, through the weights of the step about to
 * train on the batch. A projection that does not converge is refused and counted; the step
 * then trains on the clean batch. */
#include "workloads/projection_stage.h"

#include "workloads/workload_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* the stage's masks: a stream of the dropout seed of its own (not the forward's dropout) */
#define STREAM_PROJECTION 103

/* The stage's defaults (a setting left 0): Nesterov steps of 1.5 with momentum 0.9 until the
 * relative error is 0.05 (a sixth of the noise's 0.3 at p = 0.3) or stalls, 100 steps at
 * most. On a 128-example batch of the initialised fmnist_mlp, 30 such steps reach 0.055 (plain
 * steps of 0.3: 0.27 after 40); after 1000 Adam steps, 20 reach 0.028 (docs/DROPOUT.md). */
#define DEFAULT_STEP 1.5
#define DEFAULT_MOMENTUM 0.9
#define DEFAULT_TARGET 0.05
#define DEFAULT_MAX_STEPS 100

struct tb_projection_stage {
    tb_workload *wl;
    tb_tape *tape; /* its own: the step's tape holds the step */
    tb_projection_config cfg;
    tb_rng rng;
    float *out;    /* x* of the current batch */
    int64_t cap;   /* examples out holds */
    tb_projection_stats st;
    double sum_steps, sum_initial, sum_final;
};

tb_status tb_projection_stage_create(tb_workload *wl, const tb_projection_config *config,
                                     uint64_t seed, tb_projection_stage **out, tb_error *err)
{
    tb_example_layout lay = tb_workload_layout(wl);
    if (lay.x_dtype != TB_F32)
        return tb_fail(err, TB_ERR_UNSUPPORTED, "%s: the projection stage needs float inputs",
                       wl->vt->info.id);
    tb_projection_stage *s = calloc(1, sizeof *s);
    if (!s) return tb_fail(err, TB_ERR_NOMEM, "out of memory for the projection stage");
    s->wl = wl;
    s->cfg = config ? *config : (tb_projection_config){0};
    s->cfg.rate = tb_workload_projection_rate(wl);
    tb_projection_config *c = &s->cfg;
    if (c->step_size == 0) c->step_size = DEFAULT_STEP;
    if (c->momentum == 0) c->momentum = DEFAULT_MOMENTUM;
    if (c->target_error == 0) c->target_error = DEFAULT_TARGET;
    if (c->max_steps == 0) c->max_steps = DEFAULT_MAX_STEPS;
    s->rng = tb_rng_make(seed, STREAM_PROJECTION);
    tb_status st = tb_tape_create(wl->be, &s->tape, err);
    if (st != TB_OK) {
        free(s);
        return st;
    }
    *out = s;
    return TB_OK;
}

void tb_projection_stage_destroy(tb_projection_stage *s)
{
    if (!s) return;
    tb_tape_destroy(s->tape);
    free(s->out);
    free(s);
}

static void count(tb_projection_stage *s, const tb_projection_report *r)
{
    s->st.projected++;
    s->sum_steps += r->steps;
    s->sum_initial += r->initial_error;
    s->sum_final += r->final_error;
    if (r->steps > s->st.max_steps) s->st.max_steps = r->steps;
    double k = (double)s->st.projected;
    s->st.mean_steps = s->sum_steps / k;
    s->st.mean_initial_error = s->sum_initial / k;
    s->st.mean_final_error = s->sum_final / k;
}

tb_status tb_projection_stage_apply(tb_projection_stage *s, int64_t n, float *x, tb_error *err)
{
    tb_example_layout lay = tb_workload_layout(s->wl);
    int64_t per = lay.x_shape[0] * lay.x_shape[1] * lay.x_shape[2];
    if (n > s->cap) {
        float *grown = realloc(s->out, (size_t)(n * per) * sizeof *grown);
        if (!grown) return tb_fail(err, TB_ERR_NOMEM, "out of memory for the projection stage");
        s->out = grown;
        s->cap = n;
    }
    s->st.batches++;
    tb_projection_report r;
    tb_error perr = {0};
    tb_status st = tb_dropout_project(s->wl, s->tape, n, x, &s->cfg, &s->rng, s->out, &r, &perr);
    if (st == TB_ERR_NUMERIC) { /* refused: the clean batch is trained on, and counted */
        s->st.unconverged++;
        snprintf(s->st.last_refusal, sizeof s->st.last_refusal, "batch %lld: %.200s",
                 (long long)s->st.batches, perr.message);
        return TB_OK;
    }
    if (st != TB_OK)
        return tb_fail(err, st, "projection stage, batch %lld: %s", (long long)s->st.batches,
                       perr.message);
    count(s, &r);
    memcpy(x, s->out, (size_t)(n * per) * sizeof *x);
    return TB_OK;
}

void tb_projection_stage_stats(const tb_projection_stage *s, tb_projection_stats *out)
{
    *out = s ? s->st : (tb_projection_stats){0};
}
