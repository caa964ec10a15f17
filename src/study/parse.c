/* parse.c: a study file (JSON) to a tb_study_plan, every check before any training.
 * The format is docs/STUDIES.md's; messages are "FILE: KEY: problem". */
#include "trainbench/study_plan.h"

#include "study/parse_impl.h"
#include "study/study_impl.h"
#include "trainbench/textfile.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool known_workload(const char *id)
{
    for (int i = 0; i < tb_workload_count(); i++)
        if (strcmp(tb_workload_info_at(i)->id, id) == 0) return true;
    return false;
}

static tb_status parse_hparams(tb_sp_ctx *c, const cJSON *o, const char *key, tb_hparams *out)
{
    if (!cJSON_IsObject(o)) return tb_sp_bad(c, key, "must be an object of name: value");
    for (const cJSON *it = o->child; it; it = it->next) {
        char k[200];
        snprintf(k, sizeof k, "%s.%s", key, it->string);
        double v = 0;
        tb_status st = tb_sp_number(c, it, k, true, &v);
        if (st != TB_OK) return st;
        if (tb_hparams_has(out, it->string)) return tb_sp_bad(c, k, "given twice");
        tb_error e = {0};
        if (tb_hparams_set(out, it->string, v, &e) != TB_OK) return tb_sp_bad(c, k, "%s", e.message);
    }
    return TB_OK;
}

static tb_status parse_settings(tb_sp_ctx *c, const cJSON *o)
{
    static const char *const keys[] = {"workload", "algorithm", "steps", "epochs",
                                       "batch_size", "eval_examples", "schedule",
                                       "warmup_fraction", "echo", "full_batch", "split",
                                       "augment", "seconds", "target",
                                       "eval_every_steps", "sharpness_every",
                                       "sharpness_iters"};
    tb_study_plan *p = c->plan;
    if (!cJSON_IsObject(o)) return tb_sp_bad(c, "settings", "must be an object");
    tb_status st = tb_sp_only_keys(c, o, "settings", keys, 17);
    if (st == TB_OK) st = tb_sp_parse_echo_settings(c, o);
    if (st == TB_OK) st = tb_sp_parse_sharpness_settings(c, o);
    if (st == TB_OK)
        st = tb_sp_text(c, o, "workload", "settings.workload", false, p->workload,
                      sizeof p->workload);
    if (st == TB_OK)
        st = tb_sp_text(c, o, "algorithm", "settings.algorithm", false, p->algorithm,
                      sizeof p->algorithm);
    if (st != TB_OK) return st;
    if (p->workload[0] && !known_workload(p->workload))
        return tb_sp_bad(c, "settings.workload", "unknown workload '%s' (see `trainbench workloads`)",
                   p->workload);
    if (p->algorithm[0] && !tb_optimizer_find(p->algorithm))
        return tb_sp_bad(c, "settings.algorithm", "unknown algorithm '%s' (see `trainbench "
                   "algorithms`)", p->algorithm);
    const cJSON *v;
    int64_t n;
    if ((v = cJSON_GetObjectItemCaseSensitive(o, "steps"))) {
        if ((st = tb_sp_whole(c, v, "settings.steps", 1, 1e9, &n)) != TB_OK) return st;
        p->base.length.max_steps = n;
    }
    if ((v = cJSON_GetObjectItemCaseSensitive(o, "epochs"))) {
        if (p->base.length.max_steps > 0)
            return tb_sp_bad(c, "settings.epochs", "give steps or epochs, not both");
        if ((st = tb_sp_number(c, v, "settings.epochs", false, &p->base.length.epochs)) != TB_OK)
            return st;
        if (p->base.length.epochs <= 0 || p->base.length.epochs > 1e4)
            return tb_sp_bad(c, "settings.epochs", "%g is not in (0, 10000]", p->base.length.epochs);
    }
    if ((v = cJSON_GetObjectItemCaseSensitive(o, "seconds"))) { /* a cap on each run's time */
        double *s = &p->base.length.max_time_s;
        if ((st = tb_sp_number(c, v, "settings.seconds", false, s)) != TB_OK) return st;
        if (!(*s > 0) || *s > 1e6)
            return tb_sp_bad(c, "settings.seconds", "%g is not in (0, 1e6] (timed training "
                             "seconds per run)", *s);
    }
    if ((v = cJSON_GetObjectItemCaseSensitive(o, "batch_size"))) {
        if ((st = tb_sp_whole(c, v, "settings.batch_size", 1, 1 << 20, &n)) != TB_OK) return st;
        p->base.data.batch_size = (int)n;
    }
    if ((v = cJSON_GetObjectItemCaseSensitive(o, "full_batch"))) {
        if ((st = tb_sp_whole(c, v, "settings.full_batch", 1, 1 << 20, &n)) != TB_OK) return st;
        if (p->base.data.batch_size > 0)
            return tb_sp_bad(c, "settings.full_batch", "give batch_size or full_batch, not both");
        p->base.data.full_batch = n;
    }
    if ((v = cJSON_GetObjectItemCaseSensitive(o, "eval_examples"))) {
        if ((st = tb_sp_whole(c, v, "settings.eval_examples", 1, 1e9, &n)) != TB_OK) return st;
        p->base.eval.examples = n;
    }
    char sched[32] = "";
    if ((st = tb_sp_text(c, o, "schedule", "settings.schedule", false, sched, sizeof sched)))
        return st;
    tb_error e = {0};
    if (sched[0] && tb_schedule_parse(sched, &p->base.length.schedule, &e) != TB_OK)
        return tb_sp_bad(c, "settings.schedule", "%s", e.message);
    char echo[32] = "";
    if ((st = tb_sp_text(c, o, "echo", "settings.echo", false, echo, sizeof echo))) return st;
    if (echo[0] && tb_echo_kind_parse(echo, &p->base.data.pipeline.echo, &e) != TB_OK)
        return tb_sp_bad(c, "settings.echo", "%s", e.message);
    char split[32] = "";
    if ((st = tb_sp_text(c, o, "split", "settings.split", false, split, sizeof split))) return st;
    if (split[0] && tb_split_kind_parse(split, &p->base.data.source.split_kind, &e) != TB_OK)
        return tb_sp_bad(c, "settings.split", "%s", e.message);
    if ((v = cJSON_GetObjectItemCaseSensitive(o, "augment"))) {
        if (!cJSON_IsBool(v)) return tb_sp_bad(c, "settings.augment", "must be true or false");
        p->base.data.pipeline.augment = cJSON_IsTrue(v);
    }
    if ((v = cJSON_GetObjectItemCaseSensitive(o, "warmup_fraction"))) {
        if ((st = tb_sp_number(c, v, "settings.warmup_fraction", false,
                            &p->base.length.warmup_fraction)) != TB_OK)
            return st;
        if (p->base.length.warmup_fraction < 0 || p->base.length.warmup_fraction >= 1)
            return tb_sp_bad(c, "settings.warmup_fraction", "%g is not in [0, 1)",
                       p->base.length.warmup_fraction);
    }
    return TB_OK;
}

static tb_study_axis_kind axis_kind(const char *name)
{
    if (strcmp(name, "workload") == 0) return TB_AXIS_WORKLOAD;
    if (strcmp(name, "algorithm") == 0) return TB_AXIS_ALGORITHM;
    if (strcmp(name, "batch_size") == 0) return TB_AXIS_BATCH_SIZE;
    if (strcmp(name, "steps") == 0) return TB_AXIS_STEPS;
    if (strcmp(name, "echo_factor") == 0) return TB_AXIS_ECHO;
    if (strcmp(name, "search") == 0) return TB_AXIS_SEARCH;
    if (strcmp(name, "space") == 0) return TB_AXIS_SPACE;
    if (strcmp(name, "sampler") == 0) return TB_AXIS_SAMPLER;
    if (strcmp(name, "upstream_slowdown") == 0) return TB_AXIS_SLOWDOWN;
    if (strcmp(name, "echo") == 0) return TB_AXIS_ECHO_MODE;
    return TB_AXIS_HPARAM;
}

static tb_status parse_axis_value(tb_sp_ctx *c, tb_study_axis *a, const cJSON *v,
                                  const char *key)
{
    int i = a->n;
    if (a->kind == TB_AXIS_WORKLOAD || a->kind == TB_AXIS_ALGORITHM) {
        if (!cJSON_IsString(v) || !v->valuestring[0]) return tb_sp_bad(c, key, "must be a name");
        if (strlen(v->valuestring) >= TB_STUDY_LABEL_MAX) return tb_sp_bad(c, key, "name too long");
        if (a->kind == TB_AXIS_WORKLOAD && !known_workload(v->valuestring))
            return tb_sp_bad(c, key, "unknown workload '%s' (see `trainbench workloads`)",
                       v->valuestring);
        if (a->kind == TB_AXIS_ALGORITHM && !tb_optimizer_find(v->valuestring))
            return tb_sp_bad(c, key, "unknown algorithm '%s' (see `trainbench algorithms`)",
                       v->valuestring);
        snprintf(a->labels[i], TB_STUDY_LABEL_MAX, "%s", v->valuestring);
        a->numbers[i] = NAN;
    } else if (a->kind == TB_AXIS_SLOWDOWN || a->kind == TB_AXIS_ECHO_MODE) {
        tb_status st = tb_sp_parse_echo_axis_value(c, a, v, key);
        if (st != TB_OK) return st;
    } else if (a->kind == TB_AXIS_SEARCH) {
        if (!cJSON_IsString(v) || (strcmp(v->valuestring, "once") != 0 &&
                                   strcmp(v->valuestring, "per_run") != 0))
            return tb_sp_bad(c, key, "must be \"once\" or \"per_run\" (a tuned cell's search)");
        snprintf(a->labels[i], TB_STUDY_LABEL_MAX, "%s", v->valuestring);
        a->numbers[i] = NAN;
    } else if (a->kind == TB_AXIS_SAMPLER) {
        tb_study_sampler s;
        if (!cJSON_IsString(v) || tb_sp_sampler_parse(v->valuestring, &s) != TB_OK)
            return tb_sp_bad(c, key, "must be \"halton\", \"gp\" or \"gp_prior\" (a tuned "
                             "cell's sampler)");
        snprintf(a->labels[i], TB_STUDY_LABEL_MAX, "%s", v->valuestring);
        a->numbers[i] = (double)s;
    } else if (a->kind == TB_AXIS_SPACE) {
        if (!cJSON_IsString(v) || !v->valuestring[0] ||
            strspn(v->valuestring, "abcdefghijklmnopqrstuvwxyz0123456789_-") !=
                strlen(v->valuestring))
            return tb_sp_bad(c, key, "must be a name of lower-case letters, digits, _ and - (a "
                             "candidate search space, given by an override's tune)");
        if (strlen(v->valuestring) >= TB_STUDY_LABEL_MAX) return tb_sp_bad(c, key, "name too long");
        snprintf(a->labels[i], TB_STUDY_LABEL_MAX, "%s", v->valuestring);
        a->numbers[i] = NAN;
    } else if (a->kind == TB_AXIS_HPARAM || a->kind == TB_AXIS_ECHO) {
        tb_status st = tb_sp_number(c, v, key, a->kind == TB_AXIS_HPARAM, &a->numbers[i]);
        if (st != TB_OK) return st;
        if (a->kind == TB_AXIS_ECHO && !(a->numbers[i] >= 1 && a->numbers[i] <= 100))
            return tb_sp_bad(c, key, "echo factor %g is not in [1, 100]", a->numbers[i]);
        snprintf(a->labels[i], TB_STUDY_LABEL_MAX, "%g", a->numbers[i]);
    } else {
        int64_t n;
        tb_status st = tb_sp_whole(c, v, key, 1, a->kind == TB_AXIS_STEPS ? 1e9 : 1 << 20, &n);
        if (st != TB_OK) return st;
        a->numbers[i] = (double)n;
        snprintf(a->labels[i], TB_STUDY_LABEL_MAX, "%lld", (long long)n);
    }
    for (int j = 0; j < i; j++)
        if (strcmp(a->labels[j], a->labels[i]) == 0)
            return tb_sp_bad(c, key, "'%s' is listed twice", a->labels[i]);
    a->n++;
    return TB_OK;
}

static tb_status parse_axes(tb_sp_ctx *c, const cJSON *o)
{
    tb_study_plan *p = c->plan;
    if (!cJSON_IsObject(o) || !o->child)
        return tb_sp_bad(c, "axes", "must be an object of one or more axis: [values]");
    for (const cJSON *it = o->child; it; it = it->next) {
        char key[160];
        snprintf(key, sizeof key, "axes.%s", it->string);
        if (p->n_axes == TB_STUDY_MAX_AXES)
            return tb_sp_bad(c, key, "more than %d axes", TB_STUDY_MAX_AXES);
        for (int k = 0; k < p->n_axes; k++)
            if (strcmp(p->axes[k].name, it->string) == 0) return tb_sp_bad(c, key, "given twice");
        tb_study_axis *a = &p->axes[p->n_axes];
        if (strlen(it->string) >= sizeof a->name) return tb_sp_bad(c, key, "name too long");
        snprintf(a->name, sizeof a->name, "%s", it->string);
        a->kind = axis_kind(it->string);
        if ((a->kind == TB_AXIS_WORKLOAD && p->workload[0]) ||
            (a->kind == TB_AXIS_ALGORITHM && p->algorithm[0]))
            return tb_sp_bad(c, key, "also fixed in settings.%s: give it in one place", a->name);
        if (a->kind == TB_AXIS_STEPS && p->base.length.epochs > 0)
            return tb_sp_bad(c, key, "settings give epochs: a steps axis needs settings in steps");
        if (!cJSON_IsArray(it)) return tb_sp_bad(c, key, "must be a list of values");
        if (!it->child) return tb_sp_bad(c, key, "is empty (an axis needs one or more values)");
        int i = 0;
        for (const cJSON *v = it->child; v; v = v->next, i++) {
            snprintf(key, sizeof key, "axes.%s[%d]", it->string, i);
            if (a->n == TB_STUDY_MAX_VALUES)
                return tb_sp_bad(c, key, "more than %d values", TB_STUDY_MAX_VALUES);
            tb_status st = parse_axis_value(c, a, v, key);
            if (st != TB_OK) return st;
        }
        p->n_axes++;
    }
    return TB_OK;
}

/* {axis: value, ...} of some axes into w (a value must be one of its axis's). */
static tb_status parse_where(tb_sp_ctx *c, const cJSON *o, const char *key, tb_study_where *w)
{
    const tb_study_plan *p = c->plan;
    for (int k = 0; k < TB_STUDY_MAX_AXES; k++) w->value[k] = -1;
    if (!cJSON_IsObject(o) || !o->child)
        return tb_sp_bad(c, key, "must be an object of one or more axis: value");
    for (const cJSON *it = o->child; it; it = it->next) {
        char k2[200];
        snprintf(k2, sizeof k2, "%s.%s", key, it->string);
        int k = 0;
        while (k < p->n_axes && strcmp(p->axes[k].name, it->string) != 0) k++;
        if (k == p->n_axes) return tb_sp_bad(c, k2, "not an axis of the study");
        if (w->value[k] >= 0) return tb_sp_bad(c, k2, "given twice");
        const tb_study_axis *a = &p->axes[k];
        char label[TB_STUDY_LABEL_MAX] = "";
        if (cJSON_IsString(it)) snprintf(label, sizeof label, "%s", it->valuestring);
        else if (cJSON_IsNumber(it)) snprintf(label, sizeof label, "%g", it->valuedouble);
        for (int i = 0; i < a->n && w->value[k] < 0; i++)
            if (strcmp(a->labels[i], label) == 0 ||
                (cJSON_IsNumber(it) && a->numbers[i] == it->valuedouble))
                w->value[k] = i;
        if (w->value[k] < 0) return tb_sp_bad(c, k2, "'%s' is not one of the axis's values", label);
    }
    return TB_OK;
}

static tb_status parse_hparam_sets(tb_sp_ctx *c, const cJSON *o)
{
    tb_study_plan *p = c->plan;
    if (!cJSON_IsObject(o))
        return tb_sp_bad(c, "hparams", "must be an object of algorithm (or \"*\"): {name: value}");
    for (const cJSON *it = o->child; it; it = it->next) {
        char key[160];
        snprintf(key, sizeof key, "hparams.%s", it->string);
        if (strcmp(it->string, "*") != 0 && !tb_optimizer_find(it->string))
            return tb_sp_bad(c, key, "unknown algorithm '%s' (or \"*\" for every algorithm)",
                       it->string);
        if (p->n_hp_sets == TB_STUDY_MAX_HP_SETS) return tb_sp_bad(c, key, "too many entries");
        for (int i = 0; i < p->n_hp_sets; i++)
            if (strcmp(p->hp_names[i], it->string) == 0) return tb_sp_bad(c, key, "given twice");
        snprintf(p->hp_names[p->n_hp_sets], sizeof p->hp_names[0], "%s", it->string);
        tb_status st = parse_hparams(c, it, key, &p->hp_sets[p->n_hp_sets]);
        if (st != TB_OK) return st;
        p->n_hp_sets++;
    }
    return TB_OK;
}

static tb_status parse_overrides(tb_sp_ctx *c, const cJSON *o)
{
    static const char *const keys[] = {"when", "hparams", "tune"};
    tb_study_plan *p = c->plan;
    if (!cJSON_IsArray(o)) return tb_sp_bad(c, "overrides", "must be a list of {when, hparams}");
    int i = 0;
    for (const cJSON *it = o->child; it; it = it->next, i++) {
        char key[160], k2[200];
        snprintf(key, sizeof key, "overrides[%d]", i);
        if (p->n_overrides == TB_STUDY_MAX_OVERRIDES) return tb_sp_bad(c, key, "too many overrides");
        if (!cJSON_IsObject(it)) return tb_sp_bad(c, key, "must be an object {when, hparams}");
        tb_status st = tb_sp_only_keys(c, it, key, keys, 3);
        if (st != TB_OK) return st;
        tb_study_override *ov = &p->overrides[p->n_overrides];
        const cJSON *when = cJSON_GetObjectItemCaseSensitive(it, "when");
        const cJSON *hp = cJSON_GetObjectItemCaseSensitive(it, "hparams");
        const cJSON *tune = cJSON_GetObjectItemCaseSensitive(it, "tune");
        snprintf(k2, sizeof k2, "%s.%s", key, when ? "hparams" : "when");
        if (!when || (!hp && !tune))
            return tb_sp_bad(c, k2, when ? "missing (or a tune)" : "missing");
        snprintf(k2, sizeof k2, "%s.when", key);
        if ((st = parse_where(c, when, k2, &ov->when)) != TB_OK) return st;
        snprintf(k2, sizeof k2, "%s.hparams", key);
        if (hp && (st = parse_hparams(c, hp, k2, &ov->hparams)) != TB_OK) return st;
        snprintf(k2, sizeof k2, "%s.tune", key);
        if (tune && (st = tb_sp_parse_tune(c, tune, k2, &ov->tune)) != TB_OK) return st;
        p->n_overrides++;
    }
    return TB_OK;
}

/* "tolerance": required with "same_within" and refused without it; a fraction in (0, 1). */
static tb_status parse_tolerance(tb_sp_ctx *c, const cJSON *o, const char *key,
                                 tb_study_comparison *cmp)
{
    char k2[200];
    snprintf(k2, sizeof k2, "%s.tolerance", key);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, "tolerance");
    if ((v != NULL) != (cmp->expect == TB_EXPECT_SAME_WITHIN))
        return tb_sp_bad(c, k2, v ? "only with \"expect\": \"same_within\"" : "missing "
                   "(\"same_within\" needs the relative tolerance of every pair)");
    if (!v) return TB_OK;
    tb_status st = tb_sp_number(c, v, k2, false, &cmp->tolerance);
    if (st == TB_OK && !(cmp->tolerance > 0 && cmp->tolerance < 1))
        return tb_sp_bad(c, k2, "%g is not a relative tolerance in (0, 1)", cmp->tolerance);
    return st;
}

static tb_status parse_comparison(tb_sp_ctx *c, const cJSON *o, const char *key,
                                  tb_study_comparison *cmp)
{
    static const char *const keys[] = {"a", "b", "expect", "min_wins", "gamma",
                                       "tolerance"};
    if (!cJSON_IsObject(o)) return tb_sp_bad(c, key, "must be an object {a, b, expect}");
    tb_status st = tb_sp_only_keys(c, o, key, keys, 6);
    char k2[200];
    for (int side = 0; side < 2 && st == TB_OK; side++) {
        const char *name = side ? "b" : "a";
        snprintf(k2, sizeof k2, "%s.%s", key, name);
        const cJSON *w = cJSON_GetObjectItemCaseSensitive(o, name);
        if (!w) return tb_sp_bad(c, k2, "missing (the cell values of side %s)", side ? "B" : "A");
        st = parse_where(c, w, k2, side ? &cmp->b : &cmp->a);
    }
    if (st != TB_OK) return st;
    if (memcmp(&cmp->a, &cmp->b, sizeof cmp->a) == 0)
        return tb_sp_bad(c, key, "sides a and b are the same cells");
    char expect[32] = "none";
    snprintf(k2, sizeof k2, "%s.expect", key);
    if ((st = tb_sp_text(c, o, "expect", k2, false, expect, sizeof expect)) != TB_OK) return st;
    int e = 0;
    while (e <= TB_EXPECT_SAME_WITHIN && strcmp(expect, tb_study_expect_name(e)) != 0) e++;
    if (e > TB_EXPECT_SAME_WITHIN)
        return tb_sp_bad(c, k2, "unknown expectation '%s' (expected none, a_better, b_better, "
                   "no_meaningful_difference, a_not_worse, a_wins or same_within)", expect);
    cmp->expect = (tb_study_expect)e;
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, "min_wins");
    snprintf(k2, sizeof k2, "%s.min_wins", key);
    if ((v != NULL) != (cmp->expect == TB_EXPECT_A_WINS))
        return tb_sp_bad(c, k2, v ? "only with \"expect\": \"a_wins\"" : "missing (\"a_wins\" needs "
                   "the fraction of pairs A must win)");
    if (v) {
        if ((st = tb_sp_number(c, v, k2, false, &cmp->min_wins)) != TB_OK) return st;
        if (!(cmp->min_wins > 0 && cmp->min_wins <= 1))
            return tb_sp_bad(c, k2, "%g is not a fraction in (0, 1]", cmp->min_wins);
    }
    if ((st = parse_tolerance(c, o, key, cmp)) != TB_OK) return st;
    cmp->gamma = 0.75;
    snprintf(k2, sizeof k2, "%s.gamma", key);
    if ((v = cJSON_GetObjectItemCaseSensitive(o, "gamma"))) {
        if ((st = tb_sp_number(c, v, k2, false, &cmp->gamma)) != TB_OK) return st;
        if (!(cmp->gamma > 0.5 && cmp->gamma < 1))
            return tb_sp_bad(c, k2, "%g is not in (0.5, 1)", cmp->gamma);
    }
    return TB_OK;
}

static tb_status parse_comparisons(tb_sp_ctx *c, const cJSON *o)
{
    tb_study_plan *p = c->plan;
    if (!cJSON_IsArray(o)) return tb_sp_bad(c, "comparisons", "must be a list of {a, b, expect}");
    int i = 0;
    for (const cJSON *it = o->child; it; it = it->next, i++) {
        char key[64];
        snprintf(key, sizeof key, "comparisons[%d]", i);
        if (p->n_comparisons == TB_STUDY_MAX_COMPARISONS)
            return tb_sp_bad(c, key, "more than %d comparisons", TB_STUDY_MAX_COMPARISONS);
        tb_status st = parse_comparison(c, it, key, &p->comparisons[p->n_comparisons]);
        if (st != TB_OK) return st;
        p->n_comparisons++;
    }
    return TB_OK;
}

/* The top level's scalars: name, claim, source, seeds, seed, metric, table. */
static tb_status parse_top(tb_sp_ctx *c, const cJSON *root)
{
    tb_study_plan *p = c->plan;
    tb_status st = tb_sp_text(c, root, "name", "name", true, p->name, sizeof p->name);
    if (st == TB_OK) st = tb_sp_text(c, root, "claim", "claim", true, p->claim, sizeof p->claim);
    if (st == TB_OK)
        st = tb_sp_text(c, root, "source", "source", true, p->source, sizeof p->source);
    if (st != TB_OK) return st;
    for (const char *q = p->name; *q; q++)
        if (!((*q >= 'a' && *q <= 'z') || (*q >= '0' && *q <= '9') || *q == '_' || *q == '-'))
            return tb_sp_bad(c, "name", "'%s': use lower-case letters, digits, '_' and '-'", p->name);
    int64_t n;
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, "seeds");
    if (!v) return tb_sp_bad(c, "seeds", "missing (runs per cell, at least 2)");
    if ((st = tb_sp_whole(c, v, "seeds", 2, TB_STUDY_MAX_SEEDS, &n)) != TB_OK) return st;
    p->seeds = (int)n;
    if ((v = cJSON_GetObjectItemCaseSensitive(root, "seed"))) {
        if ((st = tb_sp_whole(c, v, "seed", 0, 9007199254740992.0, &n)) != TB_OK) return st;
        p->seed = (uint64_t)n;
    }
    char text[32] = "validation";
    if ((st = tb_sp_text(c, root, "metric", "metric", false, text, sizeof text)) != TB_OK)
        return st;
    tb_error e = {0};
    if (tb_study_metric_parse(text, &p->metric, &e) != TB_OK) return tb_sp_bad(c, "metric", "%s",
                                                                         e.message);
    snprintf(text, sizeof text, "median");
    if ((st = tb_sp_text(c, root, "table", "table", false, text, sizeof text)) != TB_OK)
        return st;
    if (strcmp(text, "median") && strcmp(text, "mean"))
        return tb_sp_bad(c, "table", "'%s' is not median or mean", text);
    p->statistic = strcmp(text, "mean") == 0 ? TB_STAT_MEAN : TB_STAT_MEDIAN;
    return TB_OK;
}

/* Every cell's configuration, as a run would get it, checked as tb_train would. */
static tb_status check_cells(tb_sp_ctx *c)
{
    const tb_study_plan *p = c->plan;
    bool workload_axis = false, algo_axis = false;
    for (int k = 0; k < p->n_axes; k++) {
        workload_axis |= p->axes[k].kind == TB_AXIS_WORKLOAD;
        algo_axis |= p->axes[k].kind == TB_AXIS_ALGORITHM;
    }
    if (!p->workload[0] && !workload_axis)
        return tb_sp_bad(c, "settings.workload", "missing (or an axis \"workload\")");
    if (!p->algorithm[0] && !algo_axis)
        return tb_sp_bad(c, "settings.algorithm", "missing (or an axis \"algorithm\")");
    int search_axis = -1;
    for (int k = 0; k < p->n_axes; k++)
        if (p->axes[k].kind == TB_AXIS_SEARCH || p->axes[k].kind == TB_AXIS_SPACE ||
            p->axes[k].kind == TB_AXIS_SAMPLER)
            search_axis = k;
    for (int cell = 0; cell < tb_study_plan_cells(p); cell++) {
        tb_run_config cfg;
        tb_error e = {0};
        if (search_axis >= 0 && !tb_study_plan_cell_tune(p, cell)) {
            char label[256], key[64];
            tb_study_plan_cell_label(p, cell, label, sizeof label);
            snprintf(key, sizeof key, "axes.%s", p->axes[search_axis].name);
            return tb_sp_bad(c, key, "cell %s does not tune: a %s axis needs every cell to "
                             "tune (give a \"tune\")", label, p->axes[search_axis].name);
        }
        tb_status st = tb_study_plan_run_config(p, cell, 0, &cfg, &e);
        if (st == TB_OK) st = tb_optimizer_check_hparams(cfg.model.algorithm, &cfg.model.hparams, &e);
        if (st == TB_OK) st = tb_run_config_check(&cfg, &e); /* as tb_train would, first */
        if (st != TB_OK) {
            char label[256];
            tb_study_plan_cell_label(p, cell, label, sizeof label);
            return tb_sp_bad(c, "cell", "%s: %s", label, e.message);
        }
    }
    return TB_OK;
}

tb_status tb_study_plan_parse(const char *text, const char *file, tb_study_plan **out,
                              tb_error *err)
{
    static const char *const keys[] = {"name", "claim", "source", "settings", "hparams",
                                       "overrides", "axes", "seeds", "seed", "metric",
                                       "table", "comparisons", "notes", "tune", "figures"};
    if (!text || !out) return tb_fail(err, TB_ERR_INVALID, "study_plan_parse: %s is NULL",
                                      text ? "out" : "text");
    *out = NULL;
    long bad_at = tb_utf8_invalid_at(text, strlen(text)); /* --json prints its strings */
    if (bad_at >= 0)
        return tb_fail(err, TB_ERR_INVALID, "study %s: not valid UTF-8 at byte offset %ld",
                       file ? file : "study", bad_at);
    tb_study_plan *p = calloc(1, sizeof *p);
    if (!p) return tb_fail(err, TB_ERR_NOMEM, "out of memory for a study plan");
    snprintf(p->file, sizeof p->file, "%s", file ? file : "study");
    p->base = tb_run_config_default();
    p->base.length.epochs = 0;
    p->base.eval.during = 0;
    tb_sp_ctx c = {p, err, text};
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithOpts(text, &end, true);
    tb_status st = TB_OK;
    if (!root) {
        int line = 1;
        for (const char *q = text; end && q < end; q++) line += *q == '\n';
        st = tb_fail(err, TB_ERR_INVALID, "%s: not valid JSON (near line %d)", p->file, line);
    } else if (!cJSON_IsObject(root)) {
        st = tb_fail(err, TB_ERR_INVALID, "%s: a study is a JSON object", p->file);
    }
    if (st == TB_OK) st = tb_sp_only_keys(&c, root, "", keys, 15);
    if (st == TB_OK) st = parse_top(&c, root);
    const cJSON *v;
    if (st == TB_OK) {
        if ((v = cJSON_GetObjectItemCaseSensitive(root, "settings"))) st = parse_settings(&c, v);
        else st = tb_sp_bad(&c, "settings", "missing (workload, steps or epochs, ...)");
    }
    if (st == TB_OK) {
        if ((v = cJSON_GetObjectItemCaseSensitive(root, "axes"))) st = parse_axes(&c, v);
        else st = tb_sp_bad(&c, "axes", "missing (the grid of runs, e.g. {\"algorithm\": [...]})");
    }
    bool steps_axis = false;
    for (int k = 0; k < p->n_axes; k++) steps_axis |= p->axes[k].kind == TB_AXIS_STEPS;
    if (st == TB_OK && p->base.length.max_steps <= 0 && p->base.length.epochs <= 0 && !steps_axis)
        p->base.length.epochs = 1;
    if (st == TB_OK && (v = cJSON_GetObjectItemCaseSensitive(root, "hparams")))
        st = parse_hparam_sets(&c, v);
    if (st == TB_OK && (v = cJSON_GetObjectItemCaseSensitive(root, "overrides")))
        st = parse_overrides(&c, v);
    if (st == TB_OK && (v = cJSON_GetObjectItemCaseSensitive(root, "tune")))
        st = tb_sp_parse_tune(&c, v, "tune", &p->tune);
    if (st == TB_OK && (v = cJSON_GetObjectItemCaseSensitive(root, "comparisons")))
        st = parse_comparisons(&c, v);
    if (st == TB_OK && (v = cJSON_GetObjectItemCaseSensitive(root, "notes")) &&
        !cJSON_IsString(v))
        st = tb_sp_bad(&c, "notes", "must be a string");
    if (st == TB_OK) st = tb_sp_check_echo_axes(&c);
    if (st == TB_OK) st = check_cells(&c);
    if (st == TB_OK) st = tb_sp_check_tunes(&c);
    if (st == TB_OK && (v = cJSON_GetObjectItemCaseSensitive(root, "figures")))
        st = tb_sp_parse_figures(&c, v);
    cJSON_Delete(root);
    if (st != TB_OK) {
        tb_study_plan_free(p);
        return st;
    }
    *out = p;
    return TB_OK;
}

tb_status tb_study_plan_load(const char *path, tb_study_plan **out, tb_error *err)
{
    if (!path || !out) return tb_fail(err, TB_ERR_INVALID, "study_plan_load: %s is NULL",
                                      path ? "out" : "path");
    char *buf = NULL;
    tb_status st = tb_text_file_read(path, "study", TB_TEXT_FILE_MAX, &buf, NULL, err);
    if (st == TB_OK) st = tb_study_plan_parse(buf, path, out, err);
    free(buf);
    return st;
}

void tb_study_plan_free(tb_study_plan *plan)
{
    if (!plan) return;
    for (int i = 0; i < plan->n_spaces; i++) free(plan->space_json[i]);
    free(plan);
}
