/* test_optim_preset.c: the presets, one table (tb_optimizer_preset): AlgoPerf's self-tuning
 * Schedule-Free AdamW, its values, its warmup from the step hint, given values winning, and
 * what is refused; AlgoPerf's self-tuning NAdamW and its schedule; each preset both a train
 * --preset and a bench submission, with its one-point search space. */
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
                &err, "unknown preset 'nope' (known: algoperf_sf_adamw, nadamw_self_tuning)");
    CHECK_FAILS(tb_optimizer_preset_apply("algoperf_sf_adamw", 0, &algorithm, &hp, &err),
                TB_ERR_INVALID, &err, "step hint 0 is not positive");
    /* a given value the algorithm refuses: nothing changes */
    tb_hparams_set(&hp, "beta2", 1.0, NULL);
    CHECK_FAILS(tb_optimizer_preset_apply("algoperf_sf_adamw", 2000, &algorithm, &hp, &err),
                TB_ERR_INVALID, &err, "beta2 = 1 is outside [0, 1)");
    CHECK(strcmp(algorithm, "adamw") == 0 && hp.count == 1);
    CHECK(tb_optimizer_preset_count() >= 2 &&
          strcmp(tb_optimizer_preset_at(0)->name, "algoperf_sf_adamw") == 0 &&
          tb_optimizer_preset_at(-1) == NULL && tb_optimizer_preset_at(1000) == NULL);
    CHECK(tb_optimizer_preset_find("nope") == NULL && tb_optimizer_preset_find(NULL) == NULL);
}

/* AlgoPerf's self-tuning NAdamW: its values, no step hint needed, its schedule; every preset
 * names a registry algorithm under a name that is not one, and values it accepts. */
static void test_nadamw_self_tuning(void)
{
    tb_error err = {0};
    const char *algorithm = NULL;
    tb_hparams hp = {0};
    CHECK_OK(tb_optimizer_preset_apply("nadamw_self_tuning", 0, &algorithm, &hp, &err), &err);
    CHECK(algorithm && strcmp(algorithm, "nadamw") == 0 && hp.count == 5);
    CHECK(tb_hparams_get(&hp, "learning_rate", 0) == 0.0017486387539278373);
    CHECK(tb_hparams_get(&hp, "one_minus_beta1", 0) == 0.06733926164);
    CHECK(tb_hparams_get(&hp, "epsilon", 0) == 1e-8);
    const tb_optimizer_preset *p = tb_optimizer_preset_find("nadamw_self_tuning");
    CHECK(p && p->self_tuning && p->schedule_warmup == 0.02 && p->warmup_steps_of_hint == 0);
    for (int i = 0; i < tb_optimizer_preset_count(); i++) {
        p = tb_optimizer_preset_at(i);
        CHECK(tb_optimizer_find(p->algorithm) != NULL && tb_optimizer_find(p->name) == NULL);
        tb_hparams fixed = {0};
        for (int j = 0; j < p->n_values; j++)
            tb_hparams_set(&fixed, p->names[j], p->values[j], NULL);
        CHECK_OK(tb_optimizer_check_hparams(p->algorithm, &fixed, &err), &err);
    }
}

/* Each preset loads as a submission: its algorithm, and its point as a one-point search space
 * (nadamw_self_tuning's as it was written by hand before the table). */
static void test_submissions(void)
{
    tb_error err = {0};
    tb_submission_ref *r = NULL;
    if (CHECK_OK(tb_submission_load("nadamw_self_tuning", NULL, &r, &err), &err)) {
        CHECK(strcmp(tb_submission_ref_optimizer(r), "nadamw") == 0);
        CHECK(strcmp(tb_submission_ref_search_space(r),
                     "[{\"learning_rate\": 0.0017486387539278373, \"one_minus_beta1\": "
                     "0.06733926164, \"beta2\": 0.9955159689799007, \"epsilon\": 1e-8, "
                     "\"weight_decay\": 0.08121616522670176, \"warmup_factor\": 0.02}]") == 0);
    }
    tb_submission_unload(r);
    r = NULL;
    if (CHECK_OK(tb_submission_load("algoperf_sf_adamw", NULL, &r, &err), &err)) {
        CHECK(strcmp(tb_submission_ref_optimizer(r), "schedule_free_adamw") == 0);
        CHECK(strcmp(tb_submission_ref_search_space(r),
                     "[{\"learning_rate\": 0.0025, \"beta1\": 0.9, \"beta2\": "
                     "0.9955159689799007, \"weight_decay\": 0.08121616522670176, "
                     "\"weight_lr_power\": 2, \"r\": 0.75}]") == 0);
    }
    tb_submission_unload(r);
    CHECK_FAILS(tb_submission_load("nope", NULL, &r, &err), TB_ERR_INVALID, &err,
                "a preset (algoperf_sf_adamw, nadamw_self_tuning)");
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
    /* nadamw_self_tuning: its warmup of 2%, unless --warmup or --schedule is given */
    CHECK(tb_test_run_cli("train --preset nadamw_self_tuning --steps 50 --evals 0 "
                          "--eval-examples 64 -t 1 --json -q",
                          out, sizeof out) == 0);
    CHECK(tb_test_output_has(out, "\"algorithm\":\"nadamw\""));
    CHECK(tb_test_output_has(out, "\"learning_rate\":0.0017486387539278373"));
    CHECK(tb_test_output_has(out, "\"kind\":\"warmup_cosine\",\"warmup_steps\":1,"));
    CHECK(tb_test_run_cli("train --preset nadamw_self_tuning --warmup 0.1 --steps 50 "
                          "--evals 0 --eval-examples 64 -t 1 --json -q",
                          out, sizeof out) == 0);
    CHECK(tb_test_output_has(out, "\"kind\":\"warmup_cosine\",\"warmup_steps\":5,"));
    CHECK(tb_test_run_cli("train --preset algoperf_sf_adamw -a adamw", out, sizeof out) == 2);
    CHECK(tb_test_output_has(out, "give it or --algorithm, not both"));
    CHECK(tb_test_run_cli("train --preset nope", out, sizeof out) == 2);
    CHECK(tb_test_output_has(out, "unknown preset 'nope'"));
    CHECK(tb_test_run_cli("algorithms", out, sizeof out) == 0);
    CHECK(tb_test_output_has(out, "algoperf_sf_adamw    schedule_free_adamw"));
    CHECK(tb_test_output_has(out, "nadamw_self_tuning   nadamw"));
    CHECK(tb_test_output_has(out, "train --preset NAME, bench -s NAME"));
    CHECK(tb_test_run_cli("train --help", out, sizeof out) == 0);
    CHECK(tb_test_output_has(out, "--preset NAME"));
}

int main(void)
{
    test_algoperf_sf_adamw();
    test_refused();
    test_nadamw_self_tuning();
    test_submissions();
    test_cli();
    return tb_test_finish("test_optim_preset");
}
