/* parse_figures.c: a study's "figures" beyond the table: "variance" (std per source, each
 * varied alone, with intervals), "rank" (cells ranked within each run) and "curve" (the best
 * tuning trial so far over the trials), each refused at load where it cannot describe the
 * metric or the plan. */
#include "study/parse_impl.h"

#include "study/study_impl.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "trainbench/tune.h"

static tb_status parse_variance(tb_sp_ctx *c, const cJSON *o, const char *key)
{
    static const char *const keys[] = {"type", "sources"};
    tb_study_plan *p = c->plan;
    tb_status st = tb_sp_only_keys(c, o, key, keys, 2);
    if (st != TB_OK) return st;
    char k2[96];
    snprintf(k2, sizeof k2, "%s.sources", key);
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(o, "sources");
    if (!list || !cJSON_IsArray(list) || !list->child)
        return tb_sp_bad(c, k2, "missing (a list of the sources varied one at a time: init, "
                         "data_order, split, dropout, augment)");
    if (tb_study_metric_to_target(p->metric))
        return tb_sp_bad(c, key, "a variance figure cannot use %s: a run that misses the "
                         "target has no finite value to take a std of",
                         tb_study_metric_name(p->metric));
    int i = 0;
    for (const cJSON *v = list->child; v; v = v->next, i++) {
        snprintf(k2, sizeof k2, "%s.sources[%d]", key, i);
        tb_stream s;
        tb_error e = {0};
        if (!cJSON_IsString(v) || tb_stream_parse(v->valuestring, &s, &e) != TB_OK)
            return tb_sp_bad(c, k2, "%s", e.message[0] ? e.message : "must be a source's name");
        for (int k = 0; k < p->n_fig_sources; k++)
            if (p->fig_sources[k] == s)
                return tb_sp_bad(c, k2, "'%s' is listed twice", v->valuestring);
        int kept = 0; /* the cells that search per run are left out */
        for (int cell = 0; cell < tb_study_plan_cells(p); cell++) {
            if (tb_study_plan_cell_per_run(p, cell)) continue;
            kept++;
            tb_run_config cfg;
            const bool tunes = tb_study_plan_cell_tune(p, cell) != NULL;
            if (tb_study_plan_run_config(p, cell, 0, &cfg, &e) != TB_OK ||
                tb_study_check_source(&cfg, s, tunes, &e) != TB_OK) {
                char label[256];
                tb_study_plan_cell_label(p, cell, label, sizeof label);
                return tb_sp_bad(c, k2, "cell %s: %s", label, e.message);
            }
        }
        if (kept == 0)
            return tb_sp_bad(c, key, "every cell searches per run: its runs vary the search "
                             "with every source, so no source varies alone");
        p->fig_sources[p->n_fig_sources++] = s;
    }
    p->fig_variance = true;
    return TB_OK;
}

/* The estimators figure pairs each search=once cell with its search=per_run twin: it needs a
 * search axis with both values, and a metric with a finite value to take a mean of. */
static tb_status check_estimators(tb_sp_ctx *c, const char *key)
{
    const tb_study_plan *p = c->plan;
    int k = 0;
    while (k < p->n_axes && p->axes[k].kind != TB_AXIS_SEARCH) k++;
    if (k == p->n_axes || p->axes[k].n != 2)
        return tb_sp_bad(c, key, "the estimators figure needs an axis \"search\": [\"once\", "
                         "\"per_run\"] (the biased estimator against the ideal one)");
    if (tb_study_metric_to_target(p->metric))
        return tb_sp_bad(c, key, "the estimators figure cannot use %s: a run that misses the "
                         "target has no finite value to take a mean of",
                         tb_study_metric_name(p->metric));
    return TB_OK;
}

/* {"type": ..., "expect": judged_word | "none"}: *judged when the figure's rows are checks. */
static tb_status parse_expect(tb_sp_ctx *c, const cJSON *o, const char *key,
                              const char *judged_word, bool *judged)
{
    static const char *const keys[] = {"type", "expect"};
    tb_status st = tb_sp_only_keys(c, o, key, keys, 2);
    char k2[96], expect[32] = "none";
    snprintf(k2, sizeof k2, "%s.expect", key);
    if (st == TB_OK) st = tb_sp_text(c, o, "expect", k2, false, expect, sizeof expect);
    if (st != TB_OK) return st;
    if (strcmp(expect, judged_word) != 0 && strcmp(expect, "none") != 0)
        return tb_sp_bad(c, k2, "'%s' is not %s or none", expect, judged_word);
    *judged = strcmp(expect, judged_word) == 0;
    return TB_OK;
}

/* The utility figure ranks the candidate spaces of a "space" axis (3 or more; the other axes
 * one value each), every cell searching per run in a space of ranges with the first cell's
 * hyperparameters, each budget within every search. */
static tb_status check_utility(tb_sp_ctx *c, const char *key)
{
    const tb_study_plan *p = c->plan;
    int k = 0;
    while (k < p->n_axes && p->axes[k].kind != TB_AXIS_SPACE) k++;
    if (k == p->n_axes || p->axes[k].n < 3)
        return tb_sp_bad(c, key, "the utility figure needs an axis \"space\" of 3 or more "
                         "candidate spaces to rank");
    for (int a = 0; a < p->n_axes; a++)
        if (a != k && p->axes[a].n > 1)
            return tb_sp_bad(c, key, "the utility figure ranks the spaces alone: axis '%s' has "
                             "%d values (give it one)", p->axes[a].name, p->axes[a].n);
    if (p->metric == TB_METRIC_TIME_TO_TARGET)
        return tb_sp_bad(c, key, "the utility figure cannot use time_to_target: a trial that "
                         "misses the target has no finite value for the GP to fit");
    char first[TB_HPARAMS_MAX][TB_HPARAM_NAME_MAX];
    int dims = -1;
    for (int cell = 0; cell < tb_study_plan_cells(p); cell++) {
        const tb_study_tune *t = tb_study_plan_cell_tune(p, cell);
        char label[256];
        tb_study_plan_cell_label(p, cell, label, sizeof label);
        if (!t || !tb_study_plan_cell_per_run(p, cell))
            return tb_sp_bad(c, key, "cell %s: the utility figure compares repeated searches: "
                             "every cell tunes with \"search\": \"per_run\"", label);
        for (int b = 0; b < p->n_utility_budgets; b++)
            if (p->utility_budgets[b] > t->trials)
                return tb_sp_bad(c, key, "cell %s: budget %d is more than its %d trials",
                                 label, p->utility_budgets[b], t->trials);
        tb_search_space *space = NULL;
        tb_error e = {0};
        if (tb_search_space_parse(p->space_json[t->space], t->space_source, &space, &e) != TB_OK)
            return tb_sp_bad(c, key, "cell %s: %s", label, e.message);
        const int n = tb_search_space_dims(space);
        bool same = n > 0 && (dims < 0 || n == dims);
        for (int d = 0; d < n && same; d++) {
            tb_search_dim sd;
            tb_search_space_dim(space, d, &sd);
            if (dims < 0) { /* the first cell's names, to compare the others with */
                snprintf(first[d], sizeof first[d], "%s", sd.name);
                continue;
            }
            bool found = false;
            for (int j = 0; j < n && !found; j++) found = strcmp(first[j], sd.name) == 0;
            same = found;
        }
        tb_search_space_destroy(space);
        if (!same)
            return tb_sp_bad(c, key, "cell %s: the utility figure draws points from spaces of "
                             "ranges with the same hyperparameters; %s's space %s", label, label,
                             n == 0 ? "is a list of points" : "differs from the first cell's");
        dims = n;
    }
    return TB_OK;
}

/* {"type": "utility", "budgets": [b, ...], "min_tau": t}: the budgets (1 to 8, increasing),
 * and the judgement's threshold on the mean Kendall tau (optional, in [-1, 1]). */
static tb_status parse_utility(tb_sp_ctx *c, const cJSON *o, const char *key)
{
    static const char *const keys[] = {"type", "budgets", "min_tau"};
    tb_study_plan *p = c->plan;
    p->utility_min_tau = NAN;
    tb_status st = tb_sp_only_keys(c, o, key, keys, 3);
    if (st != TB_OK) return st;
    char k2[96];
    snprintf(k2, sizeof k2, "%s.budgets", key);
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(o, "budgets");
    if (!list || !cJSON_IsArray(list) || !list->child)
        return tb_sp_bad(c, k2, "missing (a list of trial budgets, e.g. [1, 2, 4, 8])");
    int i = 0;
    for (const cJSON *v = list->child; v; v = v->next, i++) {
        snprintf(k2, sizeof k2, "%s.budgets[%d]", key, i);
        if (i == TB_STUDY_MAX_BUDGETS)
            return tb_sp_bad(c, k2, "more than %d budgets", TB_STUDY_MAX_BUDGETS);
        int64_t b = 0;
        if ((st = tb_sp_whole(c, v, k2, 1, 1000, &b)) != TB_OK) return st;
        if (i > 0 && b <= p->utility_budgets[i - 1])
            return tb_sp_bad(c, k2, "%lld is not more than the budget before it",
                             (long long)b);
        p->utility_budgets[p->n_utility_budgets++] = (int)b;
    }
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, "min_tau");
    snprintf(k2, sizeof k2, "%s.min_tau", key);
    if (v && (st = tb_sp_number(c, v, k2, false, &p->utility_min_tau)) != TB_OK) return st;
    if (v && !(p->utility_min_tau >= -1 && p->utility_min_tau <= 1))
        return tb_sp_bad(c, k2, "%g is not in [-1, 1] (a Kendall tau)", p->utility_min_tau);
    return check_utility(c, key);
}

/* The regret figure sets the samplers of a "sampler" axis (halton, the reference, and another)
 * side by side: every cell searching per run with the same number of trials. */
static tb_status check_regret(tb_sp_ctx *c, const char *key)
{
    const tb_study_plan *p = c->plan;
    int k = 0;
    while (k < p->n_axes && p->axes[k].kind != TB_AXIS_SAMPLER) k++;
    bool halton = false;
    for (int i = 0; k < p->n_axes && i < p->axes[k].n; i++)
        halton |= strcmp(p->axes[k].labels[i], "halton") == 0;
    if (k == p->n_axes || p->axes[k].n < 2 || !halton)
        return tb_sp_bad(c, key, "the regret figure needs an axis \"sampler\" with \"halton\" "
                         "(the reference) and another sampler");
    if (p->metric == TB_METRIC_TIME_TO_TARGET)
        return tb_sp_bad(c, key, "the regret figure cannot use time_to_target: a trial that "
                         "misses the target has no finite regret");
    int trials = -1;
    for (int cell = 0; cell < tb_study_plan_cells(p); cell++) {
        const tb_study_tune *t = tb_study_plan_cell_tune(p, cell);
        char label[256];
        tb_study_plan_cell_label(p, cell, label, sizeof label);
        if (!t || !tb_study_plan_cell_per_run(p, cell))
            return tb_sp_bad(c, key, "cell %s: the regret figure compares repeated searches: "
                             "every cell tunes with \"search\": \"per_run\"", label);
        if (trials >= 0 && t->trials != trials)
            return tb_sp_bad(c, key, "cell %s: %d trials, another cell %d: the regret figure "
                             "compares searches of the same length", label, t->trials, trials);
        trials = t->trials;
    }
    return TB_OK;
}

/* {"type": "regret", "min_ratio": r}: each gp_prior cell judged on halton's trials to the
 * target over its own (optional, >= 1). */
static tb_status parse_regret(tb_sp_ctx *c, const cJSON *o, const char *key)
{
    static const char *const keys[] = {"type", "min_ratio"};
    tb_study_plan *p = c->plan;
    tb_status st = o ? tb_sp_only_keys(c, o, key, keys, 2) : TB_OK;
    if (st != TB_OK) return st;
    const cJSON *v = o ? cJSON_GetObjectItemCaseSensitive(o, "min_ratio") : NULL;
    char k2[96];
    snprintf(k2, sizeof k2, "%s.min_ratio", key);
    if (v && (st = tb_sp_number(c, v, k2, false, &p->regret_min_ratio)) != TB_OK) return st;
    if (v && !(p->regret_min_ratio >= 1 && p->regret_min_ratio <= 1000))
        return tb_sp_bad(c, k2, "%g is not in [1, 1000] (halton's trials over the cell's)",
                         p->regret_min_ratio);
    return check_regret(c, key);
}

/* The echoing figure sets echo cells against "none" at each upstream slowdown, in time to
 * target (the study's metric) and fresh examples to it. */
static tb_status check_echoing(tb_sp_ctx *c, const char *key)
{
    const tb_study_plan *p = c->plan;
    int ke = -1, ks = -1;
    for (int k = 0; k < p->n_axes; k++) {
        if (p->axes[k].kind == TB_AXIS_ECHO_MODE) ke = k;
        if (p->axes[k].kind == TB_AXIS_SLOWDOWN) ks = k;
    }
    if (ke < 0 || ks < 0)
        return tb_sp_bad(c, key, "the echoing figure needs the axes \"echo\" (with \"none\") "
                         "and \"upstream_slowdown\"");
    bool none = false;
    for (int i = 0; i < p->axes[ke].n; i++) none |= strcmp(p->axes[ke].labels[i], "none") == 0;
    if (!none || p->axes[ke].n < 2)
        return tb_sp_bad(c, key, "the echoing figure needs \"none\" and an echo kind on the "
                         "\"echo\" axis (no echoing is what each echo cell is set against)");
    if (p->metric != TB_METRIC_TIME_TO_TARGET)
        return tb_sp_bad(c, key, "the echoing figure needs the metric time_to_target (it reads "
                         "fresh examples to the target from the same runs), not %s",
                         tb_study_metric_name(p->metric));
    return TB_OK;
}

tb_status tb_sp_parse_figures(tb_sp_ctx *c, const cJSON *o)
{
    tb_study_plan *p = c->plan;
    if (!cJSON_IsArray(o))
        return tb_sp_bad(c, "figures", "must be a list of \"rank\", \"curve\" or {\"type\": "
                         "\"variance\", \"sources\": [...]}");
    int i = 0;
    for (const cJSON *it = o->child; it; it = it->next, i++) {
        char key[48];
        snprintf(key, sizeof key, "figures[%d]", i);
        const char *type = cJSON_IsString(it) ? it->valuestring : NULL;
        const cJSON *t = cJSON_IsObject(it) ? cJSON_GetObjectItemCaseSensitive(it, "type") : NULL;
        if (t) type = cJSON_IsString(t) ? t->valuestring : NULL;
        if (!type) return tb_sp_bad(c, key, "must be a figure's name or {\"type\": ...}");
        bool *seen = strcmp(type, "variance") == 0 ? &p->fig_variance
                     : strcmp(type, "rank") == 0   ? &p->fig_rank
                     : strcmp(type, "curve") == 0  ? &p->fig_curve
                     : strcmp(type, "estimators") == 0 ? &p->fig_estimators
                     : strcmp(type, "utility") == 0    ? &p->fig_utility
                     : strcmp(type, "regret") == 0     ? &p->fig_regret
                     : strcmp(type, "echoing") == 0    ? &p->fig_echoing
                     : strcmp(type, "detection") == 0  ? &p->fig_detection
                     : strcmp(type, "stability") == 0  ? &p->fig_stability
                                                   : NULL;
        if (!seen)
            return tb_sp_bad(c, key, "unknown figure '%s' (expected variance, rank, curve, "
                             "estimators, utility, regret, echoing, detection or stability)",
                             type);
        if (*seen) return tb_sp_bad(c, key, "'%s' is listed twice", type);
        tb_status st = TB_OK;
        if (strcmp(type, "variance") == 0) {
            if (!cJSON_IsObject(it))
                return tb_sp_bad(c, key, "a variance figure names its sources: {\"type\": "
                                 "\"variance\", \"sources\": [...]}");
            st = parse_variance(c, it, key);
        } else if (strcmp(type, "regret") == 0) {
            p->regret_min_ratio = NAN;
            st = parse_regret(c, cJSON_IsObject(it) ? it : NULL, key);
        } else if (strcmp(type, "utility") == 0) {
            if (!cJSON_IsObject(it))
                return tb_sp_bad(c, key, "a utility figure names its budgets: {\"type\": "
                                 "\"utility\", \"budgets\": [1, 2, 4, 8]}");
            st = parse_utility(c, it, key);
        } else if (strcmp(type, "estimators") == 0 && cJSON_IsObject(it)) {
            st = parse_expect(c, it, key, "close", &p->fig_estimators_judged);
        } else if (strcmp(type, "detection") == 0) {
            st = tb_sp_parse_detection(c, cJSON_IsObject(it) ? it : NULL, key);
        } else if (strcmp(type, "stability") == 0) {
            st = tb_sp_parse_stability(c, cJSON_IsObject(it) ? it : NULL, key);
        } else if (strcmp(type, "echoing") == 0 && cJSON_IsObject(it)) {
            st = parse_expect(c, it, key, "helps_when_slow", &p->fig_echoing_judged);
        } else if (cJSON_IsObject(it)) {
            static const char *const keys[] = {"type"};
            st = tb_sp_only_keys(c, it, key, keys, 1);
        }
        if (st != TB_OK) return st;
        bool tuned = false;
        for (int cell = 0; cell < tb_study_plan_cells(p); cell++)
            tuned |= tb_study_plan_cell_tune(p, cell) != NULL;
        if (strcmp(type, "curve") == 0 && !tuned)
            return tb_sp_bad(c, key, "a curve shows the best tuning trial so far: no cell "
                             "tunes (give a \"tune\")");
        if (strcmp(type, "rank") == 0 && tb_study_plan_cells(p) < 2)
            return tb_sp_bad(c, key, "a rank table needs two or more cells");
        if (strcmp(type, "estimators") == 0 && (st = check_estimators(c, key)) != TB_OK)
            return st;
        if (strcmp(type, "echoing") == 0 && (st = check_echoing(c, key)) != TB_OK) return st;
        *seen = true;
    }
    return TB_OK;
}
