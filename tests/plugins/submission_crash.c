/* submission_crash.c: a deliberately broken external submission for the tests: it segfaults
 * in update_params at step `crash_step` (default 3), or, with hang = 1, never returns. In the
 * trial's set-up, get_batch_size sleeps `setup_sleep` seconds, or, with setup_hang = 1, never
 * returns. With
 * the environment variable TB_CRASHER_FAIL it returns an error there instead: "silent" an
 * error status without filling err, "missing" TB_ERR_MISSING through api->fail (a failure of
 * the submission, not missing data of the benchmark's), "nan" what an sgd step over a NaN
 * gradient returns (TB_ERR_NUMERIC: a divergence). More defects, by environment variable:
 *   TB_CRASHER_LOAD=segv      tb_submission_entry segfaults (the library crashes when loaded)
 *   TB_CRASHER_LOAD=noupdate  its table lacks update_params
 *   TB_CRASHER_LOAD=abi       its table says it was built for the next ABI version
 *   TB_CRASHER_NAN=1          update_params writes NaN weights and reports a finite loss, and
 *                             never crashes
 *   TB_CRASHER_STDOUT=1       prints to stdout in an ELF constructor, in the entry point and
 *                             in every update_params */
/* nanosleep */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "trainbench/submission.h"

static bool env_set(const char *name, const char *value)
{
    const char *v = getenv(name);
    return v && strcmp(v, value) == 0;
}

/* a segmentation fault with the default action, so that it kills the process in sanitizer
 * builds too (ASan would otherwise catch it and exit(1)) */
static void segfault(void)
{
    signal(SIGSEGV, SIG_DFL);
    raise(SIGSEGV);
}

static void noise(const char *where)
{
    if (!env_set("TB_CRASHER_STDOUT", "1")) return;
    printf("crasher-noise: %s\n", where);
    fflush(stdout);
}

__attribute__((constructor)) static void on_load(void) { noise("constructor"); }

static int get_batch_size(const tb_submission_api *api, tb_trial_ctx *c, const tb_hparams *hp)
{
    (void)c;
    if (api->hparam(hp, "setup_hang", 0) > 0)
        for (;;) pause();
    double s = api->hparam(hp, "setup_sleep", 0);
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    if (s > 0) nanosleep(&ts, NULL);
    return 32;
}

static tb_status init_state(const tb_submission_api *api, tb_trial_ctx *c, const tb_hparams *hp,
                            void **out, tb_error *err)
{
    (void)api;
    (void)c;
    (void)hp;
    (void)err;
    *out = NULL;
    return TB_OK;
}

static tb_status update(const tb_submission_api *api, tb_trial_ctx *c, void *st,
                        const tb_hparams *hp, const tb_batch *batch, int64_t step,
                        tb_step_report *report, tb_error *err)
{
    (void)st;
    (void)batch;
    (void)err;
    noise("update_params");
    if (env_set("TB_CRASHER_NAN", "1")) {
        float *w = api->values(c);
        int64_t n = api->numel(c);
        for (int64_t i = 0; i < n; i++) w[i] = NAN;
        report->loss = 1.0;
        return TB_OK;
    }
    if (api->hparam(hp, "hang", 0) > 0)
        for (;;) pause();
    const char *fail = getenv("TB_CRASHER_FAIL");
    if (fail && step >= (int64_t)api->hparam(hp, "crash_step", 3)) {
        if (strcmp(fail, "missing") == 0)
            return api->fail(err, TB_ERR_MISSING, "crasher: its lookup table is missing");
        if (strcmp(fail, "nan") == 0 && api->on_host(c)) {
            tb_optimizer *opt = NULL;
            tb_status s = api->optimizer_create(c, "sgd", NULL, &opt, err);
            api->grads(c)[0] = NAN;
            if (s == TB_OK) s = api->optimizer_step(opt, 1.0, err);
            api->optimizer_destroy(opt);
            report->loss = 1.0;
            return s;
        }
        return TB_ERR_INVALID; /* err left empty */
    }
    if (step >= (int64_t)api->hparam(hp, "crash_step", 3)) segfault();
    report->loss = 1.0;
    return TB_OK;
}

static void free_state(void *st) { (void)st; }

static const tb_submission submission = {
    .name = "crasher",
    .summary = "segfaults (tests only)",
    .abi_version = TB_SUBMISSION_ABI_VERSION,
    .get_batch_size = get_batch_size,
    .init_optimizer_state = init_state,
    .update_params = update,
    .free_state = free_state,
    .default_search_space = "[{\"crash_step\": 3}, {\"crash_step\": 2}]",
};

static const tb_submission no_update = {
    .name = "crasher",
    .abi_version = TB_SUBMISSION_ABI_VERSION,
    .get_batch_size = get_batch_size,
    .init_optimizer_state = init_state,
};

static const tb_submission next_abi = {
    .name = "crasher",
    .abi_version = TB_SUBMISSION_ABI_VERSION + 1,
    .get_batch_size = get_batch_size,
    .init_optimizer_state = init_state,
    .update_params = update,
};

const tb_submission *tb_submission_entry(int abi_version)
{
    noise("entry");
    if (env_set("TB_CRASHER_LOAD", "segv")) segfault();
    if (abi_version != TB_SUBMISSION_ABI_VERSION) return NULL;
    if (env_set("TB_CRASHER_LOAD", "abi")) return &next_abi;
    return env_set("TB_CRASHER_LOAD", "noupdate") ? &no_update : &submission;
}
