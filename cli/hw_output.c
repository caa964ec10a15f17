/* hw_output.c: `trainbench hw`'s output: the terminal table with the scores, or JSON. */
#include "cli.h"
#include "hw.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* A number in fmt into buf, or "-" where it is not finite. */
static const char *num(char *buf, size_t cap, const char *fmt, double v)
{
    if (isfinite(v)) snprintf(buf, cap, fmt, v);
    else snprintf(buf, cap, "-");
    return buf;
}

static void print_score_line(const tb_hw_run *run, const tb_hw_config *cf)
{
    const tb_hw_score *s = &cf->score;
    char lo[32], hi[32];
    printf("score, %s: ", cf->label);
    if (!cf->scored) {
        printf("none (no workload of it has a reference figure)\n");
        return;
    }
    if (s->failed == 0) {
        printf("%.3f (%.0f%% interval %s to %s, propagated from the windows' sem; %d "
               "workload%s)\n", s->score, 100 * run->level, num(lo, sizeof lo, "%.3f", s->low),
               num(hi, sizeof hi, "%.3f", s->high), s->items, s->items == 1 ? "" : "s");
        return;
    }
    printf("0 (%d of %d workloads failed, each counted as 0", s->failed, s->items);
    if (isfinite(s->passed_score))
        printf("; the %d that passed: %.3f, %s to %s", s->items - s->failed, s->passed_score,
               num(lo, sizeof lo, "%.3f", s->passed_low), num(hi, sizeof hi, "%.3f", s->passed_high));
    printf(")\n");
}

/* --dist: the job, and each row's scaling efficiency or why it has none. */
static void print_scaling(const tb_hw_run *run)
{
    if (run->ranks < 2) return;
    printf("job: %d ranks (on %d cores), each training its shard of the batch; the gradients "
           "averaged every step; examples/s of the whole job, timed by rank 0\n", run->ranks,
           run->job_cores);
    for (int i = 0; i < run->n_rows; i++) {
        const tb_hw_row *r = &run->rows[i];
        const tb_hw_config *cf = &run->configs[r->config];
        if (isfinite(r->efficiency))
            printf("scaling: %s, %s: efficiency %.3f (%.1f examples/s over %d x %.1f of one "
                   "process at %d thread%s, from %s)\n", r->workload, cf->label, r->efficiency,
                   r->res.examples_per_s, run->ranks, r->single_examples_per_s, cf->threads,
                   cf->threads == 1 ? "" : "s", r->single_source);
        else
            printf("scaling: %s, %s: no efficiency (%s)\n", r->workload, cf->label,
                   r->failed ? "the run failed"
                             : "no one-process run at these threads with these settings on this "
                         "machine: none in --db, and the reference file is another machine's "
                         "or has no such figure");
    }
}

void tb_cli_hw_print_table(const tb_hw_run *run)
{
    int width = 15; /* the config column: "cpu, 2 ranks x 1 thread" with --dist */
    for (int c = 0; c < run->n_configs; c++)
        if ((int)strlen(run->configs[c].label) > width) width = (int)strlen(run->configs[c].label);
    printf("%-20s %-*s %11s %6s %6s %8s %8s %6s  %s\n", "workload", width, "config", "examples/s",
           "std%", "sem%", "ms/step", "peak MB", "ratio", "status");
    bool notes = false;
    for (int i = 0; i < run->n_rows; i++) {
        const tb_hw_row *r = &run->rows[i];
        const tb_throughput_result *t = &r->res;
        char eps[32], std[16], sem[16], ms[16], mb[16], ratio[16];
        printf("%-20s %-*s %11s %6s %6s %8s %8s %6s  %s%s\n", r->workload, width,
               run->configs[r->config].label, num(eps, sizeof eps, "%.1f", t->examples_per_s),
               num(std, sizeof std, "%.1f", t->std_pct), num(sem, sizeof sem, "%.1f", t->sem_pct),
               num(ms, sizeof ms, "%.2f", t->ms_per_step),
               num(mb, sizeof mb, "%.0f", t->peak_rss_mb > 0 ? t->peak_rss_mb : NAN),
               num(ratio, sizeof ratio, "%.3f", r->ratio), r->failed ? "failed: " : "ok",
               r->failed ? r->reason : "");
        notes |= !isfinite(r->ratio);
    }
    for (int i = 0; notes && run->ref.n > 0 && i < run->n_rows; i++)
        if (!isfinite(run->rows[i].ratio))
            printf("no ratio: %s, %s: %s\n", run->rows[i].workload,
                   run->configs[run->rows[i].config].label, run->rows[i].note);
    const tb_hw_reference *ref = &run->ref;
    for (int c = 0; ref->n > 0 && c < run->n_configs; c++)
        print_score_line(run, &run->configs[c]);
    if (ref->n == 0)
        printf("reference: none (no ratios, no score)\n");
    else
        printf("reference: %s, measured %s at %s on %s (%d cores)%s%s\n", ref->path, ref->date,
               ref->commit, ref->cpu, ref->cores, ref->note[0] ? "; " : "", ref->note);
    print_scaling(run);
    const tb_throughput_config *c = &run->settings;
    printf("settings: %d warm-up steps, %d windows of >= %g s and >= %lld step%s, time limit "
           "%g s per run; peak MB: the %s resident peak\n", c->warmup_steps, c->windows,
           c->window_s, (long long)c->window_steps, c->window_steps == 1 ? "" : "s",
           c->max_time_s, run->ranks > 1 ? "largest rank's" : "process's");
}

/* ---- JSON --------------------------------------------------------------------------------- */

static void json_text_field(const char *name, const char *text, bool comma)
{
    printf("\"%s\":\"", name);
    tb_cli_json_text(text);
    printf("\"%s", comma ? "," : "");
}

static void json_number_field(const char *name, const char *fmt, double v, bool comma)
{
    printf("\"%s\":", name);
    tb_cli_json_number(fmt, v);
    if (comma) putchar(',');
}

static void print_json_row(const tb_hw_run *run, const tb_hw_row *r)
{
    const tb_throughput_result *t = &r->res;
    const tb_hw_config *cf = &run->configs[r->config];
    putchar('{');
    json_text_field("workload", r->workload, true);
    json_text_field("algorithm", r->algorithm, true);
    json_text_field("device", tb_device_name(cf->device), true);
    printf("\"threads\":%d,\"ranks\":%d,\"batch_size\":%d,", cf->threads, run->ranks,
           r->batch_size);
    json_text_field("backend", t->backend, true);
    json_text_field("status", r->failed ? "failed" : "ok", true);
    json_text_field("reason", r->reason, true);
    json_number_field("examples_per_s", "%.2f", t->examples_per_s, true);
    json_number_field("std_pct", "%.3f", t->std_pct, true);
    json_number_field("sem_pct", "%.3f", t->sem_pct, true);
    json_number_field("ms_per_step", "%.4f", t->ms_per_step, true);
    json_number_field("peak_mb", "%.1f", t->peak_rss_mb, true);
    printf("\"windows\":%d,\"steps\":%lld,\"window_examples_per_s\":[", t->windows,
           (long long)t->steps);
    for (int i = 0; i < t->windows; i++) {
        if (i) putchar(',');
        tb_cli_json_number("%.2f", t->window_examples_per_s[i]);
    }
    printf("],\"time_limited\":%s,", t->time_limited ? "true" : "false");
    json_number_field("first_loss", "%.6g", t->first_loss, true);
    json_number_field("last_loss", "%.6g", t->last_loss, true);
    json_number_field("ratio", "%.4f", r->ratio, true);
    json_number_field("reference_examples_per_s", "%.2f", r->reference_examples_per_s, true);
    json_text_field("ratio_note", isfinite(r->ratio) ? "" : r->note, true);
    json_number_field("single_process_examples_per_s", "%.2f", r->single_examples_per_s, true);
    json_text_field("single_process_source", r->single_source, true);
    json_number_field("scaling_efficiency", "%.4f", r->efficiency, false);
    putchar('}');
}

static void print_json_score(const tb_hw_run *run, const tb_hw_config *cf)
{
    const tb_hw_score *s = &cf->score;
    putchar('{');
    json_text_field("config", cf->label, true);
    json_text_field("device", tb_device_name(cf->device), true);
    printf("\"threads\":%d,\"ranks\":%d,\"scored\":%s,", cf->threads, run->ranks,
           cf->scored ? "true" : "false");
    printf("\"workloads\":%d,\"failed\":%d,", s->items, s->failed);
    json_number_field("score", "%.4f", cf->scored ? s->score : NAN, true);
    json_number_field("low", "%.4f", cf->scored ? s->low : NAN, true);
    json_number_field("high", "%.4f", cf->scored ? s->high : NAN, true);
    json_number_field("level", "%g", run->level, true);
    json_number_field("passed_score", "%.4f", cf->scored ? s->passed_score : NAN, false);
    putchar('}');
}

void tb_cli_hw_print_json(const tb_hw_run *run)
{
    const tb_hw_reference *ref = &run->ref;
    const tb_throughput_config *c = &run->settings;
    putchar('{');
    json_text_field("code_version", tb_code_version(), true);
    printf("\"machine\":%s,", run->machine);
    printf("\"ranks\":%d,\"job_cores\":%d,", run->ranks, run->job_cores);
    printf("\"settings\":{\"warmup_steps\":%d,\"windows\":%d,\"window_s\":%g,"
           "\"window_steps\":%lld,\"max_time_s\":%g,\"seed\":%llu},",
           c->warmup_steps, c->windows, c->window_s, (long long)c->window_steps, c->max_time_s,
           (unsigned long long)c->seed);
    printf("\"reference\":{");
    json_text_field("file", ref->path, true);
    json_text_field("date", ref->date, true);
    json_text_field("commit", ref->commit, true);
    json_text_field("cpu", ref->cpu, true);
    printf("\"cores\":%d,", ref->cores);
    json_text_field("note", ref->note, false);
    printf("},\"results\":[");
    for (int i = 0; i < run->n_rows; i++) {
        if (i) putchar(',');
        print_json_row(run, &run->rows[i]);
    }
    printf("],\"scores\":[");
    for (int i = 0; i < run->n_configs; i++) {
        if (i) putchar(',');
        print_json_score(run, &run->configs[i]);
    }
    printf("]}\n");
}
