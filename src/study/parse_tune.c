/* parse_tune.c: a study's "tune" blocks (the study's own and the overrides'): the search space
 * (inline, or a file beside the study), the trials, the sampler, the budget of a trial and
 * whether each run searches anew; then, once the grid is known, every tuned cell checked
 * against its space before any run (docs/STUDIES.md, "Tuning inside a cell"). */
#include "study/parse_impl.h"

#include "study/study_impl.h"
#include "trainbench/textfile.h"
#include "trainbench/tune.h"
#include "trainbench/workload.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The space's text: an inline object or list as JSON, or a file named relative to the study's
 * directory. Kept in the plan (plan->space_json). */
static tb_status read_space(tb_sp_ctx *c, const cJSON *v, const char *key, tb_study_tune *t)
{
    tb_study_plan *p = c->plan;
    if (p->n_spaces == TB_STUDY_MAX_OVERRIDES + 1) return tb_sp_bad(c, key, "too many spaces");
    char *text = NULL;
    if (cJSON_IsString(v)) {
        if (!v->valuestring[0]) return tb_sp_bad(c, key, "is empty (a search space file)");
        char path[TB_STUDY_TEXT_MAX];
        const char *slash = strrchr(p->file, '/');
        if (v->valuestring[0] == '/' || !slash)
            snprintf(path, sizeof path, "%.500s", v->valuestring);
        else if (slash - p->file > 250)
            return tb_sp_bad(c, key, "the study's directory name is too long");
        else
            snprintf(path, sizeof path, "%.*s/%.256s", (int)(slash - p->file), p->file,
                     v->valuestring);
        tb_error e = {0};
        if (tb_text_file_read(path, "search space", TB_TEXT_FILE_MAX, &text, NULL, &e) != TB_OK)
            return tb_sp_bad(c, key, "%s", e.message);
        snprintf(t->space_source, sizeof t->space_source, "%s", path);
    } else if (cJSON_IsObject(v) || cJSON_IsArray(v)) {
        text = cJSON_PrintUnformatted(v);
        if (!text) return tb_fail(c->err, TB_ERR_NOMEM, "out of memory for a search space");
        snprintf(t->space_source, sizeof t->space_source, "inline");
    } else {
        return tb_sp_bad(c, key, "must be a search space (an object or a list of points) or "
                         "the name of a search-space file");
    }
    tb_search_space *space = NULL;
    tb_error e = {0};
    tb_status st = tb_search_space_parse(text, t->space_source, &space, &e);
    if (st == TB_OK && tb_search_space_dims(space) == 0 && tb_search_space_list_size(space) == 0)
        st = tb_fail(&e, TB_ERR_INVALID, "the space is empty (no hyperparameter to search)");
    tb_search_space_destroy(space);
    if (st != TB_OK) {
        free(text);
        return tb_sp_bad(c, key, "%s", e.message);
    }
    t->space = p->n_spaces;
    p->space_json[p->n_spaces++] = text;
    return TB_OK;
}

static tb_status read_budget(tb_sp_ctx *c, const cJSON *v, const char *key, tb_study_tune *t)
{
    static const char *const keys[] = {"steps", "epochs", "seconds"};
    if (!cJSON_IsObject(v) || !v->child || v->child->next)
        return tb_sp_bad(c, key, "must be one of {\"steps\": n}, {\"epochs\": x} or "
                         "{\"seconds\": s} (timed training seconds per trial)");
    tb_status st = tb_sp_only_keys(c, v, key, keys, 3);
    if (st != TB_OK) return st;
    char k2[128];
    snprintf(k2, sizeof k2, "%.64s.%.32s", key, v->child->string);
    if (strcmp(v->child->string, "steps") == 0)
        return tb_sp_whole(c, v->child, k2, 1, 1e9, &t->budget_steps);
    double d = 0;
    if ((st = tb_sp_number(c, v->child, k2, false, &d)) != TB_OK) return st;
    if (!(d > 0 && d <= 1e6)) return tb_sp_bad(c, k2, "%g is not in (0, 1e6]", d);
    if (strcmp(v->child->string, "epochs") == 0) t->budget_epochs = d;
    else t->budget_seconds = d;
    return TB_OK;
}

tb_status tb_sp_sampler_parse(const char *text, tb_study_sampler *out)
{
    for (int s = TB_STUDY_SAMPLER_HALTON; s <= TB_STUDY_SAMPLER_GP_PRIOR; s++)
        if (strcmp(text, tb_study_sampler_name((tb_study_sampler)s)) == 0) {
            *out = (tb_study_sampler)s;
            return TB_OK;
        }
    return TB_ERR_INVALID;
}

tb_status tb_sp_parse_tune(tb_sp_ctx *c, const cJSON *o, const char *key, tb_study_tune *t)
{
    static const char *const keys[] = {"space", "trials", "sampler", "budget", "search"};
    memset(t, 0, sizeof *t);
    snprintf(t->key, sizeof t->key, "%s", key);
    if (!cJSON_IsObject(o))
        return tb_sp_bad(c, key, "must be an object {space, trials, sampler, budget}");
    tb_status st = tb_sp_only_keys(c, o, key, keys, 5);
    char k2[96];
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, "space");
    snprintf(k2, sizeof k2, "%s.space", key);
    if (st == TB_OK && !v) return tb_sp_bad(c, k2, "missing (a search space, or its file)");
    if (st == TB_OK) st = read_space(c, v, k2, t);
    if (st != TB_OK) return st;
    snprintf(k2, sizeof k2, "%s.trials", key);
    if (!(v = cJSON_GetObjectItemCaseSensitive(o, "trials")))
        return tb_sp_bad(c, k2, "missing (points of the space to train, at least 1)");
    int64_t n = 0;
    if ((st = tb_sp_whole(c, v, k2, 1, 1000, &n)) != TB_OK) return st;
    t->trials = (int)n;
    char text[32] = "halton";
    snprintf(k2, sizeof k2, "%s.sampler", key);
    if ((st = tb_sp_text(c, o, "sampler", k2, false, text, sizeof text)) != TB_OK) return st;
    if (tb_sp_sampler_parse(text, &t->sampler) != TB_OK)
        return tb_sp_bad(c, k2, "unknown sampler '%s' (expected halton, gp or gp_prior)", text);
    snprintf(text, sizeof text, "once");
    snprintf(k2, sizeof k2, "%s.search", key);
    if ((st = tb_sp_text(c, o, "search", k2, false, text, sizeof text)) != TB_OK) return st;
    if (strcmp(text, "once") != 0 && strcmp(text, "per_run") != 0)
        return tb_sp_bad(c, k2, "'%s' is not once or per_run", text);
    t->per_run = strcmp(text, "per_run") == 0;
    snprintf(k2, sizeof k2, "%s.budget", key);
    if ((v = cJSON_GetObjectItemCaseSensitive(o, "budget")) &&
        (st = read_budget(c, v, k2, t)) != TB_OK)
        return st;
    t->on = true;
    return TB_OK;
}

/* Points that stand for the space: its corners' midpoint, its lower corner and (just inside)
 * its upper one, or every point of a list. */
static int probe_points(const tb_search_space *space, tb_hparams *out, int cap)
{
    int list = tb_search_space_list_size(space);
    if (list > 0) {
        tb_error e = {0};
        int n = list < cap ? list : cap;
        return tb_search_space_sample(space, 1, n, 0, out, &e) == TB_OK ? n : 0;
    }
    double u[TB_HPARAMS_MAX];
    const double at[3] = {0.5, 0.0, 1.0 - 1e-9};
    for (int i = 0; i < 3; i++) {
        for (int d = 0; d < tb_search_space_dims(space); d++) u[d] = at[i];
        out[i].count = 0;
        tb_search_space_map(space, u, &out[i]);
    }
    return 3;
}

/* A budget the cell's run cannot honour. */
static tb_status check_budget(tb_sp_ctx *c, const tb_study_tune *t, const char *cell,
                              const tb_run_config *cfg)
{
    char k2[96];
    snprintf(k2, sizeof k2, "%s.budget", t->key);
    const tb_workload_info *w = tb_workload_find_info(cfg->model.workload);
    if (t->budget_seconds > 0 && w && t->budget_seconds > w->max_runtime_s)
        return tb_sp_bad(c, k2, "cell %s: %g s is past %s's time budget (%g s of timed "
                         "training)", cell, t->budget_seconds, w->id, w->max_runtime_s);
    if (t->budget_epochs > 0 && tb_study_metric_to_target(c->plan->metric))
        return tb_sp_bad(c, k2, "cell %s: a time_to_target run ends by the workload's time "
                         "budget, not by epochs: give {\"steps\": n} or {\"seconds\": s}",
                         cell);
    return TB_OK;
}

/* Every tuned cell: its space's hyperparameters known to its algorithm and within their ranges,
 * the gp sampler only on a space of ranges, no more trials than a list has points, and a
 * budget the cell's workload can honour. */
tb_status tb_sp_check_tunes(tb_sp_ctx *c)
{
    const tb_study_plan *p = c->plan;
    for (int cell = 0; cell < tb_study_plan_cells(p); cell++) {
        const tb_study_tune *t = tb_study_plan_cell_tune(p, cell);
        if (!t) continue;
        char label[256], k2[96];
        tb_study_plan_cell_label(p, cell, label, sizeof label);
        snprintf(k2, sizeof k2, "%s.space", t->key);
        tb_search_space *space = NULL;
        tb_error e = {0};
        if (tb_search_space_parse(p->space_json[t->space], t->space_source, &space, &e) != TB_OK)
            return tb_sp_bad(c, k2, "%s", e.message);
        int list = tb_search_space_list_size(space);
        tb_hparams probes[16];
        int n = probe_points(space, probes, 16);
        tb_search_space_destroy(space);
        const tb_study_sampler sampler = tb_study_plan_cell_sampler(p, cell);
        if (sampler != TB_STUDY_SAMPLER_HALTON && list > 0)
            return tb_sp_bad(c, k2, "cell %s: the %s sampler needs a space of ranges, not a list "
                             "of points", label, tb_study_sampler_name(sampler));
        if (list > 0 && t->trials > list) {
            snprintf(k2, sizeof k2, "%s.trials", t->key);
            return tb_sp_bad(c, k2, "%d trials, but the space lists %d points", t->trials, list);
        }
        bool source = false;
        const bool prior = sampler == TB_STUDY_SAMPLER_GP_PRIOR;
        for (int d = 0; prior && !source && d < tb_study_plan_cells(p); d++)
            source = tb_study_prior_source(p, cell, d);
        if (prior && !source)
            return tb_sp_bad(c, k2, "cell %s: the gp_prior sampler pre-trains on other "
                             "workloads' searches of the same space, and no cell on another "
                             "workload searches it with halton or gp", label);
        tb_run_config cfg;
        tb_status st = tb_study_plan_trial_config(p, cell, 0, NULL, &cfg, &e);
        if (st != TB_OK) return tb_sp_bad(c, k2, "cell %s: %s", label, e.message);
        if ((st = check_budget(c, t, label, &cfg)) != TB_OK) return st;
        for (int i = 0; i < n; i++) {
            tb_run_config tc;
            st = tb_study_plan_trial_config(p, cell, 0, &probes[i], &tc, &e);
            if (st == TB_OK)
                st = tb_optimizer_check_hparams(tc.model.algorithm, &tc.model.hparams, &e);
            if (st != TB_OK) return tb_sp_bad(c, k2, "cell %s: %s", label, e.message);
        }
    }
    return TB_OK;
}
