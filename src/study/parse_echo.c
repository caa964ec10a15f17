/* parse_echo.c: what a study of data echoing against a slow upstream reads: the settings
 * "target" (a validation target in place of the workload's) and "eval_every_steps", and the
 * values of the axes "upstream_slowdown" and "echo". */
#include "study/parse_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

tb_status tb_study_echo_parse(const char *text, tb_echo_kind *kind, double *factor,
                              tb_error *err)
{
    if (!text || !kind || !factor)
        return tb_fail(err, TB_ERR_INVALID, "study_echo_parse: an argument is NULL");
    if (strcmp(text, "none") == 0) {
        *kind = TB_ECHO_NONE;
        *factor = 1;
        return TB_OK;
    }
    const char *colon = strchr(text, ':');
    if (!colon)
        return tb_fail(err, TB_ERR_INVALID, "'%s' is not \"none\" or KIND:FACTOR (e.g. "
                       "\"batch:2\")", text);
    char name[40];
    size_t n = (size_t)(colon - text);
    if (n == 0 || n >= sizeof name)
        return tb_fail(err, TB_ERR_INVALID, "'%s': no echo kind before the ':'", text);
    memcpy(name, text, n);
    name[n] = '\0';
    tb_status st = tb_echo_kind_parse(name, kind, err);
    if (st != TB_OK) return st;
    if (*kind == TB_ECHO_NONE)
        return tb_fail(err, TB_ERR_INVALID, "'%s': write no echoing as \"none\"", text);
    char *end = NULL;
    *factor = strtod(colon + 1, &end);
    if (end == colon + 1 || *end != '\0' || !isfinite(*factor))
        return tb_fail(err, TB_ERR_INVALID, "'%s': the echo factor after ':' is not a number",
                       text);
    if (!(*factor >= 1 && *factor <= 100))
        return tb_fail(err, TB_ERR_INVALID, "'%s': echo factor %g is not in [1, 100] (copies "
                       "per item: 1 is no echoing)", text, *factor);
    return TB_OK;
}

tb_status tb_sp_parse_echo_settings(tb_sp_ctx *c, const cJSON *o)
{
    tb_study_plan *p = c->plan;
    const cJSON *v;
    if ((v = cJSON_GetObjectItemCaseSensitive(o, "target"))) {
        double t = 0;
        tb_status st = tb_sp_number(c, v, "settings.target", false, &t);
        if (st != TB_OK) return st;
        if (!(t > 0)) return tb_sp_bad(c, "settings.target", "%g is not a positive validation "
                                      "target (the workload's metric: an error rate, a loss)", t);
        p->base.eval.target = t;
    }
    if ((v = cJSON_GetObjectItemCaseSensitive(o, "eval_every_steps"))) {
        int64_t n = 0;
        tb_status st = tb_sp_whole(c, v, "settings.eval_every_steps", 1, 1e9, &n);
        if (st != TB_OK) return st;
        p->base.eval.every_steps = n;
    }
    return TB_OK;
}

tb_status tb_sp_parse_echo_axis_value(tb_sp_ctx *c, tb_study_axis *a, const cJSON *v,
                                      const char *key)
{
    const int i = a->n;
    if (a->kind == TB_AXIS_SLOWDOWN) {
        tb_status st = tb_sp_number(c, v, key, false, &a->numbers[i]);
        if (st != TB_OK) return st;
        if (!(a->numbers[i] > 0 && a->numbers[i] <= 1000))
            return tb_sp_bad(c, key, "upstream slowdown %g is not in (0, 1000] (the upstream's "
                             "cost per batch, in step times)", a->numbers[i]);
        snprintf(a->labels[i], TB_STUDY_LABEL_MAX, "%g", a->numbers[i]);
        return TB_OK;
    }
    if (!cJSON_IsString(v))
        return tb_sp_bad(c, key, "must be \"none\" or \"KIND:FACTOR\" (e.g. \"batch:2\")");
    if (strlen(v->valuestring) >= TB_STUDY_LABEL_MAX) return tb_sp_bad(c, key, "too long");
    tb_echo_kind kind;
    tb_error e = {0};
    if (tb_study_echo_parse(v->valuestring, &kind, &a->numbers[i], &e) != TB_OK)
        return tb_sp_bad(c, key, "%s", e.message);
    snprintf(a->labels[i], TB_STUDY_LABEL_MAX, "%s", v->valuestring);
    return TB_OK;
}

tb_status tb_sp_check_echo_axes(tb_sp_ctx *c)
{
    const tb_study_plan *p = c->plan;
    bool mode = false, factor = false;
    for (int k = 0; k < p->n_axes; k++) {
        mode |= p->axes[k].kind == TB_AXIS_ECHO_MODE;
        factor |= p->axes[k].kind == TB_AXIS_ECHO;
    }
    if (mode && factor)
        return tb_sp_bad(c, "axes.echo", "an \"echo\" axis sets the kind and the factor: give it "
                         "or \"echo_factor\", not both");
    if (mode && p->base.data.pipeline.echo != TB_ECHO_NONE)
        return tb_sp_bad(c, "settings.echo", "an \"echo\" axis sets each cell's kind: leave "
                         "settings.echo out");
    return TB_OK;
}

double tb_study_plan_cell_slowdown(const tb_study_plan *plan, int cell)
{
    int values[TB_STUDY_MAX_AXES];
    tb_study_plan_cell_values(plan, cell, values);
    for (int k = 0; k < plan->n_axes; k++)
        if (plan->axes[k].kind == TB_AXIS_SLOWDOWN) return plan->axes[k].numbers[values[k]];
    return 0;
}
