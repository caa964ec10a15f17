/* eval.c: the run's evaluations: when they are due (tb_eval_sched), the untimed evaluation
 * itself, and whether a result reaches the target (confirmed on the whole validation split). */
#include "run/run_impl.h"

#include <math.h>

tb_eval_sched tb_eval_sched_make(const tb_run_eval *eval, int64_t total_steps)
{
    /* evaluations by count need a known length; an open-ended run has its period only */
    bool counted = eval->during > 0 && total_steps < INT64_MAX;
    /* placed by steps, the clock places none: a slower machine moves no evaluation */
    bool by_steps = eval->every_steps > 0;
    return (tb_eval_sched){.during = counted ? eval->during : 0, .next = 1,
                           .total = total_steps, .every = by_steps ? eval->every_steps : 0,
                           .period_s = by_steps ? 0 : eval->period_s};
}

/* The step after which the k-th of n evaluations during a run of `total` steps is made. */
static int64_t eval_step(int64_t k, int64_t n, int64_t total)
{
    return (int64_t)ceil((double)k * (double)total / (double)(n + 1));
}

bool tb_eval_sched_due(tb_eval_sched *s, int64_t step, double clock_s)
{
    bool by_count = false;
    while (s->next <= s->during && eval_step(s->next, s->during, s->total) <= step) {
        by_count = true;
        s->next++;
    }
    bool by_steps = s->every > 0 && step % s->every == 0;
    bool by_time = s->period_s > 0 && clock_s - s->last_s >= s->period_s;
    return (by_count || by_steps || by_time) && step < s->total;
}

void tb_eval_sched_done(tb_eval_sched *s, double clock_s) { s->last_s = clock_s; }

tb_status tb_run_evaluate(tb_run *r, tb_split split, int64_t examples, tb_eval_metrics *m,
                          tb_error *err)
{
    /* at the optimizer's evaluation point (Schedule-Free's x), and back to where it trains */
    tb_optimizer *opt = r->opt ? r->opt : r->theirs.opt;
    tb_status st = opt ? tb_optimizer_prepare_for_eval(opt, err) : TB_OK;
    if (st != TB_OK) return st;
    st = tb_workload_evaluate(r->wl, r->eval_tape ? r->eval_tape : r->tape, split, examples, m,
                              err);
    tb_error back = {0};
    tb_status bst = opt ? tb_optimizer_prepare_for_train(opt, &back) : TB_OK;
    if (st == TB_OK && bst != TB_OK) {
        if (err) *err = back;
        st = bst;
    }
    return st;
}

tb_status tb_run_at_target(tb_run *r, double target, const tb_eval_metrics *m, bool *reached,
                           tb_eval_metrics *whole, tb_error *err)
{
    const bool lower = tb_workload_get_info(r->wl)->lower_is_better;
    const double v = m->metric;
    *reached = false;
    if (whole) whole->examples = 0;
    if (!(lower ? v <= target : v >= target)) return TB_OK; /* NaN: never */
    if (m->examples >= tb_workload_size(r->wl, TB_SPLIT_VALIDATION)) {
        *reached = true;
        return TB_OK;
    }
    tb_eval_metrics all;
    tb_status st = tb_run_evaluate(r, TB_SPLIT_VALIDATION, 0, &all, err);
    if (st != TB_OK) return st;
    if (whole) *whole = all;
    *reached = lower ? all.metric <= target : all.metric >= target;
    return TB_OK;
}
