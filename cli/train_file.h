/* train_file.h: one training of a submission file (a Python file or a library) as the run
 * core's update (tb_submission_hook), for `train -a FILE` and the sides of `compare`. */
#ifndef TRAINBENCH_CLI_TRAIN_FILE_H
#define TRAINBENCH_CLI_TRAIN_FILE_H

#include "trainbench/trainbench.h"

/* tb_train of cfg with ref's functions as the update: a hook opened for this run alone (a
 * Python file runs as a fresh module, its state made anew), with cfg's hyperparameters;
 * errors name the file (tb_submission_hook_explain). */
tb_status tb_cli_train_file(const tb_submission_ref *ref, const tb_run_config *cfg,
                            const tb_train_observers *obs, tb_train_result *res, tb_error *err);

/* The same as a study's train function (tb_study_train_fn): user is the tb_submission_ref. */
tb_status tb_cli_study_train_file(void *user, const tb_run_config *cfg, tb_train_result *res,
                                  tb_error *err);

/* One side of a study (compare -A/-B): when algorithm names a submission file, loads it
 * (tb_submission_load, in a probe process first: a missing file, one that does not parse or
 * lacks update_params is refused with the file and the cause) into *ref (unload when the
 * study ends) and sets *trainer to train its runs with tb_cli_study_train_file; for a
 * registry name, nothing (*ref NULL, *trainer zero). Call before any thread starts. */
tb_status tb_cli_study_side(const char *algorithm, tb_submission_ref **ref,
                            tb_study_trainer *trainer, tb_error *err);

#endif
