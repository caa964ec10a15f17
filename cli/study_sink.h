/* study_sink.h: where a study's figure rows go (study_figures.c, study_stability.c): text
 * lines, a CSV file, a JSON file (either may be NULL), the same rows in both. */
#ifndef TRAINBENCH_CLI_STUDY_SINK_H
#define TRAINBENCH_CLI_STUDY_SINK_H

#include <math.h>
#include <stdbool.h>
#include <stdio.h>

#include "trainbench/study_plan.h"

/* Where a figure is written: text lines, a CSV file, a JSON file (either may be NULL). */
typedef struct sink {
    FILE *csv, *json;
    int rows; /* JSON rows written */
} sink;

static inline void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') fputc('\\', f);
        if ((unsigned char)*s >= 0x20) fputc(*s, f);
    }
    fputc('"', f);
}

static inline void json_num(FILE *f, double v)
{
    if (isfinite(v)) fprintf(f, "%.6g", v);
    else fputs("null", f);
}

static inline void csv_num(FILE *f, double v)
{
    if (isfinite(v)) fprintf(f, ",%.6g", v);
    else fputs(",", f);
}

/* A row's cell label, quoted for CSV (labels have no quotes: they are names and numbers). */
static inline void row_start(sink *s, const char *label)
{
    if (s->csv) fprintf(s->csv, "\"%s\"", label);
    if (s->json) {
        fputs(s->rows++ ? ",\n{\"cell\":" : "{\"cell\":", s->json);
        json_str(s->json, label);
    }
}

static inline void field(sink *s, const char *name, double v)
{
    if (s->csv) csv_num(s->csv, v);
    if (s->json) {
        fprintf(s->json, ",\"%s\":", name);
        json_num(s->json, v);
    }
}

static inline void row_end(sink *s)
{
    if (s->csv) fputc('\n', s->csv);
    if (s->json) fputc('}', s->json);
}

typedef void (*rows_fn)(const tb_study_plan *, const tb_study_values *,
                        const tb_study_figures *, sink *, bool);

/* The stability figure: a row per cell, and its curve, a row per run and measurement
 * (study_stability.c). */
void tb_cli_stability_rows(const tb_study_plan *p, const tb_study_values *v,
                           const tb_study_figures *f, sink *s, bool text);
void tb_cli_stability_curve_rows(const tb_study_plan *p, const tb_study_values *v,
                                 const tb_study_figures *f, sink *s, bool text);

#endif
