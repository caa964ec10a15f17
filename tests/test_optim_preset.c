/* test_optim_preset.c: named configurations (tb_optimizer_preset_apply): AlgoPerf's
 * self-tuning Schedule-Free AdamW, its values, its warmup from the step hint, given values
 * winning, and what is refused. */
#include "testutil.h"

#include <string.h>

static void test_algoperf_sf_adamw(void)
{
    tb_error err = {0};
    const char *algorithm = "adamw";
    tb_hparams hp = {0};
    CHECK_OK(tb_optimizer_preset_apply("algoperf_sf_adamw", 2000, &algorithm, &hp, &err), &err);
    CHECK(strcmp(algorithm, "schedule_free_adamw") == 0);
    CHECK(tb_hparams_get(&hp, "learning_rate", 0) == 0.0025);
    CHECK(tb_hparams_get(&hp, "beta1", 0) == 0.9);
    CHECK(tb_hparams_get(&hp, "beta2", 0) == 0.9955159689799007);
    CHECK(tb_hparams_get(&hp, "weight_decay", 0) == 0.08121616522670176);
    CHECK(tb_hparams_get(&hp, "r", 0) == 0.75 && tb_hparams_get(&hp, "weight_lr_power", 0) == 2);
    CHECK(tb_hparams_get(&hp, "warmup_steps", -1) == 30); /* floor(0.02 * 0.75 * 2000) */
    CHECK_OK(tb_optimizer_check_hparams(algorithm, &hp, &err), &err);
    /* a value given first wins over the preset's; the warmup rounds down */
    tb_hparams mine = {0};
    tb_hparams_set(&mine, "learning_rate", 0.01, NULL);
    CHECK_OK(tb_optimizer_preset_apply("algoperf_sf_adamw", 333, &algorithm, &mine, &err), &err);
    CHECK(tb_hparams_get(&mine, "learning_rate", 0) == 0.01);
    CHECK(tb_hparams_get(&mine, "warmup_steps", -1) == 4); /* floor(4.995) */
}

static void test_refused(void)
{
    tb_error err = {0};
    const char *algorithm = "adamw";
    tb_hparams hp = {0};
    CHECK_FAILS(tb_optimizer_preset_apply("nope", 2000, &algorithm, &hp, &err), TB_ERR_INVALID,
                &err, "unknown preset 'nope' (known: algoperf_sf_adamw)");
    CHECK_FAILS(tb_optimizer_preset_apply("algoperf_sf_adamw", 0, &algorithm, &hp, &err),
                TB_ERR_INVALID, &err, "step hint 0 is not positive");
    /* a given value the algorithm refuses: nothing changes */
    tb_hparams_set(&hp, "beta2", 1.0, NULL);
    CHECK_FAILS(tb_optimizer_preset_apply("algoperf_sf_adamw", 2000, &algorithm, &hp, &err),
                TB_ERR_INVALID, &err, "beta2 = 1 is outside [0, 1)");
    CHECK(strcmp(algorithm, "adamw") == 0 && hp.count == 1);
    CHECK(tb_optimizer_preset_count() >= 1 &&
          strcmp(tb_optimizer_preset_at(0)->name, "algoperf_sf_adamw") == 0 &&
          tb_optimizer_preset_at(-1) == NULL && tb_optimizer_preset_at(1000) == NULL);
}

/* The command line: train --preset, refused with --algorithm or an unknown name; listed. */
static void test_cli(void)
{
    static char out[65536];
    CHECK(tb_test_run_cli("train --preset algoperf_sf_adamw --steps 2 --evals 0 "
                          "--eval-examples 64 -t 1 --json -q",
                          out, sizeof out) == 0);
    CHECK(tb_test_output_has(out, "\"algorithm\":\"schedule_free_adamw\""));
    CHECK(tb_test_output_has(out, "\"warmup_steps\":30"));
    CHECK(tb_test_run_cli("train --preset algoperf_sf_adamw -a adamw", out, sizeof out) == 2);
    CHECK(tb_test_output_has(out, "give it or --algorithm, not both"));
    CHECK(tb_test_run_cli("train --preset nope", out, sizeof out) == 2);
    CHECK(tb_test_output_has(out, "unknown preset 'nope'"));
    CHECK(tb_test_run_cli("algorithms", out, sizeof out) == 0);
    CHECK(tb_test_output_has(out, "algoperf_sf_adamw    schedule_free_adamw"));
    CHECK(tb_test_run_cli("train --help", out, sizeof out) == 0);
    CHECK(tb_test_output_has(out, "--preset NAME"));
}

int main(void)
{
    test_algoperf_sf_adamw();
    test_refused();
    test_cli();
    return tb_test_finish("test_optim_preset");
}
