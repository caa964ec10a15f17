/* score_write.c: a score table written for a terminal (aligned columns, footnotes) or as one
 * JSON object. */
#include "trainbench/score.h"

#include "trainbench/machine.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A cell's time, or what happened instead: a miss, every trial failed, not finished. */
static void fmt_time(char *buf, size_t cap, const tb_score_table *t, size_t c)
{
    if (isfinite(t->time[c]) && t->basis == TB_TIME_STEPS)
        snprintf(buf, cap, "%.0f steps", t->time[c]);
    else if (isfinite(t->time[c])) snprintf(buf, cap, "%.1f s", t->time[c]);
    else if (t->trials[c] > 0 && t->trials_failed[c] == t->trials[c]) snprintf(buf, cap, "failed");
    else if (t->trials_unfinished[c] > 0) snprintf(buf, cap, "unfinished");
    else snprintf(buf, cap, "miss");
}

/* Whether submission s reached a counted workload's target (a voided time does not count):
 * a speedup is shown only then, never for misses alone. */
static bool reached_any(const tb_score_table *t, int s)
{
    for (int w = 0; w < t->n_wl; w++) {
        size_t c = (size_t)s * (size_t)t->n_wl + (size_t)w;
        if (t->counted[w] && isfinite(t->time[c]) && !t->disqualified[c]) return true;
    }
    return false;
}

/* The performance profile as a small table: rho(tau), the counted workloads within tau of the
 * fastest, as a count of the counted workloads. */
static void write_profile(const tb_score_table *t, FILE *f)
{
    static const double taus[] = {1.0, 1.5, 2.0, 3.0, 4.0};
    int counted = 0;
    for (int w = 0; w < t->n_wl; w++) counted += t->counted[w];
    fprintf(f, "\nperformance profile: rho(tau), the workloads within tau of the fastest time "
               "(of %d counted)\n%-24s", counted, "submission");
    for (size_t k = 0; k < sizeof taus / sizeof taus[0]; k++)
        if (taus[k] <= t->tau_max) {
            char h[32];
            snprintf(h, sizeof h, "tau=%g", taus[k]);
            fprintf(f, "  %12s", h);
        }
    fputc('\n', f);
    for (int s = 0; s < t->n_subs; s++) {
        fprintf(f, "%-24s", t->subs[s]);
        for (size_t k = 0; k < sizeof taus / sizeof taus[0]; k++) {
            if (taus[k] > t->tau_max) continue;
            double rho = tb_score_table_profile(t, s, taus[k]);
            char cell[32];
            snprintf(cell, sizeof cell, "%.2f (%d)", rho, (int)lround(rho * counted));
            fprintf(f, "  %12s", cell);
        }
        fputc('\n', f);
    }
}

/* What the variant rule did, under the table: the variants that gate and are not counted, and
 * what a starred time means. */
static void write_variant_note(const tb_score_table *t, FILE *f)
{
    char gates[512] = "";
    for (int w = 0; w < t->n_wl; w++)
        if (!t->counted[w]) {
            strncat(gates, gates[0] ? ", " : "", sizeof gates - strlen(gates) - 1);
            strncat(gates, t->wls[w], sizeof gates - strlen(gates) - 1);
        }
    fprintf(f, "variant rule on: a base workload counts only if its held-out variant is reached "
               "within %gx of the fastest variant time; the variants (%s) gate and are not "
               "counted; * marks a reached base time that does not count, a miss for the score, "
               "the profile and the speedup\n", t->tau_max, gates[0] ? gates : "none here");
}

/* What ~ means, under the table, when a cell has trials that ran on a contended machine. */
static void write_contention_note(const tb_score_table *t, FILE *f)
{
    int n = 0;
    for (size_t c = 0; c < (size_t)t->n_subs * (size_t)t->n_wl; c++) n += t->trials_contended[c];
    if (n == 0) return;
    fprintf(f, "~ marks a time with trials run on a contended machine (%d in all; CPU share below "
               "%g, steal at or above %g%%, or the 1-minute load above the cores + %g): their "
               "times are slower and noisier than the machine's; rerun them on an idle machine "
               "to compare (each trial's conditions: `trainbench export --format jsonl`)\n", n,
            TB_CONTENDED_CPU_SHARE, 100 * TB_CONTENDED_STEAL, TB_CONTENDED_LOAD_SLACK);
}

/* What the table's times are, under it. */
static void write_basis_note(const tb_score_table *t, FILE *f)
{
    if (t->basis == TB_TIME_WALL) {
        fprintf(f, "time basis: wall (accumulated submission seconds, AlgoPerf's)\n");
        return;
    }
    if (t->basis == TB_TIME_STEPS) {
        fprintf(f, "time basis: steps (the steps at the eval that reached the target)\n");
        return;
    }
    fprintf(f, "time basis: reference (the steps at the target x the workload's reference step "
               "time, the median of the store's calibration windows of it):");
    for (int w = 0; w < t->n_wl; w++)
        fprintf(f, "%s %s %.2f ms", w ? "," : "", t->wls[w], 1e3 * t->reference_step_s[w]);
    fputc('\n', f);
}

void tb_score_table_write_text(const tb_score_table *t, FILE *f)
{
    if (!t || !f) return;
    fprintf(f, "benchmark %s (%s tuning): time to target in %s (median over studies of each "
               "study's fastest trial)\n\n", t->benchmark, t->ruleset,
            t->basis == TB_TIME_WALL ? "wall time"
            : t->basis == TB_TIME_REFERENCE ? "reference time" : "steps");
    fprintf(f, "%-24s", "submission");
    for (int w = 0; w < t->n_wl; w++) fprintf(f, "  %-28s", t->wls[w]);
    fprintf(f, "  %7s  %12s\n", "score", "speedup");
    for (int s = 0; s < t->n_subs; s++) {
        fprintf(f, "%-24s", t->subs[s]);
        for (int w = 0; w < t->n_wl; w++) {
            size_t c = (size_t)s * (size_t)t->n_wl + (size_t)w;
            char tm[32], cell[64];
            fmt_time(tm, sizeof tm, t, c);
            int n = snprintf(cell, sizeof cell, "%s%s%s (%d/%d studies", tm,
                             t->disqualified[c] ? "*" : "", t->trials_contended[c] ? "~" : "",
                             t->studies_reached[c], t->studies[c]);
            if (t->trials_failed[c])
                n += snprintf(cell + n, sizeof cell - (size_t)n, ", %d failed",
                              t->trials_failed[c]);
            if (t->trials_unfinished[c])
                n += snprintf(cell + n, sizeof cell - (size_t)n, ", %d unfinished",
                              t->trials_unfinished[c]);
            if (t->trials_contended[c])
                n += snprintf(cell + n, sizeof cell - (size_t)n, ", %d contended",
                              t->trials_contended[c]);
            snprintf(cell + n, sizeof cell - (size_t)n, ")");
            fprintf(f, "  %-28s", cell);
        }
        if (isfinite(t->speedup[s]) && reached_any(t, s))
            fprintf(f, "  %7.3f  %11.2fx\n", t->score[s], t->speedup[s]);
        else fprintf(f, "  %7.3f  %12s\n", t->score[s], reached_any(t, s) ? "-" : "none reached");
    }
    write_profile(t, f);
    fprintf(f, "\nscore: AlgoPerf benchmark score, sum_w max(0, %g - r_w) / (n (%g - 1)), r = "
               "time / fastest time (1 = fastest everywhere, 0 = never within %gx)\n",
            t->tau_max, t->tau_max, t->tau_max);
    fprintf(f, "speedup: geometric mean of %s's time / this time (a miss counts as %s); "
               "none for a submission that reached no target\n", t->reference,
            t->basis == TB_TIME_STEPS ? "the most steps of the workload's trials + 1"
                                      : "budget + 1 s");
    write_basis_note(t, f);
    if (t->variant_rule) write_variant_note(t, f);
    write_contention_note(t, f);
}

static void json_num(cJSON *o, const char *k, double v)
{
    if (isfinite(v)) cJSON_AddNumberToObject(o, k, v);
    else cJSON_AddNullToObject(o, k);
}

void tb_score_table_write_json(const tb_score_table *t, FILE *f)
{
    if (!t || !f) return;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "benchmark", t->benchmark);
    cJSON_AddStringToObject(o, "ruleset", t->ruleset);
    cJSON_AddNumberToObject(o, "tau_max", t->tau_max);
    cJSON_AddBoolToObject(o, "variant_rule", t->variant_rule);
    cJSON_AddStringToObject(o, "reference", t->reference);
    cJSON_AddStringToObject(o, "time_basis", tb_time_basis_name(t->basis));
    if (t->basis == TB_TIME_REFERENCE) {
        cJSON *rs = cJSON_AddObjectToObject(o, "reference_step_s");
        for (int w = 0; w < t->n_wl; w++) json_num(rs, t->wls[w], t->reference_step_s[w]);
    }
    cJSON *subs = cJSON_AddArrayToObject(o, "submissions");
    for (int s = 0; s < t->n_subs; s++) {
        cJSON *x = cJSON_CreateObject();
        cJSON_AddStringToObject(x, "name", t->subs[s]);
        json_num(x, "score", t->score[s]);
        json_num(x, "speedup", t->speedup[s]);
        cJSON *wl = cJSON_AddObjectToObject(x, "workloads");
        for (int w = 0; w < t->n_wl; w++) {
            size_t c = (size_t)s * (size_t)t->n_wl + (size_t)w;
            cJSON *y = cJSON_AddObjectToObject(wl, t->wls[w]);
            json_num(y, "time_to_target", t->time[c]);
            json_num(y, "ratio", t->ratio[c]);
            cJSON_AddNumberToObject(y, "studies", t->studies[c]);
            cJSON_AddNumberToObject(y, "studies_reached", t->studies_reached[c]);
            cJSON_AddNumberToObject(y, "trials", t->trials[c]);
            cJSON_AddNumberToObject(y, "trials_failed", t->trials_failed[c]);
            cJSON_AddNumberToObject(y, "trials_unfinished", t->trials_unfinished[c]);
            cJSON_AddNumberToObject(y, "trials_contended", t->trials_contended[c]);
            cJSON_AddNumberToObject(y, t->basis == TB_TIME_STEPS ? "budget_steps" : "budget_s",
                                    t->budgets[w]);
            cJSON_AddBoolToObject(y, "counted", t->counted[w]);
            cJSON_AddBoolToObject(y, "disqualified", t->disqualified[c]);
        }
        cJSON *prof = cJSON_AddArrayToObject(x, "profile");
        for (int k = 0; k <= 12; k++) { /* rho(tau) at tau = 1, 1.25, ..., tau_max */
            double tau = 1 + (t->tau_max - 1) * k / 12.0;
            cJSON *p = cJSON_CreateArray();
            cJSON_AddItemToArray(p, cJSON_CreateNumber(tau));
            cJSON_AddItemToArray(p, cJSON_CreateNumber(tb_score_table_profile(t, s, tau)));
            cJSON_AddItemToArray(prof, p);
        }
        cJSON_AddItemToArray(subs, x);
    }
    char *text = cJSON_PrintUnformatted(o);
    if (text) fprintf(f, "%s\n", text);
    free(text);
    cJSON_Delete(o);
}
