/* sophia.h: Sophia's estimate from given probes, for tests that replay a reference's probes
 * (internal; trainers call tb_optimizer_update_hessian, which draws them). */
#ifndef TRAINBENCH_SOPHIA_H
#define TRAINBENCH_SOPHIA_H

#include "optim/optim_impl.h"

/* As tb_optimizer_update_hessian for a sophia optimizer, with the num_samples probes given:
 * probes [num_samples * tb_params_trainable], each over the trainable values in parameter
 * order (the flat buffers' padding left out). */
tb_status tb_sophia_update_hessian_probes(tb_optimizer *opt, tb_grad_fn grad, void *user,
                                          const float *probes, tb_error *err);

#endif
