/* psgd_kron.h: PSGD Kron's random draws given, for tests that replay a reference's probes
 * (internal; a training step draws them from the optimizer's own generator). */
#ifndef TRAINBENCH_PSGD_KRON_H
#define TRAINBENCH_PSGD_KRON_H

#include "optim/optim_impl.h"

#include <stdbool.h>

/* The next step of a psgd_kron optimizer takes probe v [numel of parameter i] for parameter i
 * (the parameter's values in order) and balances its factors if `balance` (instead of its
 * generator's draws). Give every parameter's probe before the step; they are used once.
 * TB_ERR_INVALID for an index or a size that does not match. */
tb_status tb_psgd_kron_give_probe(tb_optimizer *opt, int i, const double *v, int64_t numel,
                                  bool balance, tb_error *err);

#endif
