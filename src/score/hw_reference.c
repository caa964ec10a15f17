/* hw_reference.c: the hardware suite's reference file (JSON): the reference machine's
 * examples/s per workload and configuration, the weights, and where the figures came from. */
#include "trainbench/hardware.h"

#include "trainbench/textfile.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* The whole file as a NUL-terminated string (malloc'ed), or NULL with err set. */
static char *read_all(const char *path, tb_error *err)
{
    char *text = NULL;
    tb_text_file_read(path, "reference file", (size_t)64 << 20, &text, NULL, err);
    return text;
}

typedef struct parser {
    const char *path;
    tb_error *err;
    char where[96]; /* "workloads[2].figures[0]" */
} parser;

static tb_status bad(parser *p, const char *field, const char *what)
{
    return tb_fail(p->err, TB_ERR_FORMAT, "reference file %s: %s%s%s %s", p->path, p->where,
                   p->where[0] ? "." : "", field, what);
}

/* A string field into buf (required). */
static tb_status text_field(parser *p, const cJSON *o, const char *field, char *buf, size_t cap)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, field);
    if (!cJSON_IsString(v)) return bad(p, field, v ? "must be a string" : "is missing");
    if (strlen(v->valuestring) >= cap) return bad(p, field, "is too long");
    snprintf(buf, cap, "%s", v->valuestring);
    return TB_OK;
}

/* A number field in [min, max] (required unless fallback is finite). */
static tb_status number_field(parser *p, const cJSON *o, const char *field, double min,
                              double max, double fallback, double *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, field);
    if (!v && isfinite(fallback)) {
        *out = fallback;
        return TB_OK;
    }
    if (!cJSON_IsNumber(v)) return bad(p, field, v ? "must be a number" : "is missing");
    if (!(v->valuedouble >= min && v->valuedouble <= max)) {
        char what[96];
        snprintf(what, sizeof what, "is %g, outside [%g, %g]", v->valuedouble, min, max);
        return bad(p, field, what);
    }
    *out = v->valuedouble;
    return TB_OK;
}

static tb_status int_field(parser *p, const cJSON *o, const char *field, int min, int max,
                           int *out)
{
    double v = 0;
    tb_status st = number_field(p, o, field, min, max, NAN, &v);
    if (st != TB_OK) return st;
    if (v != floor(v)) return bad(p, field, "must be a whole number");
    *out = (int)v;
    return TB_OK;
}

static tb_status parse_figure(parser *p, const cJSON *o, tb_hw_figure *f)
{
    char device[16];
    tb_status st = text_field(p, o, "device", device, sizeof device);
    if (st == TB_OK && tb_device_parse(device, &f->device, NULL) != TB_OK)
        st = bad(p, "device", "must be \"cpu\" or \"cuda\"");
    if (st == TB_OK) st = int_field(p, o, "threads", 1, 4096, &f->threads);
    if (st == TB_OK) st = number_field(p, o, "examples_per_s", 1e-9, 1e15, NAN, &f->examples_per_s);
    if (st == TB_OK) st = number_field(p, o, "sem_pct", 0, 1e6, 0, &f->sem_pct);
    return st;
}

static tb_status parse_workload(parser *p, const cJSON *o, tb_hw_ref_workload *w)
{
    tb_status st = text_field(p, o, "workload", w->workload, sizeof w->workload);
    if (st == TB_OK) st = text_field(p, o, "algorithm", w->algorithm, sizeof w->algorithm);
    if (st == TB_OK) st = int_field(p, o, "batch_size", 1, 1 << 24, &w->batch_size);
    if (st == TB_OK) st = number_field(p, o, "weight", 1e-9, 1e9, 1.0, &w->weight);
    if (st != TB_OK) return st;
    const cJSON *figs = cJSON_GetObjectItemCaseSensitive(o, "figures");
    if (!cJSON_IsArray(figs) || cJSON_GetArraySize(figs) < 1 ||
        cJSON_GetArraySize(figs) > TB_HW_MAX_FIGURES)
        return bad(p, "figures", "must be an array of 1 to 8 figures");
    size_t len = strlen(p->where);
    for (const cJSON *f = figs->child; f && st == TB_OK; f = f->next) {
        snprintf(p->where + len, sizeof p->where - len, ".figures[%d]", w->n_figures);
        tb_hw_figure *fig = &w->figures[w->n_figures];
        if (!cJSON_IsObject(f)) return bad(p, "", "must be an object");
        st = parse_figure(p, f, fig);
        for (int i = 0; st == TB_OK && i < w->n_figures; i++)
            if (w->figures[i].device == fig->device && w->figures[i].threads == fig->threads)
                st = bad(p, "threads", "repeats an earlier figure's device and threads");
        w->n_figures++;
    }
    p->where[len] = 0;
    return st;
}

static tb_status parse(parser *p, const cJSON *root, tb_hw_reference *r)
{
    char format[64];
    double version;
    if (!cJSON_IsObject(root)) return bad(p, "", "the file must hold a JSON object");
    tb_status st = text_field(p, root, "format", format, sizeof format);
    if (st == TB_OK && strcmp(format, "trainbench-hw-reference") != 0)
        st = bad(p, "format", "must be \"trainbench-hw-reference\"");
    if (st == TB_OK) st = number_field(p, root, "version", 1, 1, NAN, &version);
    if (st == TB_OK) st = text_field(p, root, "date", r->date, sizeof r->date);
    if (st == TB_OK) st = text_field(p, root, "commit", r->commit, sizeof r->commit);
    if (st == TB_OK) st = text_field(p, root, "cpu", r->cpu, sizeof r->cpu);
    if (st == TB_OK) st = int_field(p, root, "cores", 1, 1 << 20, &r->cores);
    if (st == TB_OK) st = text_field(p, root, "command", r->command, sizeof r->command);
    if (st == TB_OK && cJSON_GetObjectItemCaseSensitive(root, "note"))
        st = text_field(p, root, "note", r->note, sizeof r->note);
    if (st != TB_OK) return st;
    const cJSON *ws = cJSON_GetObjectItemCaseSensitive(root, "workloads");
    if (!cJSON_IsArray(ws) || cJSON_GetArraySize(ws) < 1 ||
        cJSON_GetArraySize(ws) > TB_HW_MAX_REFERENCE)
        return bad(p, "workloads", "must be an array of 1 to 32 workloads");
    for (const cJSON *w = ws->child; w && st == TB_OK; w = w->next) {
        snprintf(p->where, sizeof p->where, "workloads[%d]", r->n);
        tb_hw_ref_workload *e = &r->workloads[r->n];
        if (!cJSON_IsObject(w)) return bad(p, "", "must be an object");
        st = parse_workload(p, w, e);
        for (int i = 0; st == TB_OK && i < r->n; i++)
            if (strcmp(r->workloads[i].workload, e->workload) == 0)
                st = bad(p, "workload", "repeats an earlier workload");
        r->n++;
    }
    return st;
}

tb_status tb_hw_reference_load(const char *path, tb_hw_reference *out, tb_error *err)
{
    memset(out, 0, sizeof *out);
    snprintf(out->path, sizeof out->path, "%s", path);
    char *text = read_all(path, err);
    if (!text) return err ? err->status : TB_ERR_IO;
    cJSON *root = cJSON_Parse(text);
    parser p = {.path = path, .err = err};
    tb_status st = root ? parse(&p, root, out) : bad(&p, "", "is not valid JSON");
    cJSON_Delete(root);
    free(text);
    return st;
}

static const tb_hw_figure *figure_at(const tb_hw_ref_workload *w, tb_device device, int threads)
{
    for (int i = 0; i < w->n_figures; i++)
        if (w->figures[i].device == device && w->figures[i].threads == threads)
            return &w->figures[i];
    return NULL;
}

const tb_hw_figure *tb_hw_reference_find(const tb_hw_reference *ref, const char *workload,
                                         const char *algorithm, int batch_size,
                                         tb_device device, int threads, int cores_here,
                                         const tb_hw_ref_workload **entry, char *why,
                                         size_t cap)
{
    const tb_hw_ref_workload *w = NULL;
    for (int i = 0; i < ref->n && !w; i++)
        if (strcmp(ref->workloads[i].workload, workload) == 0) w = &ref->workloads[i];
    if (entry) *entry = w;
    if (!w) {
        snprintf(why, cap, "%s is not in the reference file", workload);
        return NULL;
    }
    if (strcmp(w->algorithm, algorithm) != 0 || w->batch_size != batch_size) {
        snprintf(why, cap, "the reference ran %s with %s at batch size %d, this "
                 "run with %s at %d", workload, w->algorithm, w->batch_size, algorithm,
                 batch_size);
        return NULL;
    }
    const tb_hw_figure *f = figure_at(w, device, threads);
    if (!f && (device != TB_DEVICE_CPU || threads == cores_here))
        f = figure_at(w, TB_DEVICE_CPU, ref->cores);
    if (!f)
        snprintf(why, cap, "no reference figure for %s on %s at %d thread%s", workload,
                 tb_device_name(device), threads, threads == 1 ? "" : "s");
    return f;
}

static cJSON *figure_json(const tb_hw_figure *f)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "device", tb_device_name(f->device));
    cJSON_AddNumberToObject(o, "threads", f->threads);
    /* six significant digits: finer than any measurement, without binary noise */
    char num[32];
    snprintf(num, sizeof num, "%.6g", f->examples_per_s);
    cJSON_AddRawToObject(o, "examples_per_s", num);
    snprintf(num, sizeof num, "%.3g", f->sem_pct);
    cJSON_AddRawToObject(o, "sem_pct", num);
    return o;
}

tb_status tb_hw_reference_write(const tb_hw_reference *ref, const char *path, tb_error *err)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "format", "trainbench-hw-reference");
    cJSON_AddNumberToObject(root, "version", 1);
    cJSON_AddStringToObject(root, "date", ref->date);
    cJSON_AddStringToObject(root, "commit", ref->commit);
    cJSON_AddStringToObject(root, "cpu", ref->cpu);
    cJSON_AddNumberToObject(root, "cores", ref->cores);
    cJSON_AddStringToObject(root, "command", ref->command);
    cJSON_AddStringToObject(root, "note", ref->note);
    cJSON *ws = cJSON_AddArrayToObject(root, "workloads");
    for (int i = 0; i < ref->n; i++) {
        const tb_hw_ref_workload *w = &ref->workloads[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "workload", w->workload);
        cJSON_AddStringToObject(o, "algorithm", w->algorithm);
        cJSON_AddNumberToObject(o, "batch_size", w->batch_size);
        cJSON_AddNumberToObject(o, "weight", w->weight);
        cJSON *figs = cJSON_AddArrayToObject(o, "figures");
        for (int j = 0; j < w->n_figures; j++)
            cJSON_AddItemToArray(figs, figure_json(&w->figures[j]));
        cJSON_AddItemToArray(ws, o);
    }
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    FILE *f = text ? fopen(path, "w") : NULL;
    bool ok = f && fputs(text, f) >= 0 && fputc('\n', f) != EOF;
    if (f && fclose(f) != 0) ok = false;
    free(text);
    if (!ok)
        return tb_fail(err, TB_ERR_IO, "cannot write the reference file %s: %s", path,
                       errno ? strerror(errno) : "out of memory");
    return TB_OK;
}
