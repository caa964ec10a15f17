/* benchmark.c: planning a benchmark into the store (trials, their hyperparameter points and
 * seeds, before anything runs) and handing it to the executor (execute.c: every unfinished
 * trial in a child process, in interleaved order, finished ones reused). Also the presets. */
/* realpath */
#define _XOPEN_SOURCE 700

#include "bench/bench_impl.h"
#include "bench/pysub.h"
#include "bench/isolate.h"
#include "bench/ranks.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

tb_bench_spec tb_bench_spec_default(void)
{
    tb_bench_spec s;
    memset(&s, 0, sizeof s);
    s.name = "default";
    s.studies = 1;
    s.trials = 1;
    return s;
}

tb_status tb_bench_preset(const char *preset, tb_bench_spec *s, tb_error *err)
{
    if (!preset || !s)
        return tb_fail(err, TB_ERR_INVALID, "bench_preset: %s is NULL",
                       preset ? "the spec" : "the preset's name");
    if (strcmp(preset, "quick") == 0) {
        s->ruleset = TB_RULESET_EXTERNAL;
        s->studies = 2;
        s->trials = 1;
        s->budget_s = 15;
        s->quick_targets = true;
        s->eval_period_s = 1;
        s->run_to_budget = false;
        s->trial.eval_train_examples = 1000;
        s->trial.eval_validation_examples = 2000;
        s->trial.eval_test_examples = 2000;
    } else if (strcmp(preset, "full") == 0) {
        s->ruleset = TB_RULESET_EXTERNAL;
        s->studies = 5;
        s->trials = 5;
        s->budget_s = 0;
        s->quick_targets = false;
        s->eval_period_s = 0;
        s->trial.eval_train_examples = 0;
        s->trial.eval_validation_examples = 0;
        s->trial.eval_test_examples = 0;
    } else {
        return tb_fail(err, TB_ERR_INVALID, "unknown preset '%s' (quick or full)", preset);
    }
    return TB_OK;
}

/* Seeds of a trial: one per source, from the benchmark seed, the workload, the study and the
 * trial, not the submission: every submission sees the same inits and data orders (common
 * random numbers). The split is fixed per benchmark so targets mean the same everywhere. */
static void trial_seeds(uint64_t seed, const char *workload, int study, int trial,
                        uint64_t *out)
{
    const uint64_t which = ((uint64_t)study << 32) | (uint32_t)trial;
    uint64_t base =
        tb_bench_mix(seed ^ tb_bench_mix(tb_bench_hash(workload) ^ tb_bench_mix(which)));
    /* derived seeds keep 53 bits (as they always had); the benchmark seed is used whole: the
     * store and the exports write every seed as an exact integer */
    for (int i = 0; i < TB_STREAM_COUNT; i++) out[i] = tb_bench_mix(base + (uint64_t)i) >> 11;
    out[TB_STREAM_SPLIT] = seed;
    out[TB_STREAM_HPARAM] = seed;
}

/* ---- planning ---------------------------------------------------------------------------------- */
/* "fnv1a64:<hex>" of the search space in a canonical form (cJSON's unformatted print), so that
 * reformatting the file changes nothing and any edit of a value or a name does. */
static void search_space_hash(const char *text, char *buf, size_t cap)
{
    cJSON *o = cJSON_Parse(text);
    char *canon = o ? cJSON_PrintUnformatted(o) : NULL;
    snprintf(buf, cap, "fnv1a64:%016llx",
             (unsigned long long)tb_bench_hash(canon ? canon : text));
    free(canon);
    cJSON_Delete(o);
}

/* The spec of a benchmark as stored: everything that changes a trial's outcome, so that a run
 * whose settings differ is refused instead of reusing trials planned and run with others. */
static char *spec_json(const tb_bench_spec *s, const char *const *wls, int n_wl,
                       tb_submission_ref *const *refs, int n_refs)
{
    cJSON *o = cJSON_CreateObject();
    cJSON *subs = cJSON_AddArrayToObject(o, "submissions");
    for (int i = 0; i < s->n_submissions; i++)
        cJSON_AddItemToArray(subs, cJSON_CreateString(s->submissions[i]));
    cJSON *w = cJSON_AddArrayToObject(o, "workloads");
    for (int i = 0; i < n_wl; i++) cJSON_AddItemToArray(w, cJSON_CreateString(wls[i]));
    cJSON_AddStringToObject(o, "ruleset", tb_ruleset_name(s->ruleset));
    cJSON_AddNumberToObject(o, "studies", s->studies);
    cJSON_AddNumberToObject(o, "trials", s->trials);
    cJSON_AddNumberToObject(o, "budget_s", s->budget_s);
    cJSON_AddBoolToObject(o, "quick_targets", s->quick_targets);
    cJSON_AddNumberToObject(o, "eval_period_s", s->eval_period_s);
    cJSON_AddBoolToObject(o, "run_to_budget", s->run_to_budget);
    char seed[24]; /* exact: a double holds only 53 bits */
    snprintf(seed, sizeof seed, "%llu", (unsigned long long)s->seed);
    cJSON_AddRawToObject(o, "seed", seed);
    cJSON_AddNumberToObject(o, "eval_train_examples", (double)s->trial.eval_train_examples);
    cJSON_AddNumberToObject(o, "eval_validation_examples",
                            (double)s->trial.eval_validation_examples);
    cJSON_AddNumberToObject(o, "eval_test_examples", (double)s->trial.eval_test_examples);
    cJSON_AddNumberToObject(o, "timeout_s", s->trial.timeout_s);
    if (s->trial.hang_s > 0) /* (absent for the default: older specs stay valid) */
        cJSON_AddNumberToObject(o, "hang_s", s->trial.hang_s);
    if (s->trial.setup_s > 0) /* (absent for the default: older specs stay valid) */
        cJSON_AddNumberToObject(o, "setup_s", s->trial.setup_s);
    if (s->trial.eval_every_steps > 0) /* (absent for the eval period: older specs stay valid) */
        cJSON_AddNumberToObject(o, "eval_every_steps", (double)s->trial.eval_every_steps);
    cJSON_AddNumberToObject(o, "threads", s->trial.threads);
    if (s->trial.ranks_per_trial > 1) /* (absent for 1: older specs stay valid) */
        cJSON_AddNumberToObject(o, "ranks_per_trial", s->trial.ranks_per_trial);
    cJSON_AddStringToObject(o, "device", tb_device_name(s->trial.device));
    if (s->sampler != TB_SAMPLER_HALTON) { /* (absent for halton: older specs stay valid) */
        cJSON_AddStringToObject(o, "sampler", tb_bench_sampler_name(s->sampler));
        cJSON_AddNumberToObject(o, "gp_initial", tb_bench_gp_initial(s));
        cJSON_AddBoolToObject(o, "gp_prior", s->gp_prior);
        if (s->gp_prior && s->prior_workloads) {
            cJSON *pw = cJSON_AddArrayToObject(o, "prior_workloads");
            for (int i = 0; i < s->n_prior_workloads; i++)
                cJSON_AddItemToArray(pw, cJSON_CreateString(s->prior_workloads[i]));
        }
    }
    if (s->ruleset == TB_RULESET_EXTERNAL) {
        /* the points each trial trains with come from these */
        cJSON *spaces = cJSON_AddObjectToObject(o, "search_spaces");
        for (int i = 0; i < n_refs; i++) {
            const char *text = tb_submission_ref_search_space(refs[i]);
            char hash[40] = "none";
            if (text) search_space_hash(text, hash, sizeof hash);
            cJSON_AddStringToObject(spaces, tb_submission_ref_name(refs[i]), hash);
        }
    }
    char *text = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return text;
}

static tb_status plan_submission(tb_store *store, const tb_bench_spec *s,
                                 const tb_submission_ref *ref, const char *const *wls, int n_wl,
                                 tb_bench_summary *sum, tb_error *err)
{
    bool self = s->ruleset == TB_RULESET_SELF;
    bool gp = !self && s->sampler == TB_SAMPLER_GP;
    int trials = 0;
    tb_hparams *points = NULL;
    tb_search_space *space = NULL;
    char note[512] = "";
    tb_status st = tb_bench_plan_points(s, ref, &points, &trials, &space, note, sizeof note, err);
    if (st == TB_OK && note[0]) {
        size_t used = strlen(sum->notes);
        snprintf(sum->notes + used, sizeof sum->notes - used, "%s%s", used ? "\n" : "", note);
    }
    int n = s->studies * trials;
    for (int w = 0; st == TB_OK && w < n_wl; w++) {
        tb_bench_workload bwv;
        tb_bench_workload_find(wls[w], &bwv);
        const tb_bench_workload *bw = &bwv;
        for (int k = 0; st == TB_OK && k < n; k++) {
            tb_trial_record t;
            memset(&t, 0, sizeof t);
            snprintf(t.benchmark, sizeof t.benchmark, "%s", s->name);
            snprintf(t.submission, sizeof t.submission, "%s", tb_submission_ref_name(ref));
            snprintf(t.submission_spec, sizeof t.submission_spec, "%s",
                     tb_submission_ref_spec(ref));
            snprintf(t.workload, sizeof t.workload, "%s", wls[w]);
            snprintf(t.ruleset, sizeof t.ruleset, "%s", tb_ruleset_name(s->ruleset));
            t.study = k / trials;
            t.trial = k % trials;
            /* the gp sampler chooses a study's later points when their turn comes */
            if (!gp || t.trial < tb_bench_gp_initial(s)) t.hparams = points[k];
            trial_seeds(s->seed, wls[w], t.study, t.trial, t.seeds);
            snprintf(t.metric, sizeof t.metric, "%s", bw->metric);
            t.target = s->quick_targets ? bw->quick_target : bw->target;
            t.budget_s = (s->budget_s > 0 ? s->budget_s : bw->max_runtime_s) *
                         (self ? TB_SELF_TUNING_BUDGET_FACTOR : 1.0);
            t.eval_period_s = s->eval_period_s > 0 ? s->eval_period_s : bw->eval_period_s;
            t.stop_at_target = !s->run_to_budget;
            st = tb_store_plan_trial(store, &t, err);
        }
        if (st == TB_OK && gp && s->gp_prior)
            st = tb_bench_gp_prior(store, s, tb_submission_ref_name(ref), space, wls[w], err);
    }
    tb_search_space_destroy(space);
    free(points);
    return st;
}

/* ---- one run of a benchmark at a time ---------------------------------------------------------- */
/* Two runs of one benchmark would run the same trials at once (each dropping the other's
 * evals). A run holds a POSIX record lock on one byte of <store>-lock, at an offset given by
 * the benchmark's name, for as long as it runs: the kernel releases it when the process ends,
 * however it ends, so a killed run never leaves a stale lock. Trial processes (fork) do not
 * inherit it and closing their copy of the descriptor does not release it. */
tb_status tb_bench_lock(const char *store_path, const char *name, int *fd_out, tb_error *err)
{
    *fd_out = -1; /* store_path is a file's: tb_store_open refused anything else */
    /* the lock belongs to the file, not to the name it was given: through a symbolic link (or
     * ./x against x) two runs must meet at one lock (hard links, which SQLite itself does not
     * support, are not followed) */
    char real[PATH_MAX], path[PATH_MAX + 8];
    if (!realpath(store_path, real))
        return tb_fail(err, TB_ERR_IO, "cannot resolve the results store path %s: %s",
                       store_path, strerror(errno));
    snprintf(path, sizeof path, "%s-lock", real);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (fd < 0)
        return tb_fail(err, TB_ERR_IO, "cannot open the benchmark lock %s: %s", path,
                       strerror(errno));
    struct flock lk = {.l_type = F_WRLCK, .l_whence = SEEK_SET,
                       .l_start = (off_t)(tb_bench_hash(name) >> 24), .l_len = 1};
    if (fcntl(fd, F_SETLK, &lk) == 0) {
        *fd_out = fd;
        return TB_OK;
    }
    int e = errno;
    tb_status st;
    if (e == EACCES || e == EAGAIN) {
        struct flock who = lk;
        char pid[48] = "another process";
        if (fcntl(fd, F_GETLK, &who) == 0 && who.l_type != F_UNLCK && who.l_pid > 0)
            snprintf(pid, sizeof pid, "process %ld", (long)who.l_pid);
        st = tb_fail(err, TB_ERR_IO,
                     "benchmark '%s' in %s is being run by %s right now; two runs would run "
                     "the same trials at once. Wait for it to end (then the same command "
                     "reuses its trials) or give this run another --name", name, store_path,
                     pid);
    } else {
        st = tb_fail(err, TB_ERR_IO, "cannot lock %s: %s", path, strerror(e));
    }
    close(fd);
    return st;
}

static tb_status check_spec(const tb_bench_spec *s, tb_error *err)
{
    if (!s) return tb_fail(err, TB_ERR_INVALID, "bench_run: the spec is NULL");
    if (!s->submissions && s->n_submissions > 0)
        return tb_fail(err, TB_ERR_INVALID, "bench_run: spec->submissions is NULL");
    for (int i = 0; s->submissions && i < s->n_submissions; i++)
        if (!s->submissions[i])
            return tb_fail(err, TB_ERR_INVALID, "bench_run: submission %d is NULL", i);
    for (int i = 0; s->workloads && i < s->n_workloads; i++)
        if (!s->workloads[i])
            return tb_fail(err, TB_ERR_INVALID, "bench_run: workload %d is NULL", i);
    if (!s->name || !s->name[0] || strlen(s->name) >= 64)
        return tb_fail(err, TB_ERR_INVALID, "a benchmark needs a name (under 64 characters)");
    if (s->n_submissions < 1)
        return tb_fail(err, TB_ERR_INVALID, "a benchmark needs at least one submission");
    if (s->search_space_file && s->n_submissions != 1)
        return tb_fail(err, TB_ERR_INVALID,
                       "a search space file (%s) is one submission's: give one submission "
                       "(got %d)", s->search_space_file, s->n_submissions);
    if (s->search_space_file && s->ruleset == TB_RULESET_SELF)
        return tb_fail(err, TB_ERR_INVALID,
                       "a search space file (%s) is for external tuning: the self-tuning "
                       "ruleset has no search space", s->search_space_file);
    if (s->studies < 1 || s->trials < 1 || s->studies > 1000 || s->trials > 1000)
        return tb_fail(err, TB_ERR_INVALID, "studies and trials must be in [1, 1000] (got %d, %d)",
                       s->studies, s->trials);
    if (s->budget_s < 0 || s->eval_period_s < 0)
        return tb_fail(err, TB_ERR_INVALID, "budget and eval period must not be negative");
    if (s->trial.eval_every_steps < 0 || s->trial.setup_s < 0 || s->trial.hang_s < 0)
        return tb_fail(err, TB_ERR_INVALID,
                       "the eval step interval, the set-up and the hang limits must not be "
                       "negative");
    if (s->sampler != TB_SAMPLER_HALTON && s->sampler != TB_SAMPLER_GP)
        return tb_fail(err, TB_ERR_INVALID, "unknown sampler %d", (int)s->sampler);
    if (s->sampler == TB_SAMPLER_GP && s->ruleset == TB_RULESET_SELF)
        return tb_fail(err, TB_ERR_INVALID,
                       "the gp sampler tunes from search spaces (external tuning); the "
                       "self-tuning ruleset has none");
    if (s->sampler != TB_SAMPLER_GP && (s->gp_prior || s->gp_initial != 0))
        return tb_fail(err, TB_ERR_INVALID,
                       "a GP prior and initial points are settings of the gp sampler");
    if (!(s->calibration_s <= 3600) || s->calibrate_every < 0 || s->calibrate_every > 100000)
        return tb_fail(err, TB_ERR_INVALID, "calibration windows: seconds must be at most 3600 "
                       "(< 0: none) and the trials between them in [0, 100000] (got %g, %d)",
                       s->calibration_s, s->calibrate_every);
    if (s->trial.jobs < 0 || s->trial.jobs > TB_BENCH_CPUS_MAX)
        return tb_fail(err, TB_ERR_INVALID, "jobs (trials at once) must be in [1, %d] (got %d)",
                       TB_BENCH_CPUS_MAX, s->trial.jobs);
    if (s->trial.cpus) {
        int *cpus = malloc(TB_BENCH_CPUS_MAX * sizeof *cpus), n_cpus = 0;
        tb_status st = cpus ? tb_bench_cpus_parse(s->trial.cpus, cpus, &n_cpus, err)
                            : tb_fail(err, TB_ERR_NOMEM, "out of memory");
        free(cpus);
        if (st != TB_OK) return st;
        if (n_cpus < (s->trial.jobs > 1 ? s->trial.jobs : 1))
            return tb_fail(err, TB_ERR_INVALID, "%d jobs need a CPU each at least; the list "
                           "'%s' has %d", s->trial.jobs, s->trial.cpus, n_cpus);
    }
    if (s->shards < 0 || s->shards > TB_BENCH_SHARDS_MAX ||
        (s->shards > 0 && (s->shard < 0 || s->shard >= s->shards)))
        return tb_fail(err, TB_ERR_INVALID, "shard %d of %d: shards count from 0 and there are "
                       "1 to %d of them", s->shard, s->shards, TB_BENCH_SHARDS_MAX);
    tb_status rst = tb_bench_ranks_per_trial_check(&s->trial, err);
    if (rst != TB_OK) return rst;
    if (s->gp_initial < 0 || s->gp_initial > 1000)
        return tb_fail(err, TB_ERR_INVALID, "gp initial points must be in [0, 1000] (got %d)",
                       s->gp_initial);
    if (s->prior_workloads && !s->gp_prior)
        return tb_fail(err, TB_ERR_INVALID, "prior workloads are named without a prior");
    for (int i = 0; s->prior_workloads && i < s->n_prior_workloads; i++)
        if (!tb_bench_workload_find(s->prior_workloads[i], &(tb_bench_workload){0}))
            return tb_fail(err, TB_ERR_INVALID,
                           "prior workload '%s' is not a workload (see `trainbench workloads`)",
                           s->prior_workloads[i]);
    return TB_OK;
}

/* A submission skipped for crashing while loading: counted, its reason appended. */
static void skip_note(tb_bench_summary *sum, const char *reason)
{
    size_t n = strlen(sum->skipped_reasons);
    snprintf(sum->skipped_reasons + n, sizeof sum->skipped_reasons - n, "%s%s",
             sum->skipped ? "; " : "", reason);
    sum->skipped++;
}

/* The submissions, loaded once in this process (children inherit them); one that crashes
 * while loading (caught in a probe process) is skipped, reported in sum. *refs: n_refs of
 * them, to unload and free (also on an error). */
static tb_status load_refs(const tb_bench_spec *s, tb_submission_ref ***refs_out, int *n_out,
                           tb_bench_summary *sum, tb_error *err)
{
    tb_submission_ref **refs = calloc((size_t)s->n_submissions, sizeof *refs);
    *refs_out = refs;
    *n_out = 0;
    if (!refs) return tb_fail(err, TB_ERR_NOMEM, "out of memory");
    int n_refs = 0;
    tb_status st = TB_OK;
    for (int i = 0; st == TB_OK && i < s->n_submissions; i++) {
        tb_error lerr = {0};
        st = tb_submission_load(s->submissions[i], s->search_space_dir, &refs[n_refs], &lerr);
        if (st == TB_ERR_CRASHED) {
            skip_note(sum, lerr.message);
            st = TB_OK;
            continue;
        }
        if (st != TB_OK) {
            if (err) *err = lerr;
            break;
        }
        if (s->search_space_file &&
            (st = tb_submission_ref_set_search_space_file(refs[n_refs], s->search_space_file,
                                                          err)) != TB_OK) {
            n_refs++; /* unloaded by the caller */
            break;
        }
        const char *name = tb_submission_ref_name(refs[n_refs++]);
        for (int j = 0; st == TB_OK && j < n_refs - 1; j++)
            if (strcmp(name, tb_submission_ref_name(refs[j])) == 0)
                st = tb_fail(err, TB_ERR_INVALID, "submission '%s' is given twice", name);
    }
    *n_out = n_refs;
    if (st == TB_OK && n_refs == 0)
        st = tb_fail(err, TB_ERR_CRASHED, "no submission left to run: %s", sum->skipped_reasons);
    return st;
}

/* A data-parallel trial averages the gradients of the standard update: the built-in
 * baselines'; a library's or a Python file's own update_params would not be averaged. */
static tb_status check_ranks_refs(const tb_bench_spec *s, tb_submission_ref *const *refs,
                                  int n_refs, tb_error *err)
{
    for (int i = 0; s->trial.ranks_per_trial > 1 && i < n_refs; i++)
        if (tb_submission_ref_external(refs[i]) || tb_submission_ref_python(refs[i]))
            return tb_fail(err, TB_ERR_UNSUPPORTED,
                           "--ranks-per-trial %d with submission %s: only the built-in "
                           "baselines run data-parallel (a submission's own update_params "
                           "would have to average the gradients across the ranks itself)",
                           s->trial.ranks_per_trial, tb_submission_ref_spec(refs[i]));
    return TB_OK;
}

static void unload_refs(tb_submission_ref **refs, int n_refs)
{
    for (int i = 0; refs && i < n_refs; i++) tb_submission_unload(refs[i]);
    free(refs);
}

/* A benchmark run: plan, then execute (d: NULL, or rank 0 of a job of several ranks, which
 * hands the trials to the other ranks). */
static tb_status run_with(const char *store_path, const tb_bench_spec *s, tb_dist *d,
                          bool *handed, tb_bench_progress_fn progress, void *user,
                          tb_bench_summary *summary, tb_error *err)
{
    tb_bench_summary sum = {0};
    if (summary) *summary = sum;
    if (!store_path) return tb_fail(err, TB_ERR_INVALID, "bench_run: the store's path is NULL");
    tb_status st = check_spec(s, err);
    if (st != TB_OK) return st;
    if (d && s->shards > 1)
        return tb_fail(err, TB_ERR_INVALID, "a shard (%d/%d) is for one process of a job array: "
                       "across the ranks of an MPI job rank 0 hands out every trial itself",
                       s->shard, s->shards);
    /* the workloads */
    const char *all[64];
    const char *const *wls = s->workloads;
    int n_wl = s->n_workloads;
    if (!wls) {
        n_wl = 0;
        /* every base workload, and the variants s->variants names (others run when named) */
        for (int i = 0; i < tb_bench_workload_count() && n_wl < 64; i++) {
            tb_bench_workload bw;
            if (tb_bench_workload_at(i, &bw) && tb_bench_workload_default(&bw, s->variants))
                all[n_wl++] = bw.workload;
        }
        wls = all;
    }
    if (n_wl < 1) return tb_fail(err, TB_ERR_INVALID, "no workloads to benchmark");
    for (int w = 0; w < n_wl; w++)
        if (!tb_bench_workload_find(wls[w], &(tb_bench_workload){0}))
            return tb_fail(err, TB_ERR_INVALID,
                           "workload '%s' has no benchmark settings (target, budget); known: "
                           "see `trainbench workloads`", wls[w]);
    tb_submission_ref **refs = NULL;
    int n_refs = 0;
    st = load_refs(s, &refs, &n_refs, &sum, err);
    if (st == TB_OK) st = check_ranks_refs(s, refs, n_refs, err);
    /* the store first (a file that is not one leaves no lock file behind), then the lock */
    tb_store *store = NULL;
    if (st == TB_OK) st = tb_store_open(store_path, &store, err);
    int lock_fd = -1; /* held until the run ends */
    if (st == TB_OK) st = tb_bench_lock(store_path, s->name, &lock_fd, err);
    /* the plan, written before anything runs */
    char *spec = st == TB_OK ? spec_json(s, wls, n_wl, refs, n_refs) : NULL;
    bool in_tx = st == TB_OK && (st = tb_store_begin(store, err)) == TB_OK;
    if (st == TB_OK) st = tb_store_put_benchmark(store, s->name, spec ? spec : "{}", err);
    for (int i = 0; st == TB_OK && i < n_refs; i++)
        st = plan_submission(store, s, refs[i], wls, n_wl, &sum, err);
    /* an older store's trials failed by the machine run again, as a failure of it does now */
    if (st == TB_OK) st = tb_store_replan_machine_failures(store, s->name, NULL, err);
    if (in_tx && st == TB_OK) st = tb_store_commit(store, err);
    else if (in_tx) tb_store_rollback(store);
    free(spec);
    tb_trial_record *trials = NULL;
    int n = 0;
    if (st == TB_OK) st = tb_store_trials(store, s->name, &trials, &n, err);
    tb_store_close(store);
    sum.planned = n;
    /* execution; the gp sampler's search spaces at hand for the points it chooses */
    const bool gp = s->sampler == TB_SAMPLER_GP && s->ruleset == TB_RULESET_EXTERNAL;
    tb_search_space **spaces = calloc((size_t)s->n_submissions, sizeof *spaces);
    if (!spaces && st == TB_OK) st = tb_fail(err, TB_ERR_NOMEM, "out of memory");
    for (int j = 0; gp && st == TB_OK && j < n_refs; j++)
        st = tb_bench_load_space(s, refs[j], &spaces[j], err);
    /* interleaved: every submission's trial of a round before the next round's (order.c) */
    int *order = calloc((size_t)(n > 0 ? n : 1), sizeof *order);
    const char **names = calloc((size_t)n_refs + 1, sizeof *names);
    if ((!order || !names) && st == TB_OK) st = tb_fail(err, TB_ERR_NOMEM, "out of memory");
    for (int j = 0; names && j < n_refs; j++) names[j] = tb_submission_ref_name(refs[j]);
    if (st == TB_OK) st = tb_bench_interleave(trials, n, wls, n_wl, names, n_refs, order, err);
    free(names);
    /* a shard runs its share alone (shard.c) */
    if (st == TB_OK) st = tb_bench_shard_take(s, &trials, &n, order, sum.notes,
                                              sizeof sum.notes, err);
    sum.planned = n;
    tb_bench_plan plan = {.store_path = store_path, .spec = s, .trials = trials, .n = n,
                          .order = order, .refs = refs, .spaces = spaces, .n_refs = n_refs};
    if (st == TB_OK && d && (*handed = true))
        st = tb_bench_coordinate(&plan, d, s->worker_timeout_s, progress, user, &sum, err);
    else if (st == TB_OK)
        st = tb_bench_execute(&plan, progress, user, &sum, err);
    free(order);
    free(trials);
    for (int j = 0; spaces && j < n_refs; j++) tb_search_space_destroy(spaces[j]);
    free(spaces);
    if (lock_fd >= 0) close(lock_fd);
    unload_refs(refs, n_refs);
    if (summary) *summary = sum;
    return st;
}

tb_status tb_bench_run(const char *store_path, const tb_bench_spec *s,
                       tb_bench_progress_fn progress, void *user, tb_bench_summary *summary,
                       tb_error *err)
{
    bool handed = false;
    return run_with(store_path, s, NULL, &handed, progress, user, summary, err);
}

tb_status tb_bench_run_ranks(const char *store_path, const tb_bench_spec *s, tb_dist *d,
                             tb_bench_progress_fn progress, void *user,
                             tb_bench_summary *summary, tb_error *err)
{
    bool handed = false;
    if (tb_dist_size(d) < 2)
        return run_with(store_path, s, NULL, &handed, progress, user, summary, err);
    if (tb_dist_rank(d) == 0) {
        tb_status st = run_with(store_path, s, d, &handed, progress, user, summary, err);
        /* refused before the trials were handed out: the workers are told to stop */
        if (!handed) tb_bench_dismiss(d);
        return st;
    }
    tb_bench_summary sum = {0};
    if (summary) *summary = sum;
    tb_status st = check_spec(s, err);
    tb_submission_ref **refs = NULL;
    int n_refs = 0;
    if (st == TB_OK) st = load_refs(s, &refs, &n_refs, &sum, err);
    if (st == TB_OK) st = tb_bench_work(d, s, refs, n_refs, err);
    unload_refs(refs, n_refs);
    return st;
}
