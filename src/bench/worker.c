/* worker.c: a rank above 0 of a benchmark's MPI job. It asks rank 0 for a trial, runs it in a
 * child process as a benchmark run on one machine does (crash and hang isolation kept), into a
 * scratch store of its own on local disk (it never opens rank 0's store, which its machine may
 * not see), and sends rank 0 the trial's start, each eval as the child records it (looked for
 * every 0.25 s) and its outcome; it beats every TB_WORKER_BEAT_S meanwhile. Its trials' threads
 * come from the launcher's layout: its machine's cores shared among the workers on it (rank 0,
 * which only coordinates, not counted), unless the spec gives them; with --device cuda, the
 * i-th worker of a machine gets its i-th GPU (CUDA_VISIBLE_DEVICES). */
#define _GNU_SOURCE /* gethostname, setenv */
#include "bench/ranks.h"
#include "bench/isolate.h"
#include "core/clock.h"
#include "trainbench/machine.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LOOK_S 0.25

typedef struct worker {
    tb_dist *d;
    const tb_bench_spec *spec;
    tb_submission_ref *const *refs;
    int n_refs;
    tb_trial_options opts;
    char scratch[600];
} worker;

/* What a worker forwarded of its present trial. */
typedef struct forward {
    int64_t global, local; /* the trial's id in rank 0's store and in the scratch store */
    bool started;
    int sent;              /* evals sent */
} forward;

static void remove_scratch(const char *path)
{
    static const char *const suffixes[] = {"", "-wal", "-shm"};
    for (size_t i = 0; i < sizeof suffixes / sizeof *suffixes; i++) {
        char p[700];
        snprintf(p, sizeof p, "%s%s", path, suffixes[i]);
        unlink(p);
    }
}

/* A fresh scratch store holding trial t alone, as planned; *local: its id there. */
static tb_status scratch_plan(worker *w, const tb_trial_record *t, int64_t *local, tb_error *err)
{
    remove_scratch(w->scratch);
    tb_store *s;
    tb_status st = tb_store_open(w->scratch, &s, err);
    if (st != TB_OK) return tb_error_prefix(err, "the worker's scratch store");
    tb_trial_record copy = *t;
    copy.id = 0;
    copy.status = TB_TRIAL_PLANNED;
    st = tb_store_put_benchmark(s, t->benchmark, "{}", err);
    if (st == TB_OK) st = tb_store_plan_trial(s, &copy, err);
    *local = copy.id;
    tb_store_close(s);
    return st;
}

/* Sends rank 0 what is new in the scratch store: the start, the evals not sent; the trial as
 * it is there into *out (may be NULL). */
static tb_status forward_news(worker *w, forward *f, tb_trial_record *out, tb_error *err)
{
    tb_store *s = NULL;
    tb_trial_record rec;
    tb_status st = tb_store_open(w->scratch, &s, err);
    if (st == TB_OK) st = tb_store_trial_get(s, f->local, &rec, err);
    if (st == TB_OK && !f->started && rec.status != TB_TRIAL_PLANNED && rec.attempts > 0) {
        tb_msg_start m = {.id = f->global};
        snprintf(m.code_version, sizeof m.code_version, "%s", rec.code_version);
        snprintf(m.machine, sizeof m.machine, "%s", rec.machine);
        st = tb_dist_send(w->d, 0, TB_MSG_START, &m, sizeof m, err);
        f->started = st == TB_OK;
    }
    tb_eval_record *e = NULL;
    int ne = 0;
    if (st == TB_OK && f->started) st = tb_store_evals(s, f->local, &e, &ne, err);
    for (int i = f->sent; st == TB_OK && i < ne; i++) {
        tb_msg_eval m = {.id = f->global, .eval = e[i]};
        st = tb_dist_send(w->d, 0, TB_MSG_EVAL, &m, sizeof m, err);
        if (st == TB_OK) f->sent = i + 1;
    }
    free(e);
    if (s) tb_store_close(s);
    if (st == TB_OK && out) *out = rec;
    return st;
}

static tb_status send_fail(worker *w, int64_t id, const tb_error *e, tb_error *err)
{
    tb_msg_fail m = {.id = id, .error = *e};
    return tb_dist_send(w->d, 0, TB_MSG_FAIL, &m, sizeof m, err);
}

/* Runs trial t (rank 0's record, its point chosen) and reports it. TB_OK unless MPI failed:
 * the trial's own troubles go to rank 0 (TB_MSG_FAIL), which decides. */
static tb_status run_one(worker *w, const tb_trial_record *t, tb_error *err)
{
    const tb_submission_ref *ref = NULL;
    for (int j = 0; j < w->n_refs; j++)
        if (strcmp(tb_submission_ref_name(w->refs[j]), t->submission) == 0) ref = w->refs[j];
    tb_error terr = {0};
    if (!ref) {
        tb_fail(&terr, TB_ERR_INVALID, "rank %d has no submission %s loaded",
                tb_dist_rank(w->d), t->submission);
        return send_fail(w, t->id, &terr, err);
    }
    forward f = {.global = t->id};
    tb_status tst = scratch_plan(w, t, &f.local, &terr);
    tb_trial_proc p;
    if (tst == TB_OK) tst = tb_trial_spawn(w->scratch, f.local, ref, &w->opts, &p, &terr);
    if (tst != TB_OK) return send_fail(w, t->id, &terr, err);
    double last_look = tb_monotonic_s(), last_beat = last_look;
    tb_status st = TB_OK;
    while (!tb_trial_proc_poll(&p)) {
        const double now = tb_monotonic_s();
        if (st == TB_OK && now - last_look >= LOOK_S) {
            st = forward_news(w, &f, NULL, err);
            last_look = now;
        }
        if (st == TB_OK && now - last_beat >= TB_WORKER_BEAT_S) {
            st = tb_dist_send(w->d, 0, TB_MSG_BEAT, &f.global, sizeof f.global, err);
            last_beat = now;
        }
        tb_child_nap();
    }
    tst = tb_trial_proc_finish(w->scratch, &p, &terr);
    if (st != TB_OK) return st;
    tb_trial_record rec;
    if (tst == TB_OK) tst = forward_news(w, &f, &rec, &terr);
    if (tst != TB_OK) return send_fail(w, t->id, &terr, err);
    rec.id = t->id;
    return tb_dist_send(w->d, 0, TB_MSG_END, &rec, sizeof rec, err);
}

/* Threads and GPU of this worker's trials from the layout: the workers on its machine
 * (here_0: rank 0 is on it too). */
static void layout(worker *w, bool here_0)
{
    const int node_rank = tb_dist_node_rank(w->d) - (here_0 ? 1 : 0);
    const int workers = tb_dist_node_size(w->d) - (here_0 ? 1 : 0);
    if (w->opts.threads == 0) { /* a data-parallel trial's R ranks share the worker's cores */
        /* bound to some of the machine's CPUs (mpirun's or Slurm's binding), those are its
         * share; unbound, the machine's cores shared out among its workers */
        const long cores = sysconf(_SC_NPROCESSORS_ONLN), mine = tb_machine_cpus();
        const long rpt = w->opts.ranks_per_trial > 1 ? w->opts.ranks_per_trial : 1;
        const long share = mine < cores ? rpt : (long)(workers > 0 ? workers : 1) * rpt;
        w->opts.threads = mine / share >= 1 ? (int)(mine / share) : 1;
    }
    if (w->opts.device == TB_DEVICE_CUDA) {
        char gpu[16];
        snprintf(gpu, sizeof gpu, "%d", node_rank > 0 ? node_rank : 0);
        setenv("CUDA_VISIBLE_DEVICES", gpu, 1);
    }
    w->opts.jobs = workers > 1 ? workers : 1; /* trials at once on this machine */
    w->opts.rank = tb_dist_rank(w->d);
    w->opts.ranks = tb_dist_size(w->d);
}

/* Waits for rank 0's next message to this worker into buf; *tag: which. */
static tb_status from_rank_0(worker *w, int *tag, void *buf, size_t cap, tb_error *err)
{
    tb_dist_message m;
    tb_status st = tb_dist_probe(w->d, true, &m, err);
    if (st == TB_OK) st = tb_dist_recv(w->d, &m, buf, cap, err);
    *tag = m.tag;
    return st;
}

tb_status tb_bench_work(tb_dist *d, const tb_bench_spec *spec, tb_submission_ref *const *refs,
                        int n_refs, tb_error *err)
{
    worker w = {.d = d, .spec = spec, .refs = refs, .n_refs = n_refs, .opts = spec->trial};
    w.opts.cpus = NULL;
    char host[64] = "";
    gethostname(host, sizeof host - 1);
    const char *tmp = getenv("TMPDIR");
    snprintf(w.scratch, sizeof w.scratch, "%s/trainbench-worker-%s-%d.db",
             tmp && tmp[0] ? tmp : "/tmp", host, (int)getpid());
    tb_msg_hello hello = {.record_bytes = (int)sizeof(tb_trial_record)};
    snprintf(hello.code_version, sizeof hello.code_version, "%s", tb_code_version());
    snprintf(hello.host, sizeof hello.host, "%s", host);
    tb_status st = tb_dist_send(d, 0, TB_MSG_HELLO, &hello, sizeof hello, err);
    /* rank 0's answer: its host (to lay out this machine), or a refusal */
    tb_msg_hello welcome;
    int tag = 0;
    if (st == TB_OK) st = from_rank_0(&w, &tag, &welcome, sizeof welcome, err);
    if (st != TB_OK || tag == TB_MSG_STOP) return st;
    layout(&w, strcmp(welcome.host, host) == 0);
    tb_trial_record *t = malloc(sizeof *t);
    if (!t) return tb_fail(err, TB_ERR_NOMEM, "out of memory");
    int zero = 0;
    for (;;) {
        st = tb_dist_send(d, 0, TB_MSG_REQUEST, &zero, sizeof zero, err);
        if (st == TB_OK) st = from_rank_0(&w, &tag, t, sizeof *t, err);
        if (st != TB_OK || tag != TB_MSG_ASSIGN) break;
        st = run_one(&w, t, err);
        if (st != TB_OK) break;
    }
    free(t);
    remove_scratch(w.scratch);
    return st;
}
