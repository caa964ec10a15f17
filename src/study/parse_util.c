/* parse_util.c: the pieces every part of a study file's parser uses: messages naming the
 * file, the line and column, and the key; keys checked; numbers, whole numbers and text read. */
#include "study/parse_impl.h"

#include "study/study_impl.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

tb_status tb_sp_bad(tb_sp_ctx *c, const char *key, const char *fmt, ...)
{
    char msg[TB_ERROR_MESSAGE_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    int line = 0, column = 0;
    tb_study_locate(c->text, key, &line, &column);
    if (line > 0)
        return tb_fail(c->err, TB_ERR_INVALID, "%s:%d:%d: %s: %s", c->plan->file, line, column,
                       key, msg);
    return tb_fail(c->err, TB_ERR_INVALID, "%s: %s: %s", c->plan->file, key, msg);
}

/* Every key of object o must be one of known[0..n). */
tb_status tb_sp_only_keys(tb_sp_ctx *c, const cJSON *o, const char *where,
                           const char *const *known, int n)
{
    for (const cJSON *it = o->child; it; it = it->next) {
        bool ok = false;
        for (int i = 0; i < n && !ok; i++) ok = strcmp(it->string, known[i]) == 0;
        if (!ok) {
            char list[256] = "";
            for (int i = 0; i < n; i++)
                snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s",
                         i ? (i == n - 1 ? " or " : ", ") : "", known[i]);
            char key[160];
            snprintf(key, sizeof key, "%.64s%s%.64s", where, where[0] ? "." : "", it->string);
            return tb_sp_bad(c, key, "unknown key (expected %s)", list);
        }
        for (const cJSON *d = o->child; d != it; d = d->next)
            if (strcmp(d->string, it->string) == 0)
                return tb_sp_bad(c, it->string, "given twice%s%s", where[0] ? " in " : "", where);
    }
    return TB_OK;
}

tb_status tb_sp_text(tb_sp_ctx *c, const cJSON *o, const char *name, const char *key,
                          bool required, char *out, size_t cap)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
    if (!v) return required ? tb_sp_bad(c, key, "missing (a string)") : TB_OK;
    if (!cJSON_IsString(v)) return tb_sp_bad(c, key, "must be a string");
    if (!v->valuestring[0]) return tb_sp_bad(c, key, "is empty");
    if (strlen(v->valuestring) >= cap) return tb_sp_bad(c, key, "longer than %zu characters", cap - 1);
    snprintf(out, cap, "%s", v->valuestring);
    return TB_OK;
}

/* A number (true/false read as 1/0 when flags is set). */
tb_status tb_sp_number(tb_sp_ctx *c, const cJSON *v, const char *key, bool flags, double *out)
{
    if (flags && cJSON_IsBool(v)) {
        *out = cJSON_IsTrue(v) ? 1.0 : 0.0;
        return TB_OK;
    }
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble))
        return tb_sp_bad(c, key, "must be a number");
    *out = v->valuedouble;
    return TB_OK;
}

/* A whole number in [lo, hi]. */
tb_status tb_sp_whole(tb_sp_ctx *c, const cJSON *v, const char *key, double lo, double hi,
                          int64_t *out)
{
    double d = 0;
    tb_status st = tb_sp_number(c, v, key, false, &d);
    if (st != TB_OK) return st;
    if (d != floor(d) || d < lo || d > hi)
        return tb_sp_bad(c, key, "%g is not a whole number in [%.0f, %.0f]", d, lo, hi);
    *out = (int64_t)d;
    return TB_OK;
}
