/* train_file.c: one training of a submission file through the run core's update hook. */
#include "train_file.h"

#include "cli.h"

#include <math.h>
#include <string.h>

tb_status tb_cli_train_file(const tb_submission_ref *ref, const tb_run_config *cfg,
                            const tb_train_observers *obs, tb_train_result *res, tb_error *err)
{
    memset(res, 0, sizeof *res);
    res->validation.loss = res->test.loss = NAN;
    tb_run_config run = *cfg;
    tb_submission_hook *hook = NULL;
    tb_status st = tb_submission_hook_open(ref, cfg->model.workload, &cfg->model.hparams,
                                           &hook, err);
    if (st == TB_OK) {
        run.update = tb_submission_hook_update(hook);
        st = tb_submission_hook_explain(hook, tb_train(&run, obs, res, err), err);
    }
    tb_submission_hook_close(hook);
    return st;
}

tb_status tb_cli_study_train_file(void *user, const tb_run_config *cfg, tb_train_result *res,
                                  tb_error *err)
{
    return tb_cli_train_file(user, cfg, NULL, res, err);
}

tb_status tb_cli_study_side(const char *algorithm, tb_submission_ref **ref,
                            tb_study_trainer *trainer, tb_error *err)
{
    *ref = NULL;
    *trainer = (tb_study_trainer){0};
    if (!tb_cli_submission_file(algorithm)) return TB_OK;
    tb_status st = tb_submission_load(algorithm, NULL, ref, err);
    if (st != TB_OK) return st;
    *trainer = (tb_study_trainer){tb_cli_study_train_file, *ref};
    return TB_OK;
}
