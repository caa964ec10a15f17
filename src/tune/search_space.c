/* search_space.c: AlgoPerf-format search spaces (JSON, via cJSON): parsing with messages that
 * name the hyperparameter, mapping unit points to values, and drawing study points. */
#include "trainbench/tune.h"

#include "trainbench/rng.h"

#include "trainbench/textfile.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum dim_kind { DIM_LINEAR, DIM_LOG, DIM_DISCRETE } dim_kind;

typedef struct dim {
    char name[TB_HPARAM_NAME_MAX];
    dim_kind kind;
    double min, max;
    double *feasible;
    int n_feasible;
} dim;

struct tb_search_space {
    dim *dims;
    int n_dims;
    tb_hparams *list; /* an explicit list of points */
    int n_list;
};

void tb_search_space_destroy(tb_search_space *s)
{
    if (!s) return;
    for (int i = 0; i < s->n_dims; i++) free(s->dims[i].feasible);
    free(s->dims);
    free(s->list);
    free(s);
}

static bool number_of(const cJSON *v, double *out)
{
    if (cJSON_IsBool(v)) {
        *out = cJSON_IsTrue(v) ? 1.0 : 0.0;
        return true;
    }
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble)) return false;
    *out = v->valuedouble;
    return true;
}

static tb_status parse_dim(const cJSON *item, const char *src, dim *d, tb_error *err)
{
    const char *name = item->string;
    if (strlen(name) >= TB_HPARAM_NAME_MAX)
        return tb_fail(err, TB_ERR_INVALID, "%s: hyperparameter name '%s' is too long", src, name);
    snprintf(d->name, sizeof d->name, "%s", name);
    if (!cJSON_IsObject(item))
        return tb_fail(err, TB_ERR_INVALID,
                       "%s: '%s' must be an object with min/max/scaling or feasible_points", src,
                       name);
    const cJSON *feas = NULL, *mn = NULL, *mx = NULL, *sc = NULL;
    for (const cJSON *k = item->child; k; k = k->next) {
        if (strcmp(k->string, "feasible_points") == 0) feas = k;
        else if (strcmp(k->string, "min") == 0) mn = k;
        else if (strcmp(k->string, "max") == 0) mx = k;
        else if (strcmp(k->string, "scaling") == 0) sc = k;
        else
            return tb_fail(err, TB_ERR_INVALID,
                           "%s: '%s' has an unknown key '%s' (expected min, max, scaling or "
                           "feasible_points)", src, name, k->string);
    }
    if (feas) {
        if (mn || mx || sc)
            return tb_fail(err, TB_ERR_INVALID,
                           "%s: '%s' has both feasible_points and a range", src, name);
        int n = cJSON_GetArraySize(feas);
        if (!cJSON_IsArray(feas) || n == 0)
            return tb_fail(err, TB_ERR_INVALID,
                           "%s: '%s': feasible_points must be a non-empty list", src, name);
        d->kind = DIM_DISCRETE;
        d->feasible = malloc((size_t)n * sizeof(double));
        if (!d->feasible) return tb_fail(err, TB_ERR_NOMEM, "%s: out of memory", src);
        d->n_feasible = n;
        int i = 0;
        for (const cJSON *v = feas->child; v; v = v->next, i++)
            if (!number_of(v, &d->feasible[i]))
                return tb_fail(err, TB_ERR_INVALID,
                               "%s: '%s': feasible point %d is not a number", src, name, i + 1);
        return TB_OK;
    }
    if (!mn || !mx)
        return tb_fail(err, TB_ERR_INVALID,
                       "%s: '%s' needs both min and max (or feasible_points)", src, name);
    if (!number_of(mn, &d->min) || !number_of(mx, &d->max))
        return tb_fail(err, TB_ERR_INVALID, "%s: '%s': min and max must be numbers", src, name);
    d->kind = DIM_LINEAR;
    if (sc) {
        if (!cJSON_IsString(sc))
            return tb_fail(err, TB_ERR_INVALID, "%s: '%s': scaling must be a string", src, name);
        if (strcmp(sc->valuestring, "log") == 0) d->kind = DIM_LOG;
        else if (strcmp(sc->valuestring, "linear") != 0)
            return tb_fail(err, TB_ERR_INVALID,
                           "%s: '%s': unknown scaling '%s' (expected linear or log)", src, name,
                           sc->valuestring);
    }
    if (d->min > d->max)
        return tb_fail(err, TB_ERR_INVALID, "%s: '%s': min %g is above max %g", src, name,
                       d->min, d->max);
    if (d->kind == DIM_LOG && !(d->min > 0))
        return tb_fail(err, TB_ERR_INVALID,
                       "%s: '%s': a log range needs min > 0, got %g", src, name, d->min);
    return TB_OK;
}

static tb_status parse_list(const cJSON *root, const char *src, tb_search_space *s,
                            tb_error *err)
{
    int n = cJSON_GetArraySize(root);
    if (n == 0) return tb_fail(err, TB_ERR_INVALID, "%s: the list of points is empty", src);
    s->list = calloc((size_t)n, sizeof *s->list);
    if (!s->list) return tb_fail(err, TB_ERR_NOMEM, "%s: out of memory", src);
    s->n_list = n;
    int i = 0;
    for (const cJSON *p = root->child; p; p = p->next, i++) {
        if (!cJSON_IsObject(p))
            return tb_fail(err, TB_ERR_INVALID,
                           "%s: point %d must be an object of hyperparameter values", src, i + 1);
        for (const cJSON *v = p->child; v; v = v->next) {
            double x;
            if (!number_of(v, &x))
                return tb_fail(err, TB_ERR_INVALID, "%s: point %d: '%s' is not a number", src,
                               i + 1, v->string);
            tb_status st = tb_hparams_set(&s->list[i], v->string, x, err);
            if (st != TB_OK) return tb_error_prefix(err, "%s: point %d", src, i + 1);
        }
    }
    return TB_OK;
}

/* Line and column of a byte offset, for parse errors. */
static void line_col(const char *text, size_t off, int *line, int *col)
{
    *line = 1;
    *col = 1;
    for (size_t i = 0; i < off && text[i]; i++) {
        if (text[i] == '\n') {
            (*line)++;
            *col = 1;
        } else {
            (*col)++;
        }
    }
}

tb_status tb_search_space_parse(const char *json, const char *source, tb_search_space **out,
                                tb_error *err)
{
    if (!json || !out)
        return tb_fail(err, TB_ERR_INVALID, "search_space_parse: %s is NULL",
                       json ? "out" : "the JSON text");
    *out = NULL;
    const char *src = source ? source : "search space";
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithOpts(json, &end, true);
    if (!root) {
        int line, col;
        size_t off = end ? (size_t)(end - json) : 0;
        line_col(json, off, &line, &col);
        return tb_fail(err, TB_ERR_FORMAT, "%s: malformed JSON at line %d, column %d", src, line,
                       col);
    }
    tb_search_space *s = calloc(1, sizeof *s);
    tb_status st = TB_OK;
    if (!s) st = tb_fail(err, TB_ERR_NOMEM, "%s: out of memory", src);
    else if (cJSON_IsArray(root)) st = parse_list(root, src, s, err);
    else if (!cJSON_IsObject(root))
        st = tb_fail(err, TB_ERR_INVALID,
                     "%s: expected an object of hyperparameters or a list of points", src);
    else {
        int n = cJSON_GetArraySize(root);
        if (n == 0) st = tb_fail(err, TB_ERR_INVALID, "%s: no hyperparameters", src);
        else if (n > TB_HPARAMS_MAX)
            st = tb_fail(err, TB_ERR_INVALID, "%s: more than %d hyperparameters", src,
                         TB_HPARAMS_MAX);
        else if (!(s->dims = calloc((size_t)n, sizeof *s->dims)))
            st = tb_fail(err, TB_ERR_NOMEM, "%s: out of memory", src);
        for (const cJSON *it = root->child; st == TB_OK && it; it = it->next) {
            for (int k = 0; k < s->n_dims; k++)
                if (strcmp(s->dims[k].name, it->string) == 0)
                    st = tb_fail(err, TB_ERR_INVALID, "%s: '%s' appears twice", src,
                                 it->string);
            if (st == TB_OK) st = parse_dim(it, src, &s->dims[s->n_dims++], err);
        }
    }
    cJSON_Delete(root);
    if (st != TB_OK) {
        tb_search_space_destroy(s);
        return st;
    }
    *out = s;
    return TB_OK;
}

tb_status tb_search_space_load(const char *path, tb_search_space **out, tb_error *err)
{
    if (!path || !out)
        return tb_fail(err, TB_ERR_INVALID, "search_space_load: %s is NULL", path ? "out" : "path");
    *out = NULL;
    char *buf = NULL;
    tb_status st = tb_text_file_read(path, "search space", TB_TEXT_FILE_MAX, &buf, NULL, err);
    if (st != TB_OK) return st;
    st = tb_search_space_parse(buf, path, out, err);
    free(buf);
    return st;
}

int tb_search_space_dims(const tb_search_space *s) { return s ? s->n_dims : 0; }
int tb_search_space_list_size(const tb_search_space *s) { return s ? s->n_list : 0; }
bool tb_search_space_list_point(const tb_search_space *s, int i, tb_hparams *out)
{
    if (!s || !out || i < 0 || i >= s->n_list) return false;
    *out = s->list[i];
    return true;
}

void tb_search_space_map(const tb_search_space *s, const double *u, tb_hparams *out)
{
    if (!out) return;
    memset(out, 0, sizeof *out);
    if (!s || !u) return;
    for (int i = 0; i < s->n_dims; i++) {
        const dim *d = &s->dims[i];
        double x = u[i], v;
        /* weighted ends, not min + x (max - min) or min (max / min)^x: those overflow for the
         * widest ranges (max - min or max / min beyond DBL_MAX) */
        if (d->kind == DIM_LINEAR) v = (1.0 - x) * d->min + x * d->max;
        else if (d->kind == DIM_LOG) v = exp((1.0 - x) * log(d->min) + x * log(d->max));
        else {
            int k = (int)floor(x * d->n_feasible);
            if (k >= d->n_feasible) k = d->n_feasible - 1;
            if (k < 0) k = 0;
            v = d->feasible[k];
        }
        if (d->kind == DIM_LOG) v = fmin(fmax(v, d->min), d->max); /* rounding at the ends */
        tb_hparams_set(out, d->name, v, NULL);
    }
}

bool tb_search_space_dim(const tb_search_space *s, int i, tb_search_dim *out)
{
    if (i < 0 || i >= s->n_dims) return false;
    const dim *d = &s->dims[i];
    *out = (tb_search_dim){.name = d->name, .min = d->min, .max = d->max,
                           .feasible = d->feasible, .n_feasible = d->n_feasible};
    out->scaling = d->kind == DIM_LINEAR ? TB_SCALING_LINEAR
                   : d->kind == DIM_LOG  ? TB_SCALING_LOG
                                         : TB_SCALING_DISCRETE;
    if (d->kind == DIM_DISCRETE) {
        out->min = out->max = d->feasible[0];
        for (int k = 1; k < d->n_feasible; k++) {
            out->min = fmin(out->min, d->feasible[k]);
            out->max = fmax(out->max, d->feasible[k]);
        }
    }
    return true;
}

bool tb_search_space_dim_varies(const tb_search_space *s, int i)
{
    if (i < 0 || i >= s->n_dims) return false;
    const dim *d = &s->dims[i];
    return d->kind == DIM_DISCRETE ? d->n_feasible > 1 : d->min < d->max;
}

bool tb_search_space_unmap(const tb_search_space *s, const tb_hparams *hp, double *u)
{
    for (int i = 0; i < s->n_dims; i++) {
        const dim *d = &s->dims[i];
        int j = 0;
        while (j < hp->count && strcmp(hp->names[j], d->name) != 0) j++;
        if (j == hp->count || !isfinite(hp->values[j])) return false;
        double v = hp->values[j];
        if (d->kind == DIM_DISCRETE) {
            int k = 0;
            for (int c = 1; c < d->n_feasible; c++)
                if (fabs(d->feasible[c] - v) < fabs(d->feasible[k] - v)) k = c;
            u[i] = (k + 0.5) / d->n_feasible;
        } else if (!(d->min < d->max)) {
            u[i] = 0.5;
        } else if (d->kind == DIM_LOG) {
            if (!(v > 0)) return false;
            u[i] = (log(v) - log(d->min)) / (log(d->max) - log(d->min));
        } else {
            u[i] = (v - d->min) / (d->max - d->min);
        }
    }
    return true;
}

tb_status tb_search_space_sample(const tb_search_space *s, int studies, int trials,
                                 uint64_t seed, tb_hparams *out, tb_error *err)
{
    if (!s || !out)
        return tb_fail(err, TB_ERR_INVALID, "search_space_sample: %s is NULL",
                       s ? "out" : "the search space");
    if (studies < 1 || trials < 1)
        return tb_fail(err, TB_ERR_INVALID, "need at least one study and one trial (got %d, %d)",
                       studies, trials);
    int n = studies * trials;
    if (s->n_list > 0) {
        if (s->n_list < trials)
            return tb_fail(err, TB_ERR_INVALID,
                           "the search space lists %d points, fewer than the %d trials per study",
                           s->n_list, trials);
        int *order = malloc((size_t)s->n_list * sizeof *order);
        if (!order) return tb_fail(err, TB_ERR_NOMEM, "sampling: out of memory");
        tb_rng rng = tb_rng_make(seed, TB_STREAM_HPARAM);
        for (int st = 0; st < studies; st++) {
            for (int i = 0; i < s->n_list; i++) order[i] = i;
            for (int i = s->n_list - 1; i > 0; i--) {
                int j = (int)tb_rng_below(&rng, (uint64_t)i + 1);
                int t = order[i];
                order[i] = order[j];
                order[j] = t;
            }
            for (int t = 0; t < trials; t++) out[st * trials + t] = s->list[order[t]];
        }
        free(order);
        return TB_OK;
    }
    double *u = malloc((size_t)n * (size_t)s->n_dims * sizeof *u);
    if (!u) return tb_fail(err, TB_ERR_NOMEM, "sampling: out of memory");
    tb_status st = tb_halton(n, s->n_dims, 100, true, seed, u, err);
    for (int i = 0; st == TB_OK && i < n; i++) tb_search_space_map(s, u + (int64_t)i * s->n_dims, &out[i]);
    free(u);
    return st;
}
