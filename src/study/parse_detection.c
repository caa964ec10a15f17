/* parse_detection.c: the detection figure, {"type": "detection", "n": 29, "k": 5, "gamma":
 * 0.75, "resamples": 1000} (each optional, these the defaults; "max_false_positive" and
 * "max_false_negative" judge the P(A>B) test's rates), refused at load where the
 * plan has not the two cells it compares or the metric has no finite value per run. */
#include "study/parse_impl.h"

#include "study/study_impl.h"

#include <math.h>
#include <stdio.h>

static tb_status whole(tb_sp_ctx *c, const cJSON *o, const char *key, const char *name,
                       double lo, double hi, int *out)
{
    const cJSON *v = o ? cJSON_GetObjectItemCaseSensitive(o, name) : NULL;
    char k2[96];
    snprintf(k2, sizeof k2, "%s.%s", key, name);
    int64_t x = 0;
    tb_status st = v ? tb_sp_whole(c, v, k2, lo, hi, &x) : TB_OK;
    if (v && st == TB_OK) *out = (int)x;
    return st;
}

tb_status tb_sp_parse_detection(tb_sp_ctx *c, const cJSON *o, const char *key)
{
    static const char *const keys[] = {"type", "n", "k", "gamma", "resamples",
                                       "max_false_positive", "max_false_negative"};
    tb_study_plan *p = c->plan;
    p->detection_n = 29;
    p->detection_k = 5;
    p->detection_gamma = 0.75;
    p->detection_resamples = 1000;
    p->detection_max_fp = p->detection_max_fn = NAN;
    tb_status st = o ? tb_sp_only_keys(c, o, key, keys, 7) : TB_OK;
    if (st == TB_OK) st = whole(c, o, key, "n", 1, 1000, &p->detection_n);
    if (st == TB_OK) st = whole(c, o, key, "k", 1, 1000, &p->detection_k);
    if (st == TB_OK) st = whole(c, o, key, "resamples", 1, 100000, &p->detection_resamples);
    if (st != TB_OK) return st;
    char k2[96];
    snprintf(k2, sizeof k2, "%s.k", key);
    if (p->detection_k > p->detection_n)
        return tb_sp_bad(c, k2, "%d is more than n = %d (the mean is of the first k of the n "
                         "runs a side)", p->detection_k, p->detection_n);
    const cJSON *g = o ? cJSON_GetObjectItemCaseSensitive(o, "gamma") : NULL;
    snprintf(k2, sizeof k2, "%s.gamma", key);
    if (g && (st = tb_sp_number(c, g, k2, false, &p->detection_gamma)) != TB_OK) return st;
    if (!(p->detection_gamma > 0.5 && p->detection_gamma < 1))
        return tb_sp_bad(c, k2, "%g is not in (0.5, 1) (the smallest meaningful P(A>B))",
                         p->detection_gamma);
    const char *names[2] = {"max_false_positive", "max_false_negative"};
    double *rates[2] = {&p->detection_max_fp, &p->detection_max_fn};
    for (int i = 0; i < 2; i++) {
        const cJSON *r = o ? cJSON_GetObjectItemCaseSensitive(o, names[i]) : NULL;
        snprintf(k2, sizeof k2, "%s.%s", key, names[i]);
        if (r && (st = tb_sp_number(c, r, k2, false, rates[i])) != TB_OK) return st;
        if (r && !(*rates[i] >= 0 && *rates[i] <= 1))
            return tb_sp_bad(c, k2, "%g is not in [0, 1] (a rate)", *rates[i]);
    }
    if (isnan(p->detection_max_fp) != isnan(p->detection_max_fn))
        return tb_sp_bad(c, key, "give both max_false_positive and max_false_negative (the "
                         "judgement) or neither");
    if (tb_study_plan_cells(p) != 2)
        return tb_sp_bad(c, key, "the detection figure compares two cells (one axis with two "
                         "values, e.g. a good and a worse learning rate); the plan has %d",
                         tb_study_plan_cells(p));
    if (tb_study_metric_to_target(p->metric))
        return tb_sp_bad(c, key, "the detection figure cannot use %s: a run that misses the "
                         "target has no finite value to resample",
                         tb_study_metric_name(p->metric));
    return TB_OK;
}
