/* study_output.c: a study's figure printed as a table (or JSON) with its verdict. */
#include "study_output.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* The width of each axis's column: its name or its longest value. */
static void axis_widths(const tb_study_plan *p, int *w)
{
    for (int k = 0; k < p->n_axes; k++) {
        w[k] = (int)strlen(p->axes[k].name);
        for (int i = 0; i < p->axes[k].n; i++)
            if ((int)strlen(p->axes[k].labels[i]) > w[k]) w[k] = (int)strlen(p->axes[k].labels[i]);
    }
}

static void print_table(const tb_study_plan *p, const tb_study_figure *f)
{
    int w[TB_STUDY_MAX_AXES];
    axis_widths(p, w);
    const bool median = p->statistic == TB_STAT_MEDIAN;
    for (int k = 0; k < p->n_axes; k++) printf("%-*s  ", w[k], p->axes[k].name);
    printf("%4s %4s %10s  %s\n", "n", "lost", median ? "median" : "mean", "95% CI");
    for (int c = 0; c < f->n_cells; c++) {
        const tb_study_cell_row *r = &f->cells[c];
        int v[TB_STUDY_MAX_AXES];
        tb_study_plan_cell_values(p, r->cell, v);
        for (int k = 0; k < p->n_axes; k++) printf("%-*s  ", w[k], p->axes[k].labels[v[k]]);
        printf("%4lld %4lld ", (long long)r->n, (long long)r->lost);
        if (isfinite(r->center)) printf("%10.4g ", r->center);
        else printf("%10s ", "-");
        if (isfinite(r->ci.lo)) printf(" [%.4g, %.4g]\n", r->ci.lo, r->ci.hi);
        else printf(" -\n");
    }
    printf("(%s: %s; lost: runs that diverged%s)\n", median ? "median" : "mean",
           median ? "95% percentile-bootstrap interval" : "95% Student-t interval",
           tb_study_metric_to_target(p->metric) ? " or missed the target" : "");
}

static void hparams_text(const tb_hparams *hp, char *buf, size_t cap)
{
    size_t len = 0;
    buf[0] = '\0';
    for (int i = 0; i < hp->count && len < cap; i++) {
        int w = snprintf(buf + len, cap - len, "%s%s=%.4g", i ? " " : "", hp->names[i],
                         hp->values[i]);
        if (w < 0) break;
        len += (size_t)w;
    }
}

static const char *budget_text(const tb_study_tune *t, char *buf, size_t cap)
{
    if (t->budget_steps > 0) snprintf(buf, cap, "%lld steps", (long long)t->budget_steps);
    else if (t->budget_epochs > 0) snprintf(buf, cap, "%g epochs", t->budget_epochs);
    else if (t->budget_seconds > 0) snprintf(buf, cap, "%g s", t->budget_seconds);
    else snprintf(buf, cap, "the run's length");
    return buf;
}

/* The best of a search's trials (row `slot` of the values' trials). */
static double best_trial(const tb_study_values *v, size_t slot)
{
    double best = INFINITY;
    for (int t = 0; t < v->max_trials; t++) {
        double x = v->trial_v[slot * (size_t)v->max_trials + (size_t)t];
        if (x < best) best = x;
    }
    return best;
}

/* The hyperparameters each tuned cell chose. */
static void print_tuned(const tb_study_plan *p, const tb_study_values *v)
{
    if (v->max_trials == 0) return;
    printf("tuned (selected by %s on the validation split):\n",
           tb_study_metric_name(tb_study_selection_metric(p->metric)));
    for (int c = 0; c < v->cells; c++) {
        const tb_study_tune *t = tb_study_plan_cell_tune(p, c);
        if (!t) continue;
        char label[256], hp[512], budget[64];
        tb_study_plan_cell_label(p, c, label, sizeof label);
        const size_t slot = (size_t)c * (size_t)v->seeds;
        hparams_text(&v->chosen[slot], hp, sizeof hp);
        printf("  %s: %s\n    best of %d %s trials of %s (space %s): %.4g%s\n", label, hp,
               t->trials, tb_study_sampler_name(tb_study_plan_cell_sampler(p, c)),
               budget_text(t, budget, sizeof budget), t->space_source, best_trial(v, slot),
               tb_study_plan_cell_per_run(p, c) ? "; a new search per run, run 1's shown (every run's in --json)"
                          : "; every run retrains it on its own seeds");
    }
}

static void print_pairs(const tb_study_plan *p, const tb_study_figure *f)
{
    for (int i = 0; i < f->n_pairs; i++) {
        const tb_study_pair_row *r = &f->pairs[i];
        const tb_study_comparison *c = &p->comparisons[r->comparison];
        char a[256], b[256], sentence[1024];
        tb_study_plan_cell_label(p, r->cell_a, a, sizeof a);
        tb_study_plan_cell_label(p, r->cell_b, b, sizeof b);
        tb_pab_describe(&r->pab, a, b, sentence, sizeof sentence);
        printf("  %s vs %s: wins %lld, ties %lld, losses %lld\n    %s\n", a, b,
               (long long)r->pab.wins, (long long)r->pab.ties, (long long)r->pab.losses,
               sentence);
        if (c->expect == TB_EXPECT_SAME_WITHIN)
            printf("    expected: every pair the same within %g (relative): %s (largest gap "
                   "%.3g)\n", c->tolerance, tb_study_outcome_name(r->outcome), r->max_rel_gap);
        else if (c->expect == TB_EXPECT_A_WINS)
            printf("    expected: A better in at least %.0f%% of the pairs: %s\n",
                   100 * c->min_wins, tb_study_outcome_name(r->outcome));
        else if (c->expect != TB_EXPECT_NONE)
            printf("    expected: %s: %s\n", tb_study_expect_name(c->expect),
                   tb_study_outcome_name(r->outcome));
    }
}

void tb_cli_study_print(const tb_study_plan *p, const tb_study_values *v,
                        const tb_study_figure *f, const tb_study_figures *figs)
{
    printf("study %s: %s\n", p->name, p->claim);
    printf("source: %s\n", p->source);
    printf("%s, %d runs per cell, %lld trained now and %lld from the store:\n",
           tb_study_metric_name(p->metric), p->seeds, (long long)v->trained,
           (long long)v->reused);
    print_table(p, f);
    print_tuned(p, v);
    tb_cli_study_print_figures(p, v, figs);
    if (f->n_pairs) {
        printf("paired comparisons (P(A>B): A better, %s %s; exact 95%% interval):\n",
               tb_study_metric_higher_is_better(p->metric) ? "higher" : "lower",
               tb_study_metric_name(p->metric));
        print_pairs(p, f);
    }
    int judged = 0, reproduced = 0;
    tb_study_outcome outcome = tb_study_outcome_of(f, figs, &judged, &reproduced);
    if (judged)
        printf("claim: %s (%d of %d checks reproduced)\n", tb_study_outcome_name(outcome),
               reproduced, judged);
    else
        printf("claim: not judged (the study states no expected outcome)\n");
}

static void json_interval(tb_interval ci)
{
    fputs("[", stdout);
    tb_cli_json_number("%.6g", ci.lo);
    fputs(",", stdout);
    tb_cli_json_number("%.6g", ci.hi);
    fputs("]", stdout);
}

static void json_cell(const tb_study_plan *p, int cell)
{
    int v[TB_STUDY_MAX_AXES];
    tb_study_plan_cell_values(p, cell, v);
    fputs("{", stdout);
    for (int k = 0; k < p->n_axes; k++) {
        printf("%s\"", k ? "," : "");
        tb_cli_json_text(p->axes[k].name);
        fputs("\":\"", stdout);
        tb_cli_json_text(p->axes[k].labels[v[k]]);
        fputs("\"", stdout);
    }
    fputs("}", stdout);
}

static void json_hparams(const tb_hparams *hp)
{
    fputs("{", stdout);
    for (int i = 0; i < hp->count; i++) {
        printf("%s\"", i ? "," : "");
        tb_cli_json_text(hp->names[i]);
        fputs("\":", stdout);
        tb_cli_json_number("%.17g", hp->values[i]);
    }
    fputs("}", stdout);
}

/* A tuned cell's search: its settings, each run's chosen point and the trials' values. */
static void json_tuned(const tb_study_plan *p, const tb_study_values *v, int cell)
{
    const tb_study_tune *t = v->max_trials ? tb_study_plan_cell_tune(p, cell) : NULL;
    if (!t) return;
    char budget[64];
    printf(",\"tuned\":{\"trials\":%d,\"sampler\":\"%s\",\"search\":\"%s\",\"budget\":\"%s\","
           "\"space\":\"", t->trials, tb_study_sampler_name(tb_study_plan_cell_sampler(p, cell)),
           tb_study_plan_cell_per_run(p, cell) ? "per_run" : "once", budget_text(t, budget, sizeof budget));
    tb_cli_json_text(t->space_source);
    fputs("\",\"chosen\":[", stdout);
    const int searches = tb_study_plan_cell_per_run(p, cell) ? v->seeds : 1;
    for (int r = 0; r < searches; r++) {
        if (r) fputs(",", stdout);
        json_hparams(&v->chosen[(size_t)cell * (size_t)v->seeds + (size_t)r]);
    }
    fputs("],\"trial_values\":[", stdout);
    for (int r = 0; r < searches; r++) {
        const double *row = v->trial_v + ((size_t)cell * (size_t)v->seeds + (size_t)r) *
                                             (size_t)v->max_trials;
        fputs(r ? ",[" : "[", stdout);
        for (int k = 0; k < t->trials; k++) {
            if (k) fputs(",", stdout);
            tb_cli_json_number("%.6g", row[k]);
        }
        fputs("]", stdout);
    }
    fputs("]}", stdout);
}

void tb_cli_study_print_json(const tb_study_plan *p, const tb_study_values *v,
                             const tb_study_figure *f, const tb_study_figures *figs)
{
    printf("{\"study\":\"");
    tb_cli_json_text(p->name);
    printf("\",\"claim\":\"");
    tb_cli_json_text(p->claim);
    printf("\",\"source\":\"");
    tb_cli_json_text(p->source);
    printf("\",\"metric\":\"%s\",\"statistic\":\"%s\",\"runs_per_cell\":%d,\"trained\":%lld,"
           "\"reused\":%lld,\"cells\":[", tb_study_metric_name(p->metric),
           p->statistic == TB_STAT_MEDIAN ? "median" : "mean", p->seeds,
           (long long)v->trained, (long long)v->reused);
    for (int c = 0; c < f->n_cells; c++) {
        const tb_study_cell_row *r = &f->cells[c];
        printf("%s{\"cell\":", c ? "," : "");
        json_cell(p, r->cell);
        printf(",\"n\":%lld,\"lost\":%lld,\"center\":", (long long)r->n, (long long)r->lost);
        tb_cli_json_number("%.6g", r->center);
        fputs(",\"ci\":", stdout);
        json_interval(r->ci);
        fputs(",\"values\":[", stdout);
        for (int i = 0; i < v->seeds; i++) {
            if (i) fputs(",", stdout);
            tb_cli_json_number("%.6g", v->v[r->cell * v->seeds + i]);
        }
        fputs("]", stdout);
        json_tuned(p, v, r->cell);
        fputs("}", stdout);
    }
    fputs("],\"comparisons\":[", stdout);
    for (int i = 0; i < f->n_pairs; i++) {
        const tb_study_pair_row *r = &f->pairs[i];
        printf("%s{\"a\":", i ? "," : "");
        json_cell(p, r->cell_a);
        fputs(",\"b\":", stdout);
        json_cell(p, r->cell_b);
        printf(",\"pairs\":%lld,\"wins\":%lld,\"ties\":%lld,\"losses\":%lld,\"p\":",
               (long long)r->pab.n, (long long)r->pab.wins, (long long)r->pab.ties,
               (long long)r->pab.losses);
        tb_cli_json_number("%.6g", r->pab.p);
        fputs(",\"ci\":", stdout);
        json_interval(r->pab.ci);
        fputs(",\"max_rel_gap\":", stdout);
        tb_cli_json_number("%.6g", r->max_rel_gap);
        printf(",\"verdict\":\"%s\",\"expect\":\"%s\",\"outcome\":\"%s\"}",
               tb_verdict_name(r->pab.verdict), tb_study_expect_name(p->comparisons[r->comparison].expect),
               tb_study_outcome_name(r->outcome));
    }
    fputs("]", stdout);
    tb_cli_study_json_figures(p, v, figs);
    printf(",\"outcome\":\"%s\"}\n",
           tb_study_outcome_name(tb_study_outcome_of(f, figs, NULL, NULL)));
}
