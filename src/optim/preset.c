/* preset.c: named configurations of an algorithm taken from a published submission: the
 * algorithm and hyperparameters it fixed, some of them relative to the workload's step hint.
 *
 * "algoperf_sf_adamw": the AlgoPerf v0.5 self-tuning winner, Schedule-Free AdamW
 * (submissions' self_tuning/schedule_free_adamw): lr 0.0025, one_minus_beta1 0.1, beta2
 * 0.9955159689799007, weight_decay 0.08121616522670176, weight_lr_power 2, r 0.75, and
 * warmup_steps = int(warmup_factor 0.02 * step_hint * 0.75). Its dropout_rate 0.1 and
 * label_smoothing 0.2 are the workload's, not the optimizer's, and are not set here. */
#include "optim/optim_impl.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

typedef struct preset_value {
    const char *name;
    double value;
} preset_value;

typedef struct preset {
    tb_optimizer_preset info;
    preset_value values[8];
    int n_values;
    double warmup_of_hint; /* warmup_steps = floor(this * step_hint); 0: not set */
} preset;

static const preset presets[] = {
    {.info = {.name = "algoperf_sf_adamw",
              .algorithm = "schedule_free_adamw",
              .summary = "AlgoPerf v0.5 self-tuning winner: Schedule-Free AdamW, its fixed "
                         "hyperparameters, warmup 1.5% of the step hint"},
     .values = {{"learning_rate", 0.0025},
                {"beta1", 0.9},
                {"beta2", 0.9955159689799007},
                {"weight_decay", 0.08121616522670176},
                {"weight_lr_power", 2.0},
                {"r", 0.75}},
     .n_values = 6,
     .warmup_of_hint = 0.02 * 0.75},
};
#define N_PRESETS ((int)(sizeof presets / sizeof *presets))

int tb_optimizer_preset_count(void)
{
    return N_PRESETS;
}

const tb_optimizer_preset *tb_optimizer_preset_at(int i)
{
    return i >= 0 && i < N_PRESETS ? &presets[i].info : NULL;
}

tb_status tb_optimizer_preset_apply(const char *name, int64_t step_hint, const char **algorithm,
                                    tb_hparams *hp, tb_error *err)
{
    if (!name || !algorithm || !hp)
        return tb_fail(err, TB_ERR_INVALID, "optimizer_preset_apply: %s is NULL",
                       !name        ? "the preset's name"
                       : !algorithm ? "algorithm"
                                    : "hp");
    const preset *p = NULL;
    for (int i = 0; i < N_PRESETS; i++)
        if (strcmp(presets[i].info.name, name) == 0) p = &presets[i];
    if (!p) {
        char known[256] = "";
        for (int i = 0; i < N_PRESETS; i++) {
            strncat(known, i ? ", " : "", sizeof known - strlen(known) - 1);
            strncat(known, presets[i].info.name, sizeof known - strlen(known) - 1);
        }
        return tb_fail(err, TB_ERR_INVALID, "unknown preset '%s' (known: %s)", name, known);
    }
    if (p->warmup_of_hint > 0 && step_hint < 1)
        return tb_fail(err, TB_ERR_INVALID,
                       "preset %s: its warmup is %g of the workload's step hint, and the step "
                       "hint %lld is not positive",
                       name, p->warmup_of_hint, (long long)step_hint);
    tb_hparams out = *hp;
    for (int i = 0; i < p->n_values; i++)
        if (!tb_hparams_has(hp, p->values[i].name) &&
            tb_hparams_set(&out, p->values[i].name, p->values[i].value, err) != TB_OK)
            return TB_ERR_INVALID;
    if (p->warmup_of_hint > 0 && !tb_hparams_has(hp, "warmup_steps") &&
        tb_hparams_set(&out, "warmup_steps", floor(p->warmup_of_hint * (double)step_hint), err) !=
            TB_OK)
        return TB_ERR_INVALID;
    tb_status st = tb_optimizer_check_hparams(p->info.algorithm, &out, err);
    if (st != TB_OK) return st;
    *hp = out;
    *algorithm = p->info.algorithm;
    return TB_OK;
}
