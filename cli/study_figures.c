/* study_figures.c: a study's figures beyond the table (variance, rank, curve, estimators,
 * utility, regret, echoing, detection; stability in study_stability.c) as text, and as data:
 * one JSON and one CSV file per figure (`study --out DIR`), the same rows in both. */
#include "study_output.h"
#include "study_sink.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static void variance_rows(const tb_study_plan *p, const tb_study_values *v,
                          const tb_study_figures *f, sink *s, bool text)
{
    if (s->csv) fputs("cell,source,n,lost,mean,std,std_lo,std_hi,std_share\n", s->csv);
    if (text)
        printf("variance by source (each varied alone; \"all\": the cell's runs; std with its "
               "95%% chi-square interval):\n");
    for (int c = 0; c < v->cells; c++) {
        char label[256];
        tb_study_plan_cell_label(p, c, label, sizeof label);
        const tb_study_variance_cell *vc = &f->variance[c];
        for (int g = 0; g < vc->n_groups; g++) {
            const tb_variance_row *r = &vc->rows[g];
            if (text)
                printf("  %-28s %-11s n %3lld  mean %10.4g  std %10.4g  [%.4g, %.4g]  %5.0f%% "
                       "of all\n", g ? "" : label, r->name, (long long)r->n, r->mean, r->std,
                       r->std_ci.lo, r->std_ci.hi, 100 * r->std_share);
            row_start(s, label);
            if (s->csv) fprintf(s->csv, ",%s", r->name);
            if (s->json) fprintf(s->json, ",\"source\":\"%s\"", r->name);
            field(s, "n", (double)r->n);
            field(s, "lost", (double)vc->lost[g]);
            field(s, "mean", r->mean);
            field(s, "std", r->std);
            field(s, "std_lo", r->std_ci.lo);
            field(s, "std_hi", r->std_ci.hi);
            field(s, "std_share", r->std_share);
            row_end(s);
        }
    }
}

static void rank_rows(const tb_study_plan *p, const tb_study_values *v,
                      const tb_study_figures *f, sink *s, bool text)
{
    if (s->csv) fputs("cell,mean_rank,firsts\n", s->csv);
    if (text)
        printf("rank of each cell within each run (1: the best of the run; mean over %d runs):\n",
               v->seeds);
    for (int c = 0; c < v->cells; c++) {
        char label[256];
        tb_study_plan_cell_label(p, c, label, sizeof label);
        if (text)
            printf("  %-28s mean rank %5.2f  first in %lld of %d\n", label, f->rank[c].mean_rank,
                   (long long)f->rank[c].firsts, v->seeds);
        row_start(s, label);
        field(s, "mean_rank", f->rank[c].mean_rank);
        field(s, "firsts", (double)f->rank[c].firsts);
        row_end(s);
    }
}

static void curve_rows(const tb_study_plan *p, const tb_study_values *v,
                       const tb_study_figures *f, sink *s, bool text)
{
    if (s->csv) fputs("cell,trial,best_so_far\n", s->csv);
    if (text)
        printf("best tuning trial so far (%s; the median over the runs' searches for "
               "per_run):\n", tb_study_metric_name(tb_study_selection_metric(p->metric)));
    for (int c = 0; c < v->cells; c++) {
        const tb_study_tune *t = tb_study_plan_cell_tune(p, c);
        if (!t) continue;
        char label[256];
        tb_study_plan_cell_label(p, c, label, sizeof label);
        if (text) printf("  %-28s", label);
        for (int k = 0; k < t->trials; k++) {
            double x = f->curve[(size_t)c * (size_t)v->max_trials + (size_t)k];
            if (text) printf(" %.4g", x);
            row_start(s, label);
            field(s, "trial", k + 1);
            field(s, "best_so_far", x);
            row_end(s);
        }
        if (text) printf("\n");
    }
}

static void estimator_rows(const tb_study_plan *p, const tb_study_values *v,
                           const tb_study_figures *f, sink *s, bool text)
{
    (void)v;
    if (s->csv)
        fputs("cell,n_once,mean_once,std_once,std_once_lo,std_once_hi,n_ideal,mean_ideal,"
              "std_ideal,std_ideal_lo,std_ideal_hi,mean_error,std_ratio,trainings_once,"
              "trainings_ideal,compute_ratio,outcome\n", s->csv);
    if (text)
        printf("estimators (once: one search, then k retrains with every source re-drawn; "
               "ideal: a search per run; std with its 95%% chi-square interval):\n");
    for (int i = 0; i < f->n_estimators; i++) {
        const tb_study_estimator_row *r = &f->estimators[i];
        char label[256];
        tb_study_plan_cell_label(p, r->cell_once, label, sizeof label);
        if (text)
            printf("  %s\n    once   n %3lld  mean %10.4g  std %10.4g  [%.4g, %.4g]  %lld "
                   "trainings\n    ideal  n %3lld  mean %10.4g  std %10.4g  [%.4g, %.4g]  %lld "
                   "trainings\n    once - ideal: mean %+.4g, std ratio %.3g; the ideal costs "
                   "%.3gx the trainings%s%s\n", label, (long long)r->n_once, r->mean_once,
                   r->std_once, r->std_ci_once.lo, r->std_ci_once.hi,
                   (long long)r->trainings_once, (long long)r->n_ideal, r->mean_ideal,
                   r->std_ideal, r->std_ci_ideal.lo, r->std_ci_ideal.hi,
                   (long long)r->trainings_ideal, r->mean_error, r->std_ratio, r->compute_ratio,
                   r->outcome == TB_STUDY_NOT_JUDGED ? "" : "\n    expected: close (each std in the "
                   "other's interval, |mean error| <= the ideal's std): ",
                   r->outcome == TB_STUDY_NOT_JUDGED ? "" : tb_study_outcome_name(r->outcome));
        row_start(s, label);
        field(s, "n_once", (double)r->n_once);
        field(s, "mean_once", r->mean_once);
        field(s, "std_once", r->std_once);
        field(s, "std_once_lo", r->std_ci_once.lo);
        field(s, "std_once_hi", r->std_ci_once.hi);
        field(s, "n_ideal", (double)r->n_ideal);
        field(s, "mean_ideal", r->mean_ideal);
        field(s, "std_ideal", r->std_ideal);
        field(s, "std_ideal_lo", r->std_ci_ideal.lo);
        field(s, "std_ideal_hi", r->std_ci_ideal.hi);
        field(s, "mean_error", r->mean_error);
        field(s, "std_ratio", r->std_ratio);
        field(s, "trainings_once", (double)r->trainings_once);
        field(s, "trainings_ideal", (double)r->trainings_ideal);
        field(s, "compute_ratio", r->compute_ratio);
        if (s->csv) fprintf(s->csv, ",%s", tb_study_outcome_name(r->outcome));
        if (s->json) fprintf(s->json, ",\"outcome\":\"%s\"", tb_study_outcome_name(r->outcome));
        row_end(s);
    }
}

/* The axis value of the "space" axis in cell c (the candidate space's name). */
static const char *space_name(const tb_study_plan *p, int c)
{
    int v[TB_STUDY_MAX_AXES];
    tb_study_plan_cell_values(p, c, v);
    for (int k = 0; k < p->n_axes; k++)
        if (p->axes[k].kind == TB_AXIS_SPACE) return p->axes[k].labels[v[k]];
    return "";
}

static void utility_rows(const tb_study_plan *p, const tb_study_values *v,
                         const tb_study_figures *f, sink *s, bool text)
{
    const tb_study_utility_fig *u = &f->utility;
    const char *metric = tb_study_metric_name(tb_study_selection_metric(p->metric));
    if (s->csv) fputs("cell,space,budget,score,score_se,reached,tau,rho\n", s->csv);
    if (text)
        printf("search-space utility (score: E[best %s of b uniform draws] under a GP fitted to "
               "the %d trials of each space's first search, %d of them diverged; reached: the "
               "median best of the other %d searches after b trials):\n", metric, u->fit_points,
               u->fit_imputed, u->searches);
    for (int b = 0; b < u->n_budgets; b++) {
        if (text)
            printf("  b = %-3d  Kendall tau %6.3f  Spearman rho %6.3f\n", u->budgets[b],
                   u->tau[b], u->rho[b]);
        for (int c = 0; c < v->cells; c++) {
            const double score = u->score[c * u->n_budgets + b];
            const double se = u->score_se[c * u->n_budgets + b];
            const double reached = u->reached[c * u->n_budgets + b];
            if (text)
                printf("    %-20s score %10.4g +- %-9.2g reached %10.4g\n", space_name(p, c),
                       score, se, reached);
            char label[256];
            tb_study_plan_cell_label(p, c, label, sizeof label);
            row_start(s, label);
            if (s->csv) fprintf(s->csv, ",%s", space_name(p, c));
            if (s->json) fprintf(s->json, ",\"space\":\"%s\"", space_name(p, c));
            field(s, "budget", u->budgets[b]);
            field(s, "score", score);
            field(s, "score_se", se);
            field(s, "reached", reached);
            field(s, "tau", u->tau[b]);
            field(s, "rho", u->rho[b]);
            row_end(s);
        }
    }
    if (text) {
        printf("  mean Kendall tau over the budgets: %.3f", u->mean_tau);
        if (u->outcome != TB_STUDY_NOT_JUDGED)
            printf("\n  expected: the scores rank the spaces as the searches do (mean tau >= "
                   "%.3g): %s", p->utility_min_tau, tb_study_outcome_name(u->outcome));
        printf("\n");
    }
}

static void regret_rows(const tb_study_plan *p, const tb_study_values *v,
                        const tb_study_figures *f, sink *s, bool text)
{
    const tb_study_regret_fig *r = &f->regret;
    if (s->csv) fputs("cell,trial,regret,best_known,target,to_target,ratio,outcome\n", s->csv);
    if (text)
        printf("regret after b trials (the median over the runs' searches of the best %s so far, "
               "minus the best trial of any sampler; target: the regret halton reaches after "
               "all its trials):\n", tb_study_metric_name(tb_study_selection_metric(p->metric)));
    for (int c = 0; c < v->cells; c++) {
        const tb_study_tune *t = tb_study_plan_cell_tune(p, c);
        char label[256];
        tb_study_plan_cell_label(p, c, label, sizeof label);
        if (text) {
            printf("  %-40s", label);
            for (int b = 0; t && b < t->trials; b++)
                printf(" %.3g", r->regret[(size_t)c * (size_t)r->trials + (size_t)b]);
            printf("\n    target %.4g (best known %.4g): ", r->target[c], r->best_known[c]);
            if (r->to_target[c] > 0) printf("reached after %d trials", r->to_target[c]);
            else printf("not reached in %d trials", t ? t->trials : 0);
            if (isfinite(r->ratio[c])) printf(", halton needs %.3gx as many", r->ratio[c]);
            if (r->outcome[c] != TB_STUDY_NOT_JUDGED)
                printf("\n    expected: halton needs at least %.3gx the trials: %s",
                       p->regret_min_ratio, tb_study_outcome_name(r->outcome[c]));
            printf("\n");
        }
        for (int b = 0; t && b < t->trials; b++) {
            row_start(s, label);
            field(s, "trial", b + 1);
            field(s, "regret", r->regret[(size_t)c * (size_t)r->trials + (size_t)b]);
            field(s, "best_known", r->best_known[c]);
            field(s, "target", r->target[c]);
            field(s, "to_target", r->to_target[c]);
            field(s, "ratio", r->ratio[c]);
            if (s->csv) fprintf(s->csv, ",%s", tb_study_outcome_name(r->outcome[c]));
            if (s->json)
                fprintf(s->json, ",\"outcome\":\"%s\"", tb_study_outcome_name(r->outcome[c]));
            row_end(s);
        }
    }
}

static const char *verdict_of(const tb_pab_result *r)
{
    return r->n > 0 ? tb_verdict_name(r->verdict) : "unknown";
}

/* One echo cell's line: its medians and each P(A>B) against no echoing. */
static void echo_cell_text(const tb_study_plan *p, const tb_study_echo_cell *c)
{
    int val[TB_STUDY_MAX_AXES];
    tb_study_plan_cell_values(p, c->cell, val);
    const char *echo = "";
    for (int k = 0; k < p->n_axes; k++)
        if (p->axes[k].kind == TB_AXIS_ECHO_MODE) echo = p->axes[k].labels[val[k]];
    printf("    %-24s %9.4g s %9.0f fresh  sooner %.3f [%.3f, %.3f] %s  fewer fresh %.3f %s  "
           "sooner than the fastest upstream's %.3f %s\n", echo, c->time, c->fresh, c->time_pab.p,
           c->time_pab.ci.lo, c->time_pab.ci.hi, verdict_of(&c->time_pab), c->fresh_pab.p,
           verdict_of(&c->fresh_pab), c->fast_pab.p, verdict_of(&c->fast_pab));
}

static void echo_rows(const tb_study_plan *p, const tb_study_values *v,
                      const tb_study_figures *f, sink *s, bool text)
{
    (void)v;
    if (s->csv)
        fputs("cell,slowdown,delay_s,base_time,base_fresh,echo_time,echo_fresh,p_sooner,"
              "p_sooner_lo,p_sooner_hi,p_fewer,p_sooner_than_fastest,control,compensated,"
              "outcome\n", s->csv);
    if (text)
        printf("echoing (medians of time to target and fresh examples read to it; P(A>B) over "
               "the paired runs: the echo cell sooner, or reading fewer, than no echoing at the "
               "same slowdown; the delay per fresh example is the slowdown times the step time "
               "measured before each run index, over the batch):\n");
    for (int i = 0; i < f->n_echo_rows; i++) {
        const tb_study_echo_row *r = &f->echo_rows[i];
        char label[256];
        tb_study_plan_cell_label(p, r->cell_base, label, sizeof label);
        if (text) {
            printf("  %s%s: %.4g s, %.0f fresh; delay %.4g us per fresh example\n", label,
                   r->control ? " (the control)" : "", r->base_time, r->base_fresh,
                   r->delay_s * 1e6);
            for (int e = 0; e < r->n_echo; e++) echo_cell_text(p, &r->echo[e]);
            if (r->outcome != TB_STUDY_NOT_JUDGED)
                printf("    expected: %s: %s\n", r->control
                       ? "no echo cell sooner than no echoing (the fast upstream)"
                       : "some echo cell sooner, with fewer fresh examples",
                       tb_study_outcome_name(r->outcome));
            const bool last = i + 1 == f->n_echo_rows || f->echo_rows[i + 1].group != r->group;
            if (last)
                printf("    the largest slowdown echoing compensates (some echo cell no slower, "
                       "by medians, than no echoing at the smallest slowdown): %g%s\n",
                       tb_study_echo_compensated(f, r->group),
                       tb_study_echo_compensated(f, r->group) > 0 ? "" : " (none)");
        }
        for (int e = 0; e < r->n_echo; e++) {
            const tb_study_echo_cell *c = &r->echo[e];
            char cl[256];
            tb_study_plan_cell_label(p, c->cell, cl, sizeof cl);
            row_start(s, cl);
            field(s, "slowdown", r->slowdown);
            field(s, "delay_s", r->delay_s);
            field(s, "base_time", r->base_time);
            field(s, "base_fresh", r->base_fresh);
            field(s, "echo_time", c->time);
            field(s, "echo_fresh", c->fresh);
            field(s, "p_sooner", c->time_pab.n > 0 ? c->time_pab.p : NAN);
            field(s, "p_sooner_lo", c->time_pab.n > 0 ? c->time_pab.ci.lo : NAN);
            field(s, "p_sooner_hi", c->time_pab.n > 0 ? c->time_pab.ci.hi : NAN);
            field(s, "p_fewer", c->fresh_pab.n > 0 ? c->fresh_pab.p : NAN);
            field(s, "p_sooner_than_fastest", c->fast_pab.n > 0 ? c->fast_pab.p : NAN);
            field(s, "control", r->control);
            field(s, "compensated", tb_study_echo_compensated(f, r->group));
            if (s->csv) fprintf(s->csv, ",%s", tb_study_outcome_name(r->outcome));
            if (s->json)
                fprintf(s->json, ",\"time_verdict\":\"%s\",\"fresh_verdict\":\"%s\","
                        "\"outcome\":\"%s\"", verdict_of(&c->time_pab), verdict_of(&c->fresh_pab),
                        tb_study_outcome_name(r->outcome));
            row_end(s);
        }
    }
}

/* One detection row: A and B's cells, the medians of all their runs and the three rates. */
static void detection_row(sink *s, const char *kind, const char *a, const char *b, double ma,
                          double mb, const tb_study_detection_rates *r, const tb_study_plan *p,
                          tb_study_outcome outcome, bool text)
{
    char label[600];
    snprintf(label, sizeof label, "%s %s vs %s", kind, a, b);
    if (text)
        printf("  %-52s single %5.3f  mean %5.3f  P(A>B) %5.3f  (%s)\n", label, r->single,
               r->mean, r->pab, strcmp(kind, "control") == 0 ? "false positives"
                                                               : "1 - false negatives");
    row_start(s, label);
    field(s, "n", p->detection_n);
    field(s, "k", p->detection_k);
    field(s, "gamma", p->detection_gamma);
    field(s, "resamples", (double)r->resamples);
    field(s, "median_a", ma);
    field(s, "median_b", mb);
    field(s, "single", r->single);
    field(s, "mean", r->mean);
    field(s, "pab", r->pab);
    if (s->csv) fprintf(s->csv, ",%s", tb_study_outcome_name(outcome));
    if (s->json) fprintf(s->json, ",\"outcome\":\"%s\"", tb_study_outcome_name(outcome));
    row_end(s);
}

static void detection_rows(const tb_study_plan *p, const tb_study_values *v,
                           const tb_study_figures *f, sink *s, bool text)
{
    (void)v;
    const tb_study_detection_fig *d = &f->detection;
    char g[256], w[256];
    tb_study_plan_cell_label(p, d->better, g, sizeof g);
    tb_study_plan_cell_label(p, d->worse, w, sizeof w);
    if (s->csv) fputs("cell,n,k,gamma,resamples,median_a,median_b,single,mean,pab,outcome\n", s->csv);
    if (text)
        printf("detection rates (how often each method declares A better than B over %lld "
               "comparisons of %d runs a side drawn with replacement from the recorded runs: "
               "a single run, the mean of %d, P(A>B) significant at 0.05 with P >= %g; the "
               "true difference is the medians' of all runs, %.4g against %.4g):\n",
               (long long)d->difference.resamples, p->detection_n, p->detection_k,
               p->detection_gamma, d->median_better, d->median_worse);
    detection_row(s, "control", g, g, d->median_better, d->median_better, &d->control_better,
                  p, d->outcome, text);
    detection_row(s, "control", w, w, d->median_worse, d->median_worse, &d->control_worse, p,
                  d->outcome, text);
    detection_row(s, "difference", g, w, d->median_better, d->median_worse, &d->difference, p,
                  d->outcome, text);
    if (text && d->outcome != TB_STUDY_NOT_JUDGED)
        printf("    P(A>B): false positives %.3f and %.3f (at most %g expected), false negatives "
               "%.3f (at most %g): %s\n", d->control_better.pab, d->control_worse.pab,
               p->detection_max_fp, 1 - d->difference.pab, p->detection_max_fn,
               tb_study_outcome_name(d->outcome));
}

static void each_figure(const tb_study_plan *p, rows_fn *fns, const char **names)
{
    int n = 0;
    if (p->fig_variance) names[n] = "variance", fns[n++] = variance_rows;
    if (p->fig_rank) names[n] = "rank", fns[n++] = rank_rows;
    if (p->fig_curve) names[n] = "curve", fns[n++] = curve_rows;
    if (p->fig_estimators) names[n] = "estimators", fns[n++] = estimator_rows;
    if (p->fig_utility) names[n] = "utility", fns[n++] = utility_rows;
    if (p->fig_regret) names[n] = "regret", fns[n++] = regret_rows;
    if (p->fig_echoing) names[n] = "echoing", fns[n++] = echo_rows;
    if (p->fig_detection) names[n] = "detection", fns[n++] = detection_rows;
    if (p->fig_stability) {
        names[n] = "stability", fns[n++] = tb_cli_stability_rows;
        names[n] = "stability_curve", fns[n++] = tb_cli_stability_curve_rows;
    }
    names[n] = NULL;
}

void tb_cli_study_print_figures(const tb_study_plan *p, const tb_study_values *v,
                                const tb_study_figures *f)
{
    rows_fn fns[11];
    const char *names[11];
    each_figure(p, fns, names);
    for (int i = 0; names[i]; i++) {
        sink s = {0};
        fns[i](p, v, f, &s, true);
    }
}

void tb_cli_study_json_figures(const tb_study_plan *p, const tb_study_values *v,
                               const tb_study_figures *f)
{
    rows_fn fns[11];
    const char *names[11];
    each_figure(p, fns, names);
    fputs(",\"figures\":{", stdout);
    for (int i = 0; names[i]; i++) {
        sink s = {NULL, stdout, 0};
        printf("%s\"%s\":[", i ? "," : "", names[i]);
        fns[i](p, v, f, &s, false);
        fputs("]", stdout);
    }
    fputs("}", stdout);
}

bool tb_cli_study_write_figures(const tb_study_plan *p, const tb_study_values *v,
                                const tb_study_figures *f, const char *dir)
{
    rows_fn fns[11];
    const char *names[11];
    each_figure(p, fns, names);
    for (int i = 0; names[i]; i++) {
        char csv[4096], json[4096];
        snprintf(csv, sizeof csv, "%s/%s.%s.csv", dir, p->name, names[i]);
        snprintf(json, sizeof json, "%s/%s.%s.json", dir, p->name, names[i]);
        sink s = {fopen(csv, "w"), fopen(json, "w"), 0};
        bool ok = s.csv && s.json;
        if (ok) {
            fputs("{\"study\":", s.json);
            json_str(s.json, p->name);
            fprintf(s.json, ",\"figure\":\"%s\",\"metric\":\"%s\",\"rows\":[\n", names[i],
                    tb_study_metric_name(p->metric));
            fns[i](p, v, f, &s, false);
            fputs("]}\n", s.json);
        }
        ok = ok && !ferror(s.csv) && !ferror(s.json);
        if (s.csv && fclose(s.csv) != 0) ok = false;
        if (s.json && fclose(s.json) != 0) ok = false;
        if (!ok) {
            tb_cli_error("study --out: cannot write %s or %s", csv, json);
            return false;
        }
    }
    return true;
}
