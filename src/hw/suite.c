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
    {.base = "fmnist_mlp", .algorithm = "sgd", .learning_rate = 0.03162277660168379,
     .momentum = 0.9},
    {.base = "fmnist_cnn", .algorithm = "adamw", .learning_rate = 1e-3,
     .weight_decay = 0.00021544346900318823},
    {.base = "fmnist_autoencoder", .algorithm = "adamw", .learning_rate = 1e-3,
     .weight_decay = 0.00021544346900318823},
    {.base = "kjv_transformer", .algorithm = "adamw", .learning_rate = 1e-3,
     .weight_decay = 0.00021544346900318823},
    {.base = "wordnet_sparse", .algorithm = "adamw", .learning_rate = 1e-3,
     .weight_decay = 0.00021544346900318823},
};


int tb_hw_default_workloads(const char **ids, int cap)
{
    int n = 0;
    for (int i = 0; i < tb_workload_count(); i++) {
        const tb_workload_info *w = tb_workload_info_at(i);
        if (tb_workload_variant_of(w)) continue;
        if (n < cap) ids[n] = w->id;
        n++;
    }
    return n;
}

tb_status tb_hw_settings(const char *workload, const char **algorithm, tb_hparams *hp,
                         tb_error *err)
{
    const tb_workload_info *w = tb_workload_find_info(workload);
    if (!w)
        return tb_fail(err, TB_ERR_INVALID, "unknown workload '%s' (see `trainbench workloads`)",
                       workload ? workload : "");
    const char *base = tb_workload_variant_of(w) ? w->base : w->id;
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
