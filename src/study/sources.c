/* sources.c: whether a source of variation varies anything in a run of the given settings, so
 * that a variance study refuses (naming why) a source that would show a share of 0% only
 * because nothing reads its stream. */
#include "study/study_impl.h"

#include "trainbench/workload.h"

#include <string.h>

/* The true-Fisher optimizers sample their targets from a stream keyed by the dropout seed
 * (src/run/run.c), unless they use the empirical Fisher. */
static bool samples_fisher(const tb_run_model *m)
{
    if (!m->algorithm || (strcmp(m->algorithm, "kfac") != 0 && strcmp(m->algorithm, "ekfac") != 0))
        return false;
    return tb_hparams_get(&m->hparams, "empirical_fisher", 0) != 1;
}

tb_status tb_study_check_source(const tb_run_config *c, tb_stream s, bool searches,
                                tb_error *err)
{
    const char *w = c->model.workload ? c->model.workload : "the workload";
    if (c->update.update) return TB_OK; /* a submission's own update: it may read any stream */
    switch (s) {
    case TB_STREAM_DROPOUT:
        if (tb_workload_has_dropout(c->model.workload) || samples_fisher(&c->model)) return TB_OK;
        return tb_fail(err, TB_ERR_INVALID,
                       "source dropout does not vary: %s has no dropout (its model never reads "
                       "the dropout stream, and %s samples no Fisher targets from it); use a "
                       "variant with dropout (fmnist_mlp_dropout, fmnist_cnn_dropout, ...)",
                       w, c->model.algorithm ? c->model.algorithm : "the algorithm");
    case TB_STREAM_AUGMENT:
        if (c->data.pipeline.augment) return TB_OK;
        return tb_fail(err, TB_ERR_INVALID,
                       "source augment does not vary: the run has no data augmentation (set "
                       "--augment)");
    case TB_STREAM_HPARAM:
        if (searches) return TB_OK; /* each run of the source searches anew from its seed */
        return tb_fail(err, TB_ERR_INVALID,
                       "source hparam does not vary: the runs train one fixed point, no search "
                       "draws hyperparameters from the hparam stream (give a search: --search "
                       "N, each run of the source then searches anew)");
    default: return TB_OK;
    }
}
