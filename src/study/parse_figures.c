/* parse_figures.c: a study's "figures" beyond the table: "variance" (std per source, each
 * varied alone, with intervals), "rank" (cells ranked within each run) and "curve" (the best
 * tuning trial so far over the trials), each refused at load where it cannot describe the
 * metric or the plan. */
#include "study/parse_impl.h"

#include "study/study_impl.h"

#include <stdio.h>
#include <string.h>

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

/* {"type": "estimators", "expect": "close" | "none"}: whether each row is a check. */
static tb_status parse_estimators(tb_sp_ctx *c, const cJSON *o, const char *key)
{
    static const char *const keys[] = {"type", "expect"};
    tb_status st = tb_sp_only_keys(c, o, key, keys, 2);
    char k2[96], expect[32] = "none";
    snprintf(k2, sizeof k2, "%s.expect", key);
    if (st == TB_OK) st = tb_sp_text(c, o, "expect", k2, false, expect, sizeof expect);
    if (st != TB_OK) return st;
    if (strcmp(expect, "close") != 0 && strcmp(expect, "none") != 0)
        return tb_sp_bad(c, k2, "'%s' is not close or none", expect);
    c->plan->fig_estimators_judged = strcmp(expect, "close") == 0;
    return TB_OK;
}

/* {"type": "echoing", "expect": "helps_when_slow" | "none"}: whether its rows are checks. */
static tb_status parse_echoing(tb_sp_ctx *c, const cJSON *o, const char *key)
{
    static const char *const keys[] = {"type", "expect"};
    tb_status st = tb_sp_only_keys(c, o, key, keys, 2);
    char k2[96], expect[32] = "none";
    snprintf(k2, sizeof k2, "%s.expect", key);
    if (st == TB_OK) st = tb_sp_text(c, o, "expect", k2, false, expect, sizeof expect);
    if (st != TB_OK) return st;
    if (strcmp(expect, "helps_when_slow") != 0 && strcmp(expect, "none") != 0)
        return tb_sp_bad(c, k2, "'%s' is not helps_when_slow or none", expect);
    c->plan->fig_echoing_judged = strcmp(expect, "helps_when_slow") == 0;
    return TB_OK;
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
                     : strcmp(type, "echoing") == 0    ? &p->fig_echoing
                                                   : NULL;
        if (!seen)
            return tb_sp_bad(c, key, "unknown figure '%s' (expected variance, rank, curve, "
                             "estimators or echoing)", type);
        if (*seen) return tb_sp_bad(c, key, "'%s' is listed twice", type);
        tb_status st = TB_OK;
        if (strcmp(type, "variance") == 0) {
            if (!cJSON_IsObject(it))
                return tb_sp_bad(c, key, "a variance figure names its sources: {\"type\": "
                                 "\"variance\", \"sources\": [...]}");
            st = parse_variance(c, it, key);
        } else if (strcmp(type, "estimators") == 0 && cJSON_IsObject(it)) {
            st = parse_estimators(c, it, key);
        } else if (strcmp(type, "echoing") == 0 && cJSON_IsObject(it)) {
            st = parse_echoing(c, it, key);
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
