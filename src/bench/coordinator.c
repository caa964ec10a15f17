/* coordinator.c: rank 0 of a benchmark's MPI job. It owns the store: it hands the planned
 * trials to the workers (the other ranks) in the interleaved order as they ask, a gp study's
 * trial planned without a point only once the study's trials before it finished (its point
 * chosen here, as a run on one machine chooses it), and writes what the workers send as it
 * comes: each trial's start, its evals, its outcome. A worker is checked first (the same build
 * as rank 0's, or it is refused with both versions named and the benchmark stops). A worker
 * that sends nothing for the worker timeout while it holds a trial is lost: its trial goes
 * back to the queue once (a later start drops its evals), and is recorded failed, with the
 * reason, when the worker it was given to next is lost too; a lost worker gets no more
 * trials: what it sends is ignored, and it is told to stop when it asks for another (rank 0
 * waits for that, as MPI_Finalize would). A worker's report that the machine failed (its data missing, its disk full) stops
 * the benchmark as on one machine: no more trials are handed out, those running finish, and
 * the trial is left for a rerun. */
#define _GNU_SOURCE /* gethostname */
#include "bench/ranks.h"
#include "bench/isolate.h"
#include "core/clock.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct wstate {
    bool hello;       /* checked and welcomed */
    bool waiting;     /* asked for a trial, not answered */
    bool stopped;     /* told to stop */
    bool lost;
    int pos;          /* the position (in plan->order) of the trial it runs, or -1 */
    double heard;     /* when it last sent anything */
    char host[64];
} wstate;

typedef struct coord {
    const tb_bench_plan *plan;
    tb_dist *d;
    double timeout;
    wstate *w;        /* by rank (0 unused) */
    bool *started;    /* by position in plan->order */
    int *requeued;    /* by position */
    int next;
    tb_store *store;
    bool stopping;    /* an error: no more trials handed out */
    tb_status st;
    tb_error *err;
    tb_bench_progress_fn progress;
    void *user;
    tb_bench_summary *sum;
    int reported;
} coord;

/* The first error is the benchmark's; no trial is handed out after it. */
static void fail(coord *c, tb_status st, const tb_error *e)
{
    if (st == TB_OK) return;
    if (c->st == TB_OK) {
        c->st = st;
        if (c->err && e) *c->err = *e;
    }
    c->stopping = true;
}

static void report(coord *c, const tb_trial_record *t, bool reused)
{
    if (reused) c->sum->reused++;
    else c->sum->ran++;
    if (t->status == TB_TRIAL_FAILED) c->sum->failed++;
    c->reported++;
    if (c->progress) {
        tb_bench_event ev = {t, c->reported, c->plan->n, reused};
        c->progress(c->user, &ev);
    }
}

static tb_trial_record *trial_at(const coord *c, int pos)
{
    return &c->plan->trials[c->plan->order[pos]];
}

static bool has_ref(const coord *c, const char *submission)
{
    for (int j = 0; j < c->plan->n_refs; j++)
        if (strcmp(tb_submission_ref_name(c->plan->refs[j]), submission) == 0) return true;
    return false;
}

static const tb_search_space *space_of(const coord *c, const char *submission)
{
    for (int j = 0; c->plan->spaces && j < c->plan->n_refs; j++)
        if (strcmp(tb_submission_ref_name(c->plan->refs[j]), submission) == 0)
            return c->plan->spaces[j];
    return NULL;
}

/* The next position to hand out (finished trials before it reported), or -1 for none now;
 * *left: whether any trial is still to be handed out. */
static int next_ready(coord *c, bool *left)
{
    const tb_bench_plan *p = c->plan;
    *left = false;
    for (int k = c->next; k < p->n; k++) {
        if (c->started[k]) {
            if (k == c->next) c->next++;
            continue;
        }
        tb_trial_record *t = trial_at(c, k);
        bool run = t->status != TB_TRIAL_DONE && t->status != TB_TRIAL_FAILED &&
                   has_ref(c, t->submission);
        if (!run) { /* finished in an earlier run (or its submission skipped) */
            c->started[k] = true;
            report(c, t, true);
            continue;
        }
        *left = true;
        if (p->spec->sampler == TB_SAMPLER_GP && t->hparams.count == 0 &&
            !tb_bench_study_settled(p->trials, p->n, t))
            continue;
        return k;
    }
    return -1;
}

static tb_status send_stop(coord *c, int rank, int why)
{
    c->w[rank].stopped = true;
    c->w[rank].waiting = false;
    tb_error e = {0};
    tb_status st = tb_dist_send(c->d, rank, TB_MSG_STOP, &why, sizeof why, &e);
    if (st != TB_OK) fail(c, st, &e);
    return st;
}

/* Hands out trials to the workers waiting for one; tells them to stop when none is left. */
static void hand_out(coord *c)
{
    for (int r = 1; r < tb_dist_size(c->d); r++) {
        wstate *w = &c->w[r];
        if (!w->waiting || w->lost) continue;
        bool left;
        int k = c->stopping ? -1 : next_ready(c, &left);
        if (k < 0) {
            if (c->stopping || !left) send_stop(c, r, 0);
            continue; /* a gp trial waits for its study: this worker waits too */
        }
        tb_trial_record *t = trial_at(c, k);
        tb_error e = {0};
        tb_status st = TB_OK;
        const bool gp = c->plan->spec->sampler == TB_SAMPLER_GP &&
                        c->plan->spec->ruleset == TB_RULESET_EXTERNAL;
        if (gp && t->hparams.count == 0)
            st = tb_bench_gp_point(c->store, c->plan->spec, space_of(c, t->submission), t, &e);
        if (st == TB_OK) st = tb_dist_send(c->d, r, TB_MSG_ASSIGN, t, sizeof *t, &e);
        if (st != TB_OK) {
            fail(c, st, &e);
            continue;
        }
        c->started[k] = true;
        w->waiting = false;
        w->pos = k;
        w->heard = tb_monotonic_s();
    }
}

/* A worker's first message: the same build as this one's, or refused. */
static void hello(coord *c, int r, const tb_msg_hello *h)
{
    wstate *w = &c->w[r];
    snprintf(w->host, sizeof w->host, "%.63s", h->host);
    if (strcmp(h->code_version, tb_code_version()) != 0 ||
        h->record_bytes != (int)sizeof(tb_trial_record)) {
        tb_error e = {0};
        tb_status st = tb_fail(&e, TB_ERR_INVALID,
                               "rank %d (host %s) runs trainbench %s, rank 0 runs %s: every "
                               "rank of a benchmark must run the same build", r, w->host,
                               h->code_version, tb_code_version());
        fail(c, st, &e);
        send_stop(c, r, 1);
        return;
    }
    w->hello = true;
    tb_msg_hello me = {.record_bytes = (int)sizeof(tb_trial_record)};
    snprintf(me.code_version, sizeof me.code_version, "%s", tb_code_version());
    gethostname(me.host, sizeof me.host - 1);
    tb_error e = {0};
    tb_status st = tb_dist_send(c->d, r, TB_MSG_HELLO, &me, sizeof me, &e);
    if (st != TB_OK) fail(c, st, &e);
}

/* The outcome a worker sent: written, the trial read back and reported. */
static void outcome(coord *c, int r, const tb_trial_record *rec)
{
    wstate *w = &c->w[r];
    tb_trial_record *t = trial_at(c, w->pos);
    tb_error e = {0};
    tb_status st = tb_store_trial_hparams(c->store, t->id, &rec->resolved_hparams,
                                          &rec->default_hparams, &e);
    if (st == TB_OK && isfinite(rec->wall_time))
        st = tb_store_trial_conditions(c->store, t->id, rec, &e);
    if (st == TB_OK)
        st = tb_store_trial_finish(c->store, t->id, rec->status, rec->reason, rec->reached,
                                   rec->time_to_target, rec->submission_time, rec->steps, &e);
    if (st == TB_OK) st = tb_store_trial_get(c->store, t->id, t, &e);
    w->pos = -1;
    if (st == TB_OK) report(c, t, false);
    else c->sum->ran++;
    fail(c, st, &e);
}

/* Receives one message and does what it says. */
static void handle(coord *c, const tb_dist_message *m)
{
    union {
        tb_msg_hello hello;
        tb_msg_start start;
        tb_msg_eval eval;
        tb_msg_fail failed;
        tb_trial_record rec;
        int64_t id;
        int i;
    } *b = malloc(sizeof *b);
    tb_error e = {0};
    tb_status st = b ? tb_dist_recv(c->d, m, b, sizeof *b, &e)
                     : tb_fail(&e, TB_ERR_NOMEM, "out of memory");
    if (st != TB_OK) {
        fail(c, st, &e);
        free(b);
        return;
    }
    const int r = m->source;
    wstate *w = &c->w[r];
    w->heard = tb_monotonic_s();
    /* a lost worker's news of a trial since handed to another is not the trial's */
    const int64_t mine = w->pos >= 0 && !w->lost ? trial_at(c, w->pos)->id : -1;
    switch (m->tag) {
    case TB_MSG_HELLO: hello(c, r, &b->hello); break;
    case TB_MSG_REQUEST:
        if (w->lost && !w->stopped) send_stop(c, r, 0);
        else if (!w->stopped && w->hello) w->waiting = true;
        break;
    case TB_MSG_START:
        if (b->start.id == mine)
            st = tb_store_trial_start(c->store, mine, b->start.code_version, b->start.machine,
                                      &e);
        break;
    case TB_MSG_EVAL:
        if (b->eval.id == mine) st = tb_store_add_eval(c->store, mine, &b->eval.eval, &e);
        break;
    case TB_MSG_END:
        if (b->rec.id == mine) outcome(c, r, &b->rec);
        break;
    case TB_MSG_FAIL:
        if (b->failed.id == mine) {
            const tb_trial_record *t = trial_at(c, w->pos);
            b->failed.error.message[sizeof b->failed.error.message - 1] = 0;
            st = tb_fail(&e, b->failed.error.status ? b->failed.error.status : TB_ERR_IO,
                         "trial %lld (%s on %s, study %d, trial %d) on rank %d (host %s), left "
                         "unfinished to rerun: %s", (long long)t->id, t->submission,
                         t->workload, t->study, t->trial, r, w->host,
                         b->failed.error.message);
            w->pos = -1;
        }
        break;
    default: break; /* beats: heard */
    }
    fail(c, st, &e);
    free(b);
}

/* Workers that hold a trial and sent nothing for the timeout: lost, their trial re-queued
 * once, or failed. */
static void find_lost(coord *c)
{
    const double now = tb_monotonic_s();
    for (int r = 1; r < tb_dist_size(c->d); r++) {
        wstate *w = &c->w[r];
        if (w->lost || w->pos < 0 || now - w->heard <= c->timeout) continue;
        w->lost = true;
        const int k = w->pos;
        w->pos = -1;
        tb_trial_record *t = trial_at(c, k);
        if (c->requeued[k]++ < 1) {
            c->started[k] = false; /* handed out again; its start drops its evals */
            if (k < c->next) c->next = k;
        } else {
            char reason[400];
            snprintf(reason, sizeof reason,
                     "lost: the worker running it (rank %d on host %s) sent nothing for %g s, "
                     "as did the worker before it: the trial was re-queued once and is not "
                     "run again", r, w->host, c->timeout);
            tb_error e = {0};
            tb_status st = tb_store_trial_finish(c->store, t->id, TB_TRIAL_FAILED, reason, false,
                                                 INFINITY, 0, 0, &e);
            if (st == TB_OK) st = tb_store_trial_get(c->store, t->id, t, &e);
            if (st == TB_OK) report(c, t, false);
            fail(c, st, &e);
        }
        /* if it comes back it is told to stop when it next asks for a trial; until then
         * rank 0 goes on receiving (MPI_Finalize waits for it in any case) */
    }
}

/* Whether every worker has been told to stop (a lost one too, once it asked again). */
static bool all_stopped(const coord *c)
{
    for (int r = 1; r < tb_dist_size(c->d); r++)
        if (!c->w[r].stopped) return false;
    return true;
}

tb_status tb_bench_coordinate(const tb_bench_plan *plan, tb_dist *d, double worker_timeout_s,
                              tb_bench_progress_fn progress, void *user, tb_bench_summary *sum,
                              tb_error *err)
{
    const int size = tb_dist_size(d);
    coord c = {.plan = plan, .d = d, .progress = progress, .user = user, .sum = sum,
               .err = err, .timeout = worker_timeout_s > 0 ? worker_timeout_s : 120};
    c.w = calloc((size_t)size, sizeof *c.w);
    c.started = calloc((size_t)(plan->n > 0 ? plan->n : 1), sizeof *c.started);
    c.requeued = calloc((size_t)(plan->n > 0 ? plan->n : 1), sizeof *c.requeued);
    tb_error e = {0};
    tb_status st = c.w && c.started && c.requeued ? tb_store_open(plan->store_path, &c.store, &e)
                                                  : tb_fail(&e, TB_ERR_NOMEM, "out of memory");
    fail(&c, st, &e);
    for (int r = 1; c.w && r < size; r++) c.w[r].pos = -1;
    while (c.w && !all_stopped(&c)) {
        tb_dist_message m;
        st = tb_dist_probe(d, false, &m, &e);
        if (st != TB_OK) {
            fail(&c, st, &e);
            break; /* MPI itself failed: the job is over */
        }
        if (m.waiting) {
            handle(&c, &m);
            continue; /* everything waiting first */
        }
        find_lost(&c);
        hand_out(&c);
        if (!all_stopped(&c)) tb_child_nap();
    }
    int left = 0; /* trials never handed out: every worker was lost */
    for (int k = 0; c.started && k < plan->n; k++) left += !c.started[k];
    if (c.st == TB_OK && left > 0)
        fail(&c, tb_fail(&e, TB_ERR_IO, "every worker rank was lost (sent nothing for %g s while "
                         "it held a trial): %d trials were not run; run the same command again "
                         "to run them", c.timeout, left), &e);
    if (c.store) tb_store_close(c.store);
    free(c.w);
    free(c.started);
    free(c.requeued);
    return c.st;
}

void tb_bench_dismiss(tb_dist *d)
{
    tb_msg_hello *h = malloc(sizeof(tb_trial_record) + sizeof *h);
    int left = tb_dist_size(d) - 1, why = 1;
    while (h && left > 0) {
        tb_dist_message m;
        if (tb_dist_probe(d, true, &m, NULL) != TB_OK ||
            tb_dist_recv(d, &m, h, sizeof(tb_trial_record) + sizeof *h, NULL) != TB_OK)
            break;
        if (m.tag != TB_MSG_HELLO) continue;
        tb_dist_send(d, m.source, TB_MSG_STOP, &why, sizeof why, NULL);
        left--;
    }
    free(h);
}
