/* trainbench.h: the whole public API of the trainbench library.
 *
 * trainbench is a benchmark suite for neural-network training algorithms, and the engine that
 * runs them. The engine in five lines (see nn.h for a longer example):
 *
 *     tb_backend *be;  tb_backend_create(&(tb_backend_config){.device = TB_DEVICE_CPU}, &be, &err);
 *     tb_params *params;  tb_params_create(be, &params, &err);   // declare, then finalize
 *     tb_tape *tape;  tb_tape_create(be, &tape, &err);           // ops record here
 *     tb_var *loss = ...ops on the tape...;  tb_tape_backward(tape, loss);
 *     tb_optimizer_step(opt, lr, &err);  tb_tape_reset(tape);    // next step
 *
 * A whole training run of a workload (run.h, train.h: the run core and its driver):
 *
 *     tb_run_config c = tb_run_config_default();  c.model.workload = "fmnist_mlp";
 *     c.model.algorithm = "adamw";  c.length.max_steps = 500;
 *     tb_train_result r;  tb_train(&c, NULL, &r, &err);          // r.validation, r.test
 *
 * Every call that can fail returns a tb_status and fills a tb_error; nothing prints or exits. */
#ifndef TRAINBENCH_H
#define TRAINBENCH_H

#include "trainbench/backend.h"
#include "trainbench/curvature.h"
#include "trainbench/data.h"
#include "trainbench/dist.h"
#include "trainbench/nn.h"
#include "trainbench/optim.h"
#include "trainbench/machine.h"
#include "trainbench/pipeline.h"
#include "trainbench/rng.h"
#include "trainbench/run.h"
#include "trainbench/sharpness.h"
#include "trainbench/stats.h"
#include "trainbench/step.h"
#include "trainbench/status.h"
#include "trainbench/tensor.h"
#include "trainbench/train.h"
#include "trainbench/workload.h"
#include "trainbench/submission.h"
#include "trainbench/tune.h"
#include "trainbench/store.h"
#include "trainbench/score.h"
#include "trainbench/benchmark.h"
#include "trainbench/throughput.h"
#include "trainbench/hardware.h"
#include "trainbench/report.h"
#include "trainbench/study.h"
#include "trainbench/study_plan.h"
#include "trainbench/textfile.h"

#endif
