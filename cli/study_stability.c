/* study_stability.c: the edge-of-stability figure of `trainbench study` as text and as data:
 * per cell the threshold, the median ratio of the sharpness to it over the last part of
 * training with its range and check ("stability"), and every measurement of every run, the
 * ratio against the step ("stability_curve"). */
#include "study_sink.h"

#include <stdio.h>

/* Each run's ratios under the steps of the longest run (a diverged run stops early). */
static void text_curve(const tb_study_values *v, int c)
{
    const tb_study_sharpness_curve *k = &v->sharpness[(size_t)c * (size_t)v->seeds];
    int longest = 0;
    for (int r = 1; r < v->seeds; r++)
        if (k[r].n > k[longest].n) longest = r;
    printf("    %-8s", "step");
    for (int i = 0; i < k[longest].n; i++) printf(" %6lld", (long long)k[longest].points[i].step);
    printf("\n");
    for (int r = 0; r < v->seeds; r++) {
        printf("    run %-4d", r + 1);
        for (int i = 0; i < k[r].n; i++)
            printf(" %6.3f", tb_study_sharpness_ratio(&k[r].points[i]));
        printf("%s\n", k[r].diverged ? "  diverged" : "");
    }
}

void tb_cli_stability_rows(const tb_study_plan *p, const tb_study_values *v,
                           const tb_study_figures *f, sink *s, bool text)
{
    if (s->csv)
        fputs("cell,threshold,tail,runs,lost,n,median_ratio,min_ratio,max_ratio,tolerance,"
              "outcome\n", s->csv);
    if (text)
        printf("edge of stability (ratio: lambda_1(P^-1 H), lambda_1(H) where P = 1, over the "
               "step's stability threshold; median and range over the last %g%% of each run's "
               "measurements):\n", 100 * p->stability_tail);
    for (int c = 0; c < v->cells; c++) {
        char label[256];
        tb_study_plan_cell_label(p, c, label, sizeof label);
        const tb_study_stability_row *r = &f->stability[c];
        if (text) {
            printf("  %-40s threshold %10.5g  runs %lld (lost %lld)  n %3lld  median %.3f  "
                   "range %.3f-%.3f\n", label, r->threshold, (long long)r->runs,
                   (long long)r->lost, (long long)r->n, r->median, r->lo, r->hi);
            if (r->outcome != TB_STUDY_NOT_JUDGED)
                printf("    expected: at the threshold (|median - 1| <= %g): %s\n",
                       p->stability_tolerance, tb_study_outcome_name(r->outcome));
            text_curve(v, c);
        }
        row_start(s, label);
        field(s, "threshold", r->threshold);
        field(s, "tail", p->stability_tail);
        field(s, "runs", (double)r->runs);
        field(s, "lost", (double)r->lost);
        field(s, "n", (double)r->n);
        field(s, "median_ratio", r->median);
        field(s, "min_ratio", r->lo);
        field(s, "max_ratio", r->hi);
        field(s, "tolerance", p->stability_judged ? p->stability_tolerance : NAN);
        const char *o = tb_study_outcome_name(r->outcome);
        if (s->csv) fprintf(s->csv, ",%s", o);
        if (s->json) {
            fputs(",\"outcome\":", s->json);
            json_str(s->json, o);
        }
        row_end(s);
    }
}

void tb_cli_stability_curve_rows(const tb_study_plan *p, const tb_study_values *v,
                                 const tb_study_figures *f, sink *s, bool text)
{
    (void)f;
    if (text) return; /* printed with the stability rows */
    if (s->csv)
        fputs("cell,run,step,lambda_max,preconditioned_max,threshold,ratio\n", s->csv);
    for (int c = 0; c < v->cells; c++) {
        char label[256];
        tb_study_plan_cell_label(p, c, label, sizeof label);
        for (int r = 0; r < v->seeds; r++) {
            const tb_study_sharpness_curve *k = &v->sharpness[(size_t)c * (size_t)v->seeds + r];
            for (int i = 0; i < k->n; i++) {
                const tb_study_sharpness_point *q = &k->points[i];
                row_start(s, label);
                field(s, "run", r + 1);
                field(s, "step", (double)q->step);
                field(s, "lambda_max", q->lambda_max);
                field(s, "preconditioned_max", q->pre_max);
                field(s, "threshold", q->threshold);
                field(s, "ratio", tb_study_sharpness_ratio(q));
                row_end(s);
            }
        }
    }
}
