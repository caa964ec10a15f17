/* parse_stability.c: what a study of the edge of stability reads: the settings
 * "sharpness_every" and "sharpness_iters" (the sharpness measured during every run, as `train
 * --sharpness-every`), and the figure {"type": "stability", "tail": 0.5, "expect":
 * "at_threshold", "tolerance": 0.2}, refused at load without the measurements, for a tail
 * outside (0, 1], and for a cell whose optimizer has no known stability threshold. */
#include "study/parse_impl.h"

#include "study/study_impl.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

tb_status tb_sp_parse_sharpness_settings(tb_sp_ctx *c, const cJSON *o)
{
    tb_study_plan *p = c->plan;
    const cJSON *v;
    int64_t n = 0;
    tb_status st = TB_OK;
    if ((v = cJSON_GetObjectItemCaseSensitive(o, "sharpness_every"))) {
        if ((st = tb_sp_whole(c, v, "settings.sharpness_every", 1, 1e9, &n)) != TB_OK) return st;
        p->base.diag.sharpness_every = n;
    }
    if ((v = cJSON_GetObjectItemCaseSensitive(o, "sharpness_iters"))) {
        if ((st = tb_sp_whole(c, v, "settings.sharpness_iters", 1, TB_LANCZOS_MAX_ITERS, &n)) !=
            TB_OK)
            return st;
        if (p->base.diag.sharpness_every <= 0)
            return tb_sp_bad(c, "settings.sharpness_iters", "needs settings.sharpness_every (the "
                             "steps between measurements)");
        p->base.diag.sharpness_iters = (int)n;
    }
    return TB_OK;
}

static tb_status number_in(tb_sp_ctx *c, const cJSON *o, const char *key, const char *name,
                           double *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
    char k2[96];
    snprintf(k2, sizeof k2, "%s.%s", key, name);
    tb_status st = v ? tb_sp_number(c, v, k2, false, out) : TB_OK;
    if (st == TB_OK && !(*out > 0 && *out <= 1))
        return tb_sp_bad(c, k2, "%g is not in (0, 1] (%s)", *out,
                         strcmp(name, "tail") == 0 ? "the last fraction of each run's "
                                                     "measurements"
                                                   : "the largest |median ratio - 1| judged at "
                                                     "the threshold");
    return st;
}

tb_status tb_sp_parse_stability(tb_sp_ctx *c, const cJSON *o, const char *key)
{
    static const char *const keys[] = {"type", "tail", "expect", "tolerance"};
    tb_study_plan *p = c->plan;
    p->stability_tail = 0.5;
    p->stability_tolerance = 0.2;
    p->stability_judged = false;
    tb_status st = o ? tb_sp_only_keys(c, o, key, keys, 4) : TB_OK;
    if (st == TB_OK && o) st = number_in(c, o, key, "tail", &p->stability_tail);
    if (st == TB_OK && o) st = number_in(c, o, key, "tolerance", &p->stability_tolerance);
    char k2[96], expect[32] = "none";
    snprintf(k2, sizeof k2, "%s.expect", key);
    if (st == TB_OK && o) st = tb_sp_text(c, o, "expect", k2, false, expect, sizeof expect);
    if (st != TB_OK) return st;
    if (strcmp(expect, "at_threshold") != 0 && strcmp(expect, "none") != 0)
        return tb_sp_bad(c, k2, "'%s' is not at_threshold or none", expect);
    p->stability_judged = strcmp(expect, "at_threshold") == 0;
    if (p->base.diag.sharpness_every <= 0)
        return tb_sp_bad(c, key, "the stability figure needs settings.sharpness_every (the "
                         "steps between sharpness measurements)");
    for (int cell = 0; cell < tb_study_plan_cells(p); cell++) {
        char label[256];
        tb_study_plan_cell_label(p, cell, label, sizeof label);
        if (tb_study_plan_cell_tune(p, cell))
            return tb_sp_bad(c, key, "cell %s tunes: the stability figure needs each cell's "
                             "learning rate before its runs (its threshold)", label);
        double t = 0;
        tb_error e = {0};
        if (tb_study_cell_threshold(p, cell, &t, &e) != TB_OK)
            return tb_sp_bad(c, key, "cell %s: %s", label, e.message);
    }
    return TB_OK;
}
