/* sharpness_runs.c: the sharpness measurements of a study run (settings.sharpness_every),
 * collected from tb_train's observer for the store and the stability figure. */
#include "study/study_impl.h"

#include <stdlib.h>
#include <string.h>

void tb_study_collect_sharpness(void *user, const tb_sharpness *m)
{
    tb_study_collector *c = user;
    if (c->curve.n == c->cap) {
        const int cap = c->cap ? 2 * c->cap : 64;
        tb_study_sharpness_point *p = realloc(c->curve.points, (size_t)cap * sizeof *p);
        if (!p) {
            c->nomem = true;
            return;
        }
        c->curve.points = p;
        c->cap = cap;
    }
    c->curve.points[c->curve.n++] =
        (tb_study_sharpness_point){m->step, m->lambda_max, m->pre_max, m->threshold};
}

void tb_study_collector_take(tb_study_collector *c, tb_study_sharpness_curve *to)
{
    if (to) *to = c->curve;
    else free(c->curve.points);
    memset(c, 0, sizeof *c);
}
