/* submissions.c: the built-in submissions (one generic baseline per optimizer in the registry)
 * and the loaders of external submissions (shared libraries, dlopen; Python files, pysub.h). */
#include "trainbench/submission.h"

#include "bench/bench_impl.h"
#include "bench/library.h"
#include "bench/pysub.h"
#include "bench/trial_impl.h"
#include "trainbench/textfile.h"
#include "trainbench/tune.h"

#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- the generic baseline ------------------------------------------------------------------ */
typedef struct baseline_state {
    tb_optimizer *opt;
    tb_schedule schedule;
} baseline_state;

static int baseline_batch_size(const tb_submission_api *api, tb_trial_ctx *c,
                               const tb_hparams *hp)
{
    double b = api->hparam(hp, "batch_size", 0);
    return b >= 1 ? (int)b : api->workload_info(c)->default_batch_size;
}

/* The baseline of optimizer `optimizer` at point hp: its optimizer and schedule from the
 * point's names (tb_baseline_config_make: AlgoPerf's among them), then, for a preset (else
 * NULL), what it derives from the step hint (tb_optimizer_preset_apply); the hyperparameters
 * in effect noted for the trial. */
static tb_status baseline_start(const tb_submission_api *api, tb_trial_ctx *c,
                                const char *optimizer, const char *preset, const tb_hparams *hp,
                                void **state, tb_error *err)
{
    baseline_state *s = calloc(1, sizeof *s);
    if (!s) return tb_fail(err, TB_ERR_NOMEM, "cannot allocate the optimizer state");
    tb_baseline_config cfg;
    tb_status st = tb_baseline_config_make(optimizer, hp, api->step_hint(c), &cfg, err);
    if (st == TB_OK && preset)
        st = tb_optimizer_preset_apply(preset, api->step_hint(c), &optimizer, &cfg.opt, err);
    if (st == TB_OK) st = api->optimizer_create(c, optimizer, &cfg.opt, &s->opt, err);
    if (st != TB_OK) {
        tb_optimizer_destroy(s->opt);
        free(s);
        return st;
    }
    s->schedule = cfg.schedule;
    /* the baseline's own hyperparameters in effect (the optimizer's are noted by the API) */
    tb_hparams own = {0}, own_defaults = {0};
    tb_hparams_set(&own, TB_HP_WARMUP_FRACTION, cfg.warmup_fraction, NULL);
    tb_hparams_set(&own, "batch_size", baseline_batch_size(api, c, hp), NULL);
    for (int i = 0; i < own.count; i++)
        if (!tb_hparams_has(hp, own.names[i]) &&
            !(strcmp(own.names[i], TB_HP_WARMUP_FRACTION) == 0 &&
              (tb_hparams_has(hp, TB_HP_WARMUP_FACTOR) || tb_hparams_has(hp, TB_HP_WARMUP_STEPS))))
            tb_hparams_set(&own_defaults, own.names[i], own.values[i], NULL);
    tb_trial_note_hparams(c, &own, &own_defaults);
    *state = s;
    return TB_OK;
}

static tb_status baseline_init(const tb_submission_api *api, tb_trial_ctx *c,
                               const tb_hparams *hp, void **state, tb_error *err)
{
    return baseline_start(api, c, api->submission_name(c), NULL, hp, state, err);
}

/* The run core's standard step (tb_run_standard_update) on the baseline's schedule; past the
 * step hint the schedule holds its end (tb_schedule_factor). */
static tb_status baseline_update(const tb_submission_api *api, tb_trial_ctx *c, void *state,
                                 const tb_hparams *hp, const tb_batch *batch, int64_t step,
                                 tb_step_report *report, tb_error *err)
{
    (void)hp;
    baseline_state *s = state;
    return api->standard_update(c, s->opt, batch, tb_schedule_factor(&s->schedule, step),
                                &report->loss, err);
}

/* ---- presets: a baseline with a fixed configuration ---------------------------------------
 * A preset of the table (tb_optimizer_preset, src/optim/preset.c) runs as the baseline of its
 * algorithm at its point: the values it fixes and, for a schedule of its own, warmup_factor
 * (a warmup of that share of the step hint, then cosine decay to 0 at the step hint; none: a
 * constant learning rate); then what it derives from the step hint (algoperf_sf_adamw's
 * warmup_steps, its optimizer's own). Under external tuning its search space is this one
 * point, so each study runs it once. */
static void preset_point(const tb_optimizer_preset *p, tb_hparams *point)
{
    *point = (tb_hparams){0};
    for (int i = 0; i < p->n_values; i++) tb_hparams_set(point, p->names[i], p->values[i], NULL);
    if (p->schedule_warmup > 0)
        tb_hparams_set(point, TB_HP_WARMUP_FACTOR, p->schedule_warmup, NULL);
}

/* The shortest %g text of v that reads back as v, its exponent without leading zeros. */
static void format_value(double v, char *buf, size_t cap)
{
    for (int digits = 1; digits <= 17; digits++) {
        snprintf(buf, cap, "%.*g", digits, v);
        if (strtod(buf, NULL) == v) break;
    }
    char *e = strchr(buf, 'e');
    if (!e) return;
    char *digits = e + 1 + (e[1] == '-' || e[1] == '+');
    char *first = digits;
    while (first[0] == '0' && first[1]) first++;
    memmove(digits, first, strlen(first) + 1);
    if (e[1] == '+') memmove(e + 1, e + 2, strlen(e + 2) + 1);
}

/* The preset's point as a search space of one point (AlgoPerf's list format). */
static tb_status preset_space(const tb_optimizer_preset *p, char **out, tb_error *err)
{
    tb_hparams point;
    preset_point(p, &point);
    char text[1024] = "[{";
    for (int i = 0; i < point.count; i++) {
        char value[32];
        format_value(point.values[i], value, sizeof value);
        size_t n = strlen(text);
        snprintf(text + n, sizeof text - n, "%s\"%s\": %s", i ? ", " : "", point.names[i], value);
    }
    strncat(text, "}]", sizeof text - strlen(text) - 1);
    if (!(*out = strdup(text))) return tb_fail(err, TB_ERR_NOMEM, "out of memory");
    return TB_OK;
}

/* A preset runs its own point, whatever the trial's (none under self-tuning). */
static tb_status preset_init(const tb_submission_api *api, tb_trial_ctx *c,
                             const tb_hparams *hp, void **state, tb_error *err)
{
    (void)hp;
    const tb_optimizer_preset *p = tb_optimizer_preset_find(api->submission_name(c));
    if (!p) return tb_fail(err, TB_ERR_INTERNAL, "no preset %s", api->submission_name(c));
    tb_hparams point;
    preset_point(p, &point);
    tb_status st = baseline_start(api, c, p->algorithm, p->name, &point, state, err);
    /* the configuration in effect, as the trial's own point is under external tuning */
    if (st == TB_OK) tb_trial_note_hparams(c, &point, NULL);
    return st;
}

static void baseline_free(void *state)
{
    baseline_state *s = state;
    if (!s) return;
    tb_optimizer_destroy(s->opt);
    free(s);
}

/* ---- refs -------------------------------------------------------------------------------------- */
struct tb_submission_ref {
    tb_submission builtin;      /* the table of a built-in */
    const tb_submission *sub;
    void *library;              /* dlopen handle of an external one */
    char *python;               /* the file of a Python one */
    char name[128];
    char spec[512];
    char *search_space;
    char search_space_path[1024]; /* where a built-in's was read from */
    const char *optimizer;        /* a built-in's registry optimizer */
};

/* The search space file of a built-in, if there is one: a missing file leaves it NULL (the
 * external-tuning ruleset says so when it needs one); any other bad file is an error. */
static tb_status read_search_space(tb_submission_ref *r, const char *dir, tb_error *err)
{
    snprintf(r->search_space_path, sizeof r->search_space_path, "%s/%s.json", dir, r->name);
    bool missing = false;
    tb_error lerr = {0};
    tb_status st = tb_text_file_read(r->search_space_path, "search space", TB_TEXT_FILE_MAX,
                                     &r->search_space, &missing, &lerr);
    if (st == TB_OK || missing) return TB_OK;
    if (err) *err = lerr;
    return st == TB_ERR_IO ? st : TB_ERR_INVALID;
}

static bool is_library_path(const char *spec)
{
    size_t n = strlen(spec);
    return strchr(spec, '/') || (n > 3 && strcmp(spec + n - 3, ".so") == 0);
}

/* A path as given, "./" before a name without '/' (never searched for). */
static void spec_path(const char *spec, char *path, size_t cap)
{
    snprintf(path, cap, "%s%s", strchr(spec, '/') ? "" : "./", spec);
}

static tb_status load_library(tb_submission_ref *r, const char *spec, tb_error *err)
{
    /* a path, never searched for: dlopen looks a name without '/' up in LD_LIBRARY_PATH and
     * the system's directories, so "x.so" is loaded as "./x.so" */
    char path[sizeof r->spec + 2];
    spec_path(spec, path, sizeof path);
    /* a library that is not there, or not one, is a bad value given by the user */
    if (access(path, F_OK) != 0)
        return tb_fail(err, TB_ERR_INVALID, "submission library %s does not exist (%s)", path,
                       strerror(errno));
    /* never given to dlopen: its open of a FIFO would block the probe until its time limit */
    struct stat sb;
    if (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode))
        return tb_fail(err, TB_ERR_INVALID, "submission library %s is %s, not a regular file",
                       path, tb_file_kind(sb.st_mode));
    /* a crash in its constructors or entry point is caught in a probe process */
    tb_status st = tb_library_open(path, spec, &r->library, &r->sub, err);
    if (st != TB_OK) return st;
    const tb_submission *s = r->sub;
    snprintf(r->name, sizeof r->name, "%s", s->name);
    if (s->default_search_space && !(r->search_space = strdup(s->default_search_space)))
        return tb_fail(err, TB_ERR_NOMEM, "out of memory");
    return TB_OK;
}

/* A Python file: checked in a probe process (parsed, not run); each trial's process runs it. */
static tb_status load_python(tb_submission_ref *r, const char *spec, tb_error *err)
{
    char path[sizeof r->spec + 2];
    spec_path(spec, path, sizeof path);
    struct stat sb;
    if (stat(path, &sb) != 0)
        return tb_fail(err, TB_ERR_INVALID, "Python submission %s does not exist (%s)", path,
                       strerror(errno));
    if (!S_ISREG(sb.st_mode))
        return tb_fail(err, TB_ERR_INVALID, "Python submission %s is %s, not a regular file",
                       path, tb_file_kind(sb.st_mode));
    tb_status st = tb_py_probe(path, spec, r->name, sizeof r->name, &r->search_space, err);
    if (st != TB_OK) return st;
    if (!(r->python = strdup(path))) return tb_fail(err, TB_ERR_NOMEM, "out of memory");
    r->builtin = (tb_submission){.name = r->name, .summary = "a Python submission",
                                 .abi_version = TB_SUBMISSION_ABI_VERSION};
    tb_py_table(&r->builtin);
    r->sub = &r->builtin;
    return TB_OK;
}

tb_status tb_submission_load(const char *spec, const char *search_space_dir,
                             tb_submission_ref **out, tb_error *err)
{
    if (!spec || !out)
        return tb_fail(err, TB_ERR_INVALID, "submission_load: %s is NULL",
                       spec ? "out" : "the spec");
    *out = NULL;
    tb_submission_ref *r = calloc(1, sizeof *r);
    if (!r) return tb_fail(err, TB_ERR_NOMEM, "out of memory");
    snprintf(r->spec, sizeof r->spec, "%s", spec);
    tb_status st = TB_OK;
    if (tb_py_is_spec(spec)) {
        st = load_python(r, spec, err);
    } else if (is_library_path(spec)) {
        st = load_library(r, spec, err);
    } else if (tb_optimizer_preset_find(spec)) {
        const tb_optimizer_preset *p = tb_optimizer_preset_find(spec);
        snprintf(r->name, sizeof r->name, "%s", p->name);
        r->optimizer = p->algorithm;
        r->builtin = (tb_submission){
            .name = r->name,
            .summary = p->summary,
            .abi_version = TB_SUBMISSION_ABI_VERSION,
            .get_batch_size = baseline_batch_size,
            .init_optimizer_state = preset_init,
            .update_params = baseline_update,
            .free_state = baseline_free,
        };
        r->sub = &r->builtin;
        st = preset_space(p, &r->search_space, err);
    } else {
        const tb_optimizer_info *info = tb_optimizer_find(spec);
        if (!info) {
            char presets[256];
            tb_optimizer_preset_names(presets, sizeof presets);
            st = tb_fail(err, TB_ERR_INVALID,
                         "unknown submission '%s': not an optimizer in the registry (see "
                         "`trainbench algorithms`), a preset (%s) nor a path to a shared "
                         "library or a Python file (.py)", spec, presets);
        } else {
            snprintf(r->name, sizeof r->name, "%s", info->name);
            r->optimizer = info->name;
            r->builtin = (tb_submission){
                .name = r->name,
                .summary = info->summary,
                .abi_version = TB_SUBMISSION_ABI_VERSION,
                .get_batch_size = baseline_batch_size,
                .init_optimizer_state = baseline_init,
                .update_params = baseline_update,
                .free_state = baseline_free,
            };
            r->sub = &r->builtin;
            if (search_space_dir) st = read_search_space(r, search_space_dir, err);
        }
    }
    if (st != TB_OK) {
        tb_submission_unload(r);
        return st;
    }
    *out = r;
    return TB_OK;
}

void tb_submission_unload(tb_submission_ref *r)
{
    if (!r) return;
    if (r->library) dlclose(r->library);
    free(r->python);
    free(r->search_space);
    free(r);
}

const tb_submission *tb_submission_get(const tb_submission_ref *r) { return r ? r->sub : NULL; }
const char *tb_submission_ref_name(const tb_submission_ref *r) { return r ? r->name : ""; }
const char *tb_submission_ref_spec(const tb_submission_ref *r) { return r ? r->spec : ""; }
bool tb_submission_ref_external(const tb_submission_ref *r)
{
    return r && (r->library != NULL || r->python != NULL);
}
const char *tb_submission_ref_python(const tb_submission_ref *r) { return r ? r->python : NULL; }
const char *tb_submission_ref_search_space(const tb_submission_ref *r)
{
    return r ? r->search_space : NULL;
}
const char *tb_submission_ref_search_space_path(const tb_submission_ref *r)
{
    return r ? r->search_space_path : "";
}
const char *tb_submission_ref_optimizer(const tb_submission_ref *r)
{
    return r ? r->optimizer : NULL;
}

tb_status tb_submission_ref_set_search_space_file(tb_submission_ref *r, const char *path,
                                                  tb_error *err)
{
    if (!r || !path)
        return tb_fail(err, TB_ERR_INVALID, "submission_ref_set_search_space_file: %s is NULL",
                       r ? "path" : "the submission");
    char *text = NULL;
    tb_status st = tb_text_file_read(path, "search space", TB_TEXT_FILE_MAX, &text, NULL, err);
    if (st != TB_OK) return st;
    free(r->search_space);
    r->search_space = text;
    snprintf(r->search_space_path, sizeof r->search_space_path, "%s", path);
    return TB_OK;
}
