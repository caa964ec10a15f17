/* plan_points.c: the hyperparameter points a benchmark plans for one submission: its search
 * space (a built-in's file, checked against its baseline, or an external library's text)
 * sampled as AlgoPerf does: a space of ranges by the Halton sequence, a list of points in file
 * order, min(points, trials) of them in every study. */
#include "bench/bench_impl.h"
#include "bench/pysub.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Checks a built-in's (parsed, so well-formed) search space against its optimizer: every
 * dimension a hyperparameter it has, every range end and feasible point in its valid range.
 * Without this a typo ("learning_rat") plans trials that all fail when they run. */
static tb_status check_search_space(const tb_optimizer_info *info, const char *text,
                                    const char *source, tb_error *err)
{
    cJSON *root = cJSON_Parse(text);
    if (!root) return tb_fail(err, TB_ERR_INVALID, "%s: malformed JSON", source);
    tb_status st = TB_OK;
    if (cJSON_IsArray(root)) { /* an explicit list of points */
        for (const cJSON *pt = root->child; st == TB_OK && pt; pt = pt->next)
            for (const cJSON *v = pt->child; st == TB_OK && v; v = v->next)
                st = tb_bench_check_dimension(info, source, v->string,
                                     cJSON_IsBool(v) ? cJSON_IsTrue(v) : v->valuedouble, err);
    } else {
        for (const cJSON *d = root->child; st == TB_OK && d; d = d->next) {
            const cJSON *lo = cJSON_GetObjectItemCaseSensitive(d, "min");
            const cJSON *hi = cJSON_GetObjectItemCaseSensitive(d, "max");
            const cJSON *pts = cJSON_GetObjectItemCaseSensitive(d, "feasible_points");
            if (!d->string || !d->string[0])
                st = tb_bench_check_dimension(info, source, d->string, 0, err);
            if (st == TB_OK && cJSON_IsNumber(lo))
                st = tb_bench_check_dimension(info, source, d->string, lo->valuedouble, err);
            if (st == TB_OK && cJSON_IsNumber(hi))
                st = tb_bench_check_dimension(info, source, d->string, hi->valuedouble, err);
            for (const cJSON *v = pts ? pts->child : NULL; st == TB_OK && v; v = v->next)
                st = tb_bench_check_dimension(info, source, d->string,
                                     cJSON_IsBool(v) ? cJSON_IsTrue(v) : v->valuedouble, err);
        }
    }
    cJSON_Delete(root);
    return st;
}

tb_status tb_bench_load_space(const tb_bench_spec *s, const tb_submission_ref *ref,
                            tb_search_space **space, tb_error *err)
{
    *space = NULL;
    const char *text = tb_submission_ref_search_space(ref);
    if (!text && tb_submission_ref_python(ref))
        return tb_fail(err, TB_ERR_INVALID,
                       "Python submission %s sets no TUNING_SEARCH_SPACE, which the "
                       "external-tuning ruleset samples its trials from: set one, or run it "
                       "with --ruleset self", tb_submission_ref_spec(ref));
    if (!text && tb_submission_ref_external(ref))
        return tb_fail(err, TB_ERR_INVALID,
                       "submission library %s sets no default_search_space, which the "
                       "external-tuning ruleset samples its trials from: set one, or run it "
                       "with --ruleset self", tb_submission_ref_spec(ref));
    if (!text)
        return tb_fail(err, TB_ERR_MISSING,
                       "submission %s has no search space for the external-tuning ruleset "
                       "(expected %s/%s.json)", tb_submission_ref_name(ref),
                       s->search_space_dir ? s->search_space_dir : "<search space dir>",
                       tb_submission_ref_name(ref));
    char source[1200];
    const char *file = tb_submission_ref_search_space_path(ref);
    if (file[0])
        snprintf(source, sizeof source, "search space %s of %s", file, tb_submission_ref_name(ref));
    else
        snprintf(source, sizeof source, "search space of %s", tb_submission_ref_name(ref));
    tb_status st = tb_search_space_parse(text, source, space, err);
    if (st == TB_ERR_FORMAT) { /* malformed JSON: a bad value, like a bad range */
        st = TB_ERR_INVALID;
        if (err) err->status = st;
    }
    /* a built-in's space is checked against its optimizer (an external submission reads its
     * hyperparameters itself) */
    const char *optimizer = tb_submission_ref_optimizer(ref);
    const tb_optimizer_info *info = optimizer ? tb_optimizer_find(optimizer) : NULL;
    if (st == TB_OK && info) st = check_search_space(info, text, source, err);
    if (st == TB_OK && s->sampler == TB_SAMPLER_GP)
        st = tb_bench_gp_check(*space, tb_submission_ref_name(ref), err);
    if (st != TB_OK) {
        tb_search_space_destroy(*space);
        *space = NULL;
    }
    return st;
}


/* Every study takes the list's first `trials` points, in file order (AlgoPerf's
 * halton.generate_search for a list). */
static tb_status list_points(const tb_search_space *space, int studies, int trials,
                             tb_hparams *out, tb_error *err)
{
    for (int st = 0; st < studies; st++)
        for (int t = 0; t < trials; t++)
            if (!tb_search_space_list_point(space, t, &out[st * trials + t]))
                return tb_fail(err, TB_ERR_INTERNAL, "list point %d is missing", t + 1);
    return TB_OK;
}

tb_status tb_bench_plan_points(const tb_bench_spec *s, const tb_submission_ref *ref,
                               tb_hparams **points, int *trials, tb_search_space **space,
                               char *note, size_t note_cap, tb_error *err)
{
    *points = NULL;
    *space = NULL;
    if (note_cap) note[0] = 0;
    bool self = s->ruleset == TB_RULESET_SELF;
    *trials = self ? 1 : s->trials;
    tb_status st = self ? TB_OK : tb_bench_load_space(s, ref, space, err);
    int list = st == TB_OK && !self ? tb_search_space_list_size(*space) : 0;
    if (list > 0 && list < *trials) {
        snprintf(note, note_cap,
                 "the search space of %s lists %d point%s: each study runs %s in file order, "
                 "%d trial%s instead of %d (AlgoPerf runs min(points, trials))",
                 tb_submission_ref_name(ref), list, list > 1 ? "s" : "",
                 list > 1 ? "them" : "it", list, list > 1 ? "s" : "", *trials);
        *trials = list;
    }
    int n = s->studies * *trials;
    if (st == TB_OK && !(*points = calloc((size_t)n, sizeof **points)))
        st = tb_fail(err, TB_ERR_NOMEM, "planning: out of memory");
    if (st == TB_OK && !self) {
        st = list > 0 ? list_points(*space, s->studies, *trials, *points, err)
                      : tb_search_space_sample(*space, s->studies, *trials,
                                               tb_bench_points_seed(s), *points, err);
        if (st != TB_OK) tb_error_prefix(err, "search space of %s", tb_submission_ref_name(ref));
    }
    if (st != TB_OK) {
        free(*points);
        *points = NULL;
        tb_search_space_destroy(*space);
        *space = NULL;
    }
    return st;
}
