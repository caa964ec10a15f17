/* preset.c: the presets, named configurations of an algorithm taken from a published
 * submission: the algorithm, the hyperparameters it fixed (some relative to the workload's step
 * hint) and its learning-rate schedule. One table: `train --preset`, `bench -s` and
 * `trainbench algorithms` read it (docs/SUBMISSIONS.md, "Presets").
 *
 * "algoperf_sf_adamw": the AlgoPerf v0.5 self-tuning winner, Schedule-Free AdamW
 * (submissions' self_tuning/schedule_free_adamw): lr 0.0025, one_minus_beta1 0.1, beta2
 * 0.9955159689799007, weight_decay 0.08121616522670176, weight_lr_power 2, r 0.75, and
 * warmup_steps = int(warmup_factor 0.02 * step_hint * 0.75). Its dropout_rate 0.1 and
 * label_smoothing 0.2 are the workload's, not the optimizer's, and are not set here.
 *
 * "nadamw_self_tuning": AlgoPerf's self-tuning baseline (prize_qualification_baselines/
 * self_tuning, the full-budget NAdamW): its HPARAMS, with eps 1e-8 (its NAdamW's) and the
 * warmup of 2% then cosine decay over the step hint. Its HPARAMS also list dropout_rate 0.1,
 * which AlgoPerf never applies (the runner takes a model's dropout from the tuning point,
 * which self-tuning has none of, and the baseline's model_fn call passes none), so neither
 * does the preset. */
#include "optim/optim_impl.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const tb_optimizer_preset presets[] = {
    {.name = "algoperf_sf_adamw",
     .algorithm = "schedule_free_adamw",
     .summary = "AlgoPerf v0.5 self-tuning winner: Schedule-Free AdamW, its fixed "
                "hyperparameters, warmup 1.5% of the step hint",
     .self_tuning = true,
     .n_values = 6,
     .names = {"learning_rate", "beta1", "beta2", "weight_decay", "weight_lr_power", "r"},
     .values = {0.0025, 0.9, 0.9955159689799007, 0.08121616522670176, 2.0, 0.75},
     .warmup_steps_of_hint = 0.02 * 0.75},
    {.name = "nadamw_self_tuning",
     .algorithm = "nadamw",
     .summary = "AlgoPerf's self-tuning baseline: NAdamW at its fixed configuration, warmup "
                "2% then cosine",
     .self_tuning = true,
     .n_values = 5,
     .names = {"learning_rate", "one_minus_beta1", "beta2", "epsilon", "weight_decay"},
     .values = {0.0017486387539278373, 0.06733926164, 0.9955159689799007, 1e-8,
                0.08121616522670176},
     .schedule_warmup = 0.02},
};
#define N_PRESETS ((int)(sizeof presets / sizeof *presets))

int tb_optimizer_preset_count(void)
{
    return N_PRESETS;
}

const tb_optimizer_preset *tb_optimizer_preset_at(int i)
{
    return i >= 0 && i < N_PRESETS ? &presets[i] : NULL;
}

const tb_optimizer_preset *tb_optimizer_preset_find(const char *name)
{
    for (int i = 0; name && i < N_PRESETS; i++)
        if (strcmp(presets[i].name, name) == 0) return &presets[i];
    return NULL;
}

void tb_optimizer_preset_names(char *buf, size_t cap)
{
    if (!buf || cap == 0) return;
    buf[0] = 0;
    for (int i = 0; i < N_PRESETS; i++) {
        strncat(buf, i ? ", " : "", cap - strlen(buf) - 1);
        strncat(buf, presets[i].name, cap - strlen(buf) - 1);
    }
}

tb_status tb_optimizer_preset_apply(const char *name, int64_t step_hint, const char **algorithm,
                                    tb_hparams *hp, tb_error *err)
{
    if (!name || !algorithm || !hp)
        return tb_fail(err, TB_ERR_INVALID, "optimizer_preset_apply: %s is NULL",
                       !name        ? "the preset's name"
                       : !algorithm ? "algorithm"
                                    : "hp");
    const tb_optimizer_preset *p = tb_optimizer_preset_find(name);
    if (!p) {
        char known[256];
        tb_optimizer_preset_names(known, sizeof known);
        return tb_fail(err, TB_ERR_INVALID, "unknown preset '%s' (known: %s)", name, known);
    }
    if (p->warmup_steps_of_hint > 0 && step_hint < 1)
        return tb_fail(err, TB_ERR_INVALID,
                       "preset %s: its warmup is %g of the workload's step hint, and the step "
                       "hint %lld is not positive",
                       name, p->warmup_steps_of_hint, (long long)step_hint);
    tb_hparams out = *hp;
    for (int i = 0; i < p->n_values; i++)
        if (!tb_hparams_has(hp, p->names[i]) &&
            tb_hparams_set(&out, p->names[i], p->values[i], err) != TB_OK)
            return TB_ERR_INVALID;
    if (p->warmup_steps_of_hint > 0 && !tb_hparams_has(hp, "warmup_steps") &&
        tb_hparams_set(&out, "warmup_steps", floor(p->warmup_steps_of_hint * (double)step_hint),
                       err) != TB_OK)
        return TB_ERR_INVALID;
    tb_status st = tb_optimizer_check_hparams(p->algorithm, &out, err);
    if (st != TB_OK) return st;
    *hp = out;
    *algorithm = p->algorithm;
    return TB_OK;
}
