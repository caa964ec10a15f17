/* train_sharpness.c: the sharpness measurements of `trainbench train --sharpness-every`, as
 * lines on stderr, a summary and JSON (see train_sharpness.h). */
#include "train_sharpness.h"

#include "cli.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* "<value> x threshold" when both are finite, else nothing. */
static double ratio(double v, double threshold)
{
    return isfinite(v) && isfinite(threshold) && threshold > 0 ? v / threshold : NAN;
}

void tb_cli_sharpness_record(void *user, const tb_sharpness *s)
{
    tb_cli_sharpness_log *log = user;
    if (log->n == log->cap) {
        int64_t cap = log->cap ? 2 * log->cap : 64;
        tb_sharpness *items = realloc(log->items, (size_t)cap * sizeof *items);
        if (items) {
            log->items = items;
            log->cap = cap;
        }
    }
    if (log->n < log->cap)
        log->items[log->n++] = *s;
    else
        log->out_of_memory = true;
    if (!log->print) return;
    fprintf(stderr, "%s  step %lld  sharpness %.4g (smallest %.3g)  preconditioned %.4g "
            "(smallest %.3g)  threshold %.4g",
            log->tty ? "\r\033[K" : "", (long long)s->step, s->lambda_max, s->lambda_min,
            s->pre_max, s->pre_min, s->threshold);
    double q = ratio(s->pre_max, s->threshold);
    if (isfinite(q)) fprintf(stderr, " (x%.3f)", q);
    fputc('\n', stderr);
}

void tb_cli_sharpness_free(tb_cli_sharpness_log *log)
{
    free(log->items);
    log->items = NULL;
    log->n = log->cap = 0;
}

void tb_cli_sharpness_summary(const tb_run_config *c, const tb_train_result *r)
{
    if (r->sharpness_measurements == 0) return;
    const tb_sharpness *s = &r->sharpness;
    printf("sharpness:  %lld measurement%s (every %lld step%s, %d Lanczos steps each, %lld "
           "gradient evaluations the last), %.1f s untimed\n",
           (long long)r->sharpness_measurements, r->sharpness_measurements == 1 ? "" : "s",
           (long long)c->diag.sharpness_every, c->diag.sharpness_every == 1 ? "" : "s", s->iterations,
           (long long)s->grad_evals, r->sharpness_time_s);
    printf("            after step %lld: lambda_1(H) %.4g, lambda_1(P^-1 H) %.4g, stability "
           "threshold %.4g at lr %.4g",
           (long long)s->step, s->lambda_max, s->pre_max, s->threshold, s->learning_rate);
    double q = ratio(s->pre_max, s->threshold);
    if (isfinite(q)) printf(" (x%.3f)", q);
    printf("\n");
}

/* ,"name":number (null when not finite) */
static void field(const char *name, const char *fmt, double v)
{
    printf(",\"%s\":", name);
    tb_cli_json_number(fmt, v);
}

void tb_cli_sharpness_json(const tb_run_config *c, const tb_train_result *r, int64_t batch,
                           const tb_cli_sharpness_log *log)
{
    if (c->diag.sharpness_every <= 0) return;
    printf("\"sharpness\":{\"every\":%lld,\"batch\":%lld", (long long)c->diag.sharpness_every,
           (long long)batch);
    field("seconds", "%.3f", r->sharpness_time_s);
    printf(",\"complete\":%s,\"measurements\":[", log->out_of_memory ? "false" : "true");
    for (int64_t i = 0; i < log->n; i++) {
        const tb_sharpness *s = &log->items[i];
        printf("%s{\"step\":%lld,\"iterations\":%d,\"grad_evals\":%lld", i ? "," : "",
               (long long)s->step, s->iterations, (long long)s->grad_evals);
        field("learning_rate", "%.6g", s->learning_rate);
        field("lambda_max", "%.6g", s->lambda_max);
        field("lambda_min", "%.6g", s->lambda_min);
        field("lambda_residual", "%.3g", s->lambda_residual);
        field("preconditioned_max", "%.6g", s->pre_max);
        field("preconditioned_min", "%.6g", s->pre_min);
        field("preconditioned_residual", "%.3g", s->pre_residual);
        field("threshold", "%.6g", s->threshold);
        field("fd_step", "%.3g", s->step_size);
        putchar('}');
    }
    printf("]},");
}
