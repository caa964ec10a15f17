/* locate.c: where a key of a study file is in its text (line and column), for messages. cJSON
 * keeps no positions, so this walks the text itself: a small scanner that follows a key path
 * ("overrides[1].tune.sampler") through objects and arrays and stops at the value the path
 * names, or at the deepest part of it that exists (the object a missing key belongs in). */
#include "study/study_impl.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

static const char *skip_space(const char *p)
{
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') p++;
    return p;
}

/* Past a string starting at its opening quote (NULL if unterminated). */
static const char *skip_string(const char *p)
{
    for (p++; *p && *p != '"'; p++)
        if (*p == '\\' && p[1]) p++;
    return *p == '"' ? p + 1 : NULL;
}

/* Past one value (NULL on malformed text). */
static const char *skip_value(const char *p)
{
    p = skip_space(p);
    if (*p == '"') return skip_string(p);
    if (*p == '{' || *p == '[') {
        int depth = 0;
        while (*p) {
            if (*p == '"') {
                if (!(p = skip_string(p))) return NULL;
                continue;
            }
            if (*p == '{' || *p == '[') depth++;
            if (*p == '}' || *p == ']') depth--;
            p++;
            if (depth == 0) return p;
        }
        return NULL;
    }
    const char *s = p;
    while (*p && *p != ',' && *p != '}' && *p != ']' && !isspace((unsigned char)*p)) p++;
    return p > s ? p : NULL;
}

/* The value of member `name` of the object at p ('{'), or NULL. */
static const char *member(const char *p, const char *name, size_t len)
{
    p = skip_space(p + 1);
    while (*p == '"') {
        const char *end = skip_string(p);
        if (!end) return NULL;
        bool match = (size_t)(end - p - 2) == len && strncmp(p + 1, name, len) == 0;
        p = skip_space(end);
        if (*p != ':') return NULL;
        p = skip_space(p + 1);
        if (match) return p;
        if (!(p = skip_value(p))) return NULL;
        p = skip_space(p);
        if (*p == ',') p = skip_space(p + 1);
    }
    return NULL;
}

/* Element `index` of the array at p ('['), or NULL. */
static const char *element(const char *p, long index)
{
    p = skip_space(p + 1);
    for (long i = 0; *p && *p != ']'; i++) {
        if (i == index) return p;
        if (!(p = skip_value(p))) return NULL;
        p = skip_space(p);
        if (*p == ',') p = skip_space(p + 1);
    }
    return NULL;
}

void tb_study_locate(const char *text, const char *path, int *line, int *column)
{
    *line = *column = 0;
    if (!text || !path) return;
    const char *at = skip_space(text), *p = path;
    bool found_any = false;
    while (*p && at) {
        const char *next = NULL;
        if (*p == '[') {
            char *end = NULL;
            long index = strtol(p + 1, &end, 10);
            if (*at != '[' || !end || *end != ']') break;
            next = element(at, index);
            if (next) p = end + 1;
        } else {
            size_t len = strcspn(p, ".[");
            if (*at != '{') break;
            next = member(at, p, len);
            if (next) p += len;
        }
        if (!next) break;
        at = next;
        found_any = true;
        if (*p == '.') p++;
    }
    if (!at || !found_any) return;
    *line = 1;
    const char *line_start = text;
    for (const char *q = text; q < at; q++)
        if (*q == '\n') {
            (*line)++;
            line_start = q + 1;
        }
    *column = (int)(at - line_start) + 1;
}
