/* execute.c: running a planned benchmark: every unfinished trial in a child process of its own,
 * spec->trial.jobs of them at once (one by default), in the interleaved order (order.c),
 * finished trials reused. With several jobs the order is the order trials start in; a trial
 * starts once a job is free and it may: a gp study's trial planned without a point (its point
 * chosen from the study's trials before it) waits until they have all finished, so that it
 * sees what it would see run alone, and trials of other studies go ahead meanwhile; a
 * calibration window waits until no trial runs, so that it never shares the machine with one.
 * Each job's trials are pinned to its share of spec->trial.cpus when that is given. */
#include "bench/bench_impl.h"
#include "bench/isolate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct job {
    bool busy;
    int pos;                /* its trial's index into plan->trials */
    tb_trial_proc proc;
    tb_trial_options opts;  /* the spec's, with this job's CPUs */
    char cpus[TB_BENCH_CPUS_MAX * 5];
} job;

typedef struct executor {
    const tb_bench_plan *plan;
    job *jobs;
    int n_jobs;
    bool *started;          /* by position in plan->order */
    int next;               /* the first position not started */
    int reported;           /* trials reported to progress */
    tb_bench_calibration_state cal;
    tb_bench_progress_fn progress;
    void *user;
    tb_bench_summary *sum;
} executor;

/* What the next position in the order can do now. */
typedef enum next_step { NEXT_NONE, NEXT_WAIT, NEXT_DONE } next_step;

static void find_ref(const tb_bench_plan *p, const char *submission,
                     const tb_submission_ref **ref, const tb_search_space **space)
{
    *ref = NULL;
    *space = NULL;
    for (int j = 0; j < p->n_refs; j++)
        if (strcmp(tb_submission_ref_name(p->refs[j]), submission) == 0) {
            *ref = p->refs[j];
            *space = p->spaces ? p->spaces[j] : NULL;
        }
}

static int busy_jobs(const executor *x)
{
    int n = 0;
    for (int i = 0; i < x->n_jobs; i++) n += x->jobs[i].busy;
    return n;
}

static bool finished(const tb_trial_record *t)
{
    return t->status == TB_TRIAL_DONE || t->status == TB_TRIAL_FAILED;
}

bool tb_bench_study_settled(const tb_trial_record *trials, int n, const tb_trial_record *t)
{
    for (int i = 0; i < n; i++) {
        const tb_trial_record *o = &trials[i];
        if (o->study == t->study && o->trial < t->trial &&
            o->status != TB_TRIAL_DONE && o->status != TB_TRIAL_FAILED &&
            strcmp(o->submission, t->submission) == 0 && strcmp(o->workload, t->workload) == 0 &&
            strcmp(o->ruleset, t->ruleset) == 0)
            return false;
    }
    return true;
}

static void report(executor *x, const tb_trial_record *t, bool reused)
{
    if (reused) x->sum->reused++;
    else x->sum->ran++;
    if (t->status == TB_TRIAL_FAILED) x->sum->failed++;
    x->reported++;
    if (x->progress) {
        tb_bench_event ev = {t, x->reported, x->plan->n, reused};
        x->progress(x->user, &ev);
    }
}

/* Reaps every job whose trial's process has ended: its outcome recorded (or the store's
 * failure returned) and the trial read back. */
static tb_status reap(executor *x, tb_error *err)
{
    tb_status first = TB_OK;
    for (int i = 0; i < x->n_jobs; i++) {
        job *j = &x->jobs[i];
        if (!j->busy || !tb_trial_proc_poll(&j->proc)) continue;
        j->busy = false;
        tb_error e = {0};
        tb_trial_record *t = &x->plan->trials[j->pos];
        tb_status st = tb_trial_proc_finish(x->plan->store_path, &j->proc, &e);
        tb_store *rs;
        if (st == TB_OK && (st = tb_store_open(x->plan->store_path, &rs, &e)) == TB_OK) {
            st = tb_store_trial_get(rs, t->id, t, &e);
            tb_store_close(rs);
        }
        if (st == TB_OK) report(x, t, false);
        else x->sum->ran++;
        if (st != TB_OK && first == TB_OK) {
            first = st;
            if (err) *err = e;
        }
    }
    return first;
}

/* Starts trial t (its calibration window first when one is due, its gp point chosen when it
 * has none) in the free job j. */
static tb_status start(executor *x, job *j, int pos, const tb_submission_ref *ref,
                       const tb_search_space *space, tb_error *err)
{
    const tb_bench_plan *p = x->plan;
    const tb_bench_spec *s = p->spec;
    tb_trial_record *t = &p->trials[pos];
    tb_status st = tb_bench_calibrate_due(&x->cal, p->store_path, s, t, true, err);
    const bool gp = s->sampler == TB_SAMPLER_GP && s->ruleset == TB_RULESET_EXTERNAL;
    tb_store *ps; /* a gp study's next point, from the trials finished before it */
    if (st == TB_OK && gp && t->hparams.count == 0 &&
        (st = tb_store_open(p->store_path, &ps, err)) == TB_OK) {
        st = tb_bench_gp_point(ps, s, space, t, err);
        tb_store_close(ps);
    }
    if (st == TB_OK) st = tb_trial_spawn(p->store_path, t->id, ref, &j->opts, &j->proc, err);
    if (st == TB_OK) {
        j->busy = true;
        j->pos = pos;
    } else {
        x->sum->ran++;
    }
    return st;
}

/* Takes the first position of the order that can go now: a finished trial reported, an
 * unfinished one started in the free job j. */
static next_step step_next(executor *x, job *j, tb_status *st, tb_error *err)
{
    const tb_bench_plan *p = x->plan;
    while (x->next < p->n && x->started[x->next]) x->next++;
    if (x->next >= p->n) return NEXT_NONE;
    const bool busy = busy_jobs(x) > 0;
    for (int k = x->next; k < p->n; k++) {
        if (x->started[k]) continue;
        tb_trial_record *t = &p->trials[p->order[k]];
        const tb_submission_ref *ref;
        const tb_search_space *space;
        find_ref(p, t->submission, &ref, &space);
        const bool run = !finished(t) && ref;
        if (run && p->spec->sampler == TB_SAMPLER_GP && t->hparams.count == 0 &&
            !tb_bench_study_settled(p->trials, p->n, t))
            continue; /* its point needs the trials before it: later ones may go first */
        if (busy && tb_bench_calibrate_may_run(&x->cal, p->spec, t, run))
            return NEXT_WAIT; /* a window runs alone: the jobs end first */
        x->started[k] = true;
        if (run) {
            *st = start(x, j, p->order[k], ref, space, err);
        } else {
            *st = tb_bench_calibrate_due(&x->cal, p->store_path, p->spec, t, false, err);
            if (*st == TB_OK) report(x, t, true);
        }
        return NEXT_DONE;
    }
    return NEXT_WAIT;
}

static job *free_job(executor *x)
{
    for (int i = 0; i < x->n_jobs; i++)
        if (!x->jobs[i].busy) return &x->jobs[i];
    return NULL;
}

/* Each job's options: the spec's, pinned to its share of the spec's CPUs. */
static tb_status jobs_init(executor *x, tb_error *err)
{
    const tb_trial_options *o = &x->plan->spec->trial;
    int *cpus = NULL, n_cpus = 0;
    tb_status st = TB_OK;
    if (o->cpus) {
        cpus = malloc(TB_BENCH_CPUS_MAX * sizeof *cpus);
        st = cpus ? tb_bench_cpus_parse(o->cpus, cpus, &n_cpus, err)
                  : tb_fail(err, TB_ERR_NOMEM, "out of memory");
        if (st == TB_OK && n_cpus < x->n_jobs)
            st = tb_fail(err, TB_ERR_INVALID, "%d jobs need at least as many CPUs; the list "
                         "'%s' has %d", x->n_jobs, o->cpus, n_cpus);
    }
    for (int i = 0; st == TB_OK && i < x->n_jobs; i++) {
        job *j = &x->jobs[i];
        j->opts = *o;
        j->opts.jobs = x->n_jobs;
        if (o->cpus) {
            tb_bench_cpus_share(cpus, n_cpus, x->n_jobs, i, j->cpus, sizeof j->cpus);
            j->opts.cpus = j->cpus;
        }
    }
    free(cpus);
    return st;
}

tb_status tb_bench_execute(const tb_bench_plan *plan, tb_bench_progress_fn progress, void *user,
                           tb_bench_summary *sum, tb_error *err)
{
    executor x;
    memset(&x, 0, sizeof x);
    x.plan = plan;
    x.progress = progress;
    x.user = user;
    x.sum = sum;
    x.n_jobs = plan->spec->trial.jobs > 1 ? plan->spec->trial.jobs : 1;
    x.jobs = calloc((size_t)x.n_jobs, sizeof *x.jobs);
    x.started = calloc((size_t)(plan->n > 0 ? plan->n : 1), sizeof *x.started);
    tb_status st = x.jobs && x.started ? jobs_init(&x, err)
                                       : tb_fail(err, TB_ERR_NOMEM, "out of memory");
    bool fresh = st == TB_OK; /* no error yet: more trials may start */
    for (;;) {
        tb_status rst = reap(&x, fresh ? err : NULL);
        if (fresh && rst != TB_OK) st = rst;
        fresh = st == TB_OK;
        next_step next = NEXT_DONE;
        job *j;
        while (fresh && (j = free_job(&x)) && (next = step_next(&x, j, &st, err)) == NEXT_DONE)
            fresh = st == TB_OK;
        fresh = st == TB_OK;
        const int busy = busy_jobs(&x);
        if (busy == 0 && (!fresh || next == NEXT_NONE)) break;
        if (busy == 0 && next == NEXT_WAIT) { /* cannot happen: a guard against a loop */
            st = tb_fail(err, TB_ERR_INVALID, "bench: no trial can start and none runs");
            break;
        }
        tb_child_nap();
    }
    free(x.started);
    free(x.jobs);
    return st;
}
