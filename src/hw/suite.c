/* suite.c: what the hardware suite trains: the base workloads, each with its calibration
 * baseline (docs/calibration/summary.csv: the settings its targets and budgets were set with),
 * so that the suite measures the training a benchmark run does. */
#include "trainbench/hardware.h"

#include "trainbench/workload.h"

#include <string.h>

typedef struct hw_settings {
    const char *base;
    const char *algorithm;
    double learning_rate, momentum, weight_decay;
} hw_settings;

/* sgd is Nesterov momentum by default (src/optim/sgd.c) */
static const hw_settings settings[] = {
    {"fmnist_mlp", "sgd", 0.03162277660168379, 0.9, 0},
    {"fmnist_cnn", "adamw", 1e-3, 0, 0.00021544346900318823},
    {"fmnist_autoencoder", "adamw", 1e-3, 0, 0.00021544346900318823},
    {"kjv_transformer", "adamw", 1e-3, 0, 0.00021544346900318823},
    {"wordnet_sparse", "adamw", 1e-3, 0, 0.00021544346900318823},
};

static const tb_workload_info *find_workload(const char *id)
{
    for (int i = 0; id && i < tb_workload_count(); i++)
        if (strcmp(tb_workload_info_at(i)->id, id) == 0) return tb_workload_info_at(i);
    return NULL;
}

static bool is_base(const tb_workload_info *w) { return !w->variant || !w->variant[0]; }

int tb_hw_default_workloads(const char **ids, int cap)
{
    int n = 0;
    for (int i = 0; i < tb_workload_count(); i++) {
        const tb_workload_info *w = tb_workload_info_at(i);
        if (!is_base(w)) continue;
        if (n < cap) ids[n] = w->id;
        n++;
    }
    return n;
}

tb_status tb_hw_settings(const char *workload, const char **algorithm, tb_hparams *hp,
                         tb_error *err)
{
    const tb_workload_info *w = find_workload(workload);
    if (!w)
        return tb_fail(err, TB_ERR_INVALID, "unknown workload '%s' (see `trainbench workloads`)",
                       workload ? workload : "");
    const char *base = is_base(w) ? w->id : w->base;
    for (size_t i = 0; i < sizeof settings / sizeof settings[0]; i++) {
        const hw_settings *s = &settings[i];
        if (strcmp(s->base, base) != 0) continue;
        *algorithm = s->algorithm;
        memset(hp, 0, sizeof *hp);
        tb_hparams_set(hp, "learning_rate", s->learning_rate, NULL);
        if (strcmp(s->algorithm, "sgd") == 0) tb_hparams_set(hp, "momentum", s->momentum, NULL);
        else tb_hparams_set(hp, "weight_decay", s->weight_decay, NULL);
        return TB_OK;
    }
    return tb_fail(err, TB_ERR_INVALID, "the hardware suite has no training settings for "
                   "workload '%s' (base %s): add them to src/hw/suite.c", workload, base);
}
