/* parse_impl.h: the study file parser's shared context and readers (parse*.c). Every reader
 * fails with TB_ERR_INVALID and a message "FILE:LINE:COLUMN: KEY: problem" (the position of
 * the key's value, or the part of its path that exists; "FILE: KEY: problem" without one). */
#ifndef TRAINBENCH_STUDY_PARSE_IMPL_H
#define TRAINBENCH_STUDY_PARSE_IMPL_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

#include "trainbench/study_plan.h"

typedef struct tb_sp_ctx {
    tb_study_plan *plan;
    tb_error *err;
    const char *text; /* the file's text, for the line and column of a key */
} tb_sp_ctx;

__attribute__((format(printf, 3, 4))) tb_status tb_sp_bad(tb_sp_ctx *c, const char *key,
                                                          const char *fmt, ...);
/* Every key of object o must be one of known[0..n) (where: o's own key path, "" at the top). */
tb_status tb_sp_only_keys(tb_sp_ctx *c, const cJSON *o, const char *where,
                          const char *const *known, int n);
/* Member `name` of o as text into out (cap bytes); missing: an error when required. */
tb_status tb_sp_text(tb_sp_ctx *c, const cJSON *o, const char *name, const char *key,
                     bool required, char *out, size_t cap);
/* A finite number (true/false read as 1/0 when flags is set). */
tb_status tb_sp_number(tb_sp_ctx *c, const cJSON *v, const char *key, bool flags, double *out);
/* A whole number in [lo, hi]. */
tb_status tb_sp_whole(tb_sp_ctx *c, const cJSON *v, const char *key, double lo, double hi,
                      int64_t *out);

/* "halton", "gp" or "gp_prior" into *out; TB_ERR_INVALID (no message) for another name. */
tb_status tb_sp_sampler_parse(const char *text, tb_study_sampler *out);
/* A "tune" object at key path `key` into t (parse_tune.c). */
tb_status tb_sp_parse_tune(tb_sp_ctx *c, const cJSON *o, const char *key, tb_study_tune *t);
/* Every tuned cell checked against its space, sampler and budget (after the grid is known). */
tb_status tb_sp_check_tunes(tb_sp_ctx *c);

/* "figures": the list of figures beyond the table, each checked against the metric and the
 * plan (parse_figures.c). */
tb_status tb_sp_parse_figures(tb_sp_ctx *c, const cJSON *o);
/* {"type": "detection", "n": N, "k": K, "gamma": g, "resamples": R} (parse_detection.c). */
tb_status tb_sp_parse_detection(tb_sp_ctx *c, const cJSON *o, const char *key);

/* The settings "target" and "eval_every_steps", and a value of the axes "upstream_slowdown"
 * and "echo" (parse_echo.c). */
tb_status tb_sp_parse_echo_settings(tb_sp_ctx *c, const cJSON *o);
tb_status tb_sp_parse_echo_axis_value(tb_sp_ctx *c, tb_study_axis *a, const cJSON *v,
                                      const char *key);
/* An "echo" axis with an "echo_factor" axis or settings.echo is refused. */
tb_status tb_sp_check_echo_axes(tb_sp_ctx *c);

/* The settings "sharpness_every" and "sharpness_iters", and the figure {"type": "stability",
 * "tail": t, "expect": "at_threshold", "tolerance": x} (o NULL: the defaults) (parse_stability.c). */
tb_status tb_sp_parse_sharpness_settings(tb_sp_ctx *c, const cJSON *o);
tb_status tb_sp_parse_stability(tb_sp_ctx *c, const cJSON *o, const char *key);

#endif
