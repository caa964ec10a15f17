/* tape_impl.h: what an op implementation needs from the tape (internal to the library).
 *
 * An op (op_table.h): checks its inputs (tb_op_begin, tb_op_expect), allocates its output
 * (tb_tape_output) and the step memory it keeps (tb_tape_scratch), then runs a node naming
 * the op, its inputs, output and attributes (tb_op_run): the op table's forward function
 * computes with backend kernels, and the node is recorded if the output needs a gradient. The
 * backward function reads out->grad and accumulates into the inputs' gradients
 * (tb_var_grad). */
#ifndef TRAINBENCH_TAPE_IMPL_H
#define TRAINBENCH_TAPE_IMPL_H

#include "nn/op_table.h"

/* The tape's backend and its kernels. */
tb_backend *tb_tape_be(tb_tape *tape);
const tb_backend_ops *tb_tape_ops(tb_tape *tape);

/* Sets the sticky error (first one wins) and returns NULL, for `return tb_op_fail(...)`. */
tb_var *tb_op_fail(tb_tape *tape, tb_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* True if the tape is not NULL, has no error and none of the n inputs is NULL (a NULL input
 * means an earlier op failed; the error is already recorded). tb_op_fail with a NULL tape
 * only returns NULL. */
bool tb_op_begin(tb_tape *tape, int n, tb_var *const *inputs);
/* Fails with TB_ERR_INVALID naming op, what and the shape if v's value has elements but no
 * memory (a parameter before tb_params_finalize, a zeroed tb_var). Returns false on failure. */
bool tb_op_expect_memory(tb_tape *tape, const char *op, const char *what, const tb_var *v);
/* Fails naming op and the tensor if v has no memory (tb_op_expect_memory), is not of dtype
 * want (TB_ERR_INVALID), has a rank outside [ndim_min, ndim_max] or is not contiguous
 * (TB_ERR_SHAPE). Returns false on failure. Every op checks each input with it (or, for ops
 * that take any layout, with tb_op_expect_memory) before a kernel reads the input. */
bool tb_op_expect(tb_tape *tape, const char *op, const char *what, const tb_var *v,
                  tb_dtype want, int ndim_min, int ndim_max);

/* Formats the coordinate of flat position pos in x's shape as "[i, j, k]" (error messages). */
void tb_format_position(const tb_tensor *x, int64_t pos, char *buf, size_t size);
/* Fails with TB_ERR_INVALID (sticky; returns false) naming the first value of the int32 tensor
 * idx outside [0, bound) and its position: "<op>: <what> 7 at position [1, 2] is outside
 * [0, 5)". Values in device memory are downloaded in chunks (a host sync). While the backend
 * captures a graph nothing may be read back: it checks nothing and returns true (the eager
 * steps before a capture check; a replay is not checked). */
bool tb_op_check_indices(tb_tape *tape, const char *op, const char *what, const tb_var *idx,
                         int64_t bound);

/* A new output variable in step memory; requires_grad if grad is enabled and any of the inputs
 * requires it. NULL (error set) if out of memory. */
tb_var *tb_tape_output(tb_tape *tape, tb_dtype dtype, int ndim, const int64_t *shape,
                       int n_in, tb_var *const *inputs);
/* Step memory (device); NULL with the error set if out of memory. */
void *tb_tape_scratch(tb_tape *tape, size_t bytes);
/* The gradient buffer of v, allocated (or, for a fresh parameter gradient, found) and zeroed
 * on first use; NULL if v needs no gradient. A gradient is contiguous in v's shape whatever
 * the strides of v's value (v->grad says so): a backward function writing the gradient of a
 * strided input uses v->grad's strides, not v->value's. A non-contiguous buffer given by the
 * caller fails (NULL, TB_ERR_INVALID). */
float *tb_var_grad(tb_tape *tape, tb_var *v);
/* The gradient buffer of v for ONE kernel that then writes all of it: when v has no gradient
 * yet the buffer is allocated without zeroing (a parameter's fresh one is used as it is) and
 * *acc = false (the kernel overwrites);
 * otherwise *acc = true (it accumulates). Call it right before that kernel, one variable at a
 * time: a second request before the kernel ran would find the buffer and accumulate into
 * garbage. NULL if v needs no gradient. Saves the zeroing pass over large gradients. */
float *tb_var_grad_for(tb_tape *tape, tb_var *v, bool *acc);
/* Lets v take over out's gradient buffer when v has none yet and the sizes match (an op whose
 * input gradient equals its output gradient: add, reshape). Safe because out's gradient is
 * complete and read by no one else once its node's backward runs; an op must let at most one
 * of its inputs adopt. Returns true if adopted (v's gradient is then out's, nothing to add);
 * never on a tape that keeps gradients (tb_tape_set_keep_grads). */
bool tb_var_grad_adopt(tb_tape *tape, tb_var *v, const tb_var *out);
/* v's gradient += out's gradient (an op whose output gradient reaches v unchanged: a
 * residual): v takes over out's buffer when may_adopt and it can (tb_var_grad_adopt), else
 * gets a copy (fresh) or an addition. Returns true if adopted. Call it after the op's last
 * read of out's gradient: an adopted buffer is v's to accumulate into. */
bool tb_var_grad_pass(tb_tape *tape, tb_var *v, const tb_var *out, bool may_adopt);
/* Runs node: its op's forward function (the output's memory is allocated), then, if the output
 * requires a gradient, records a copy of the node for backward (profiled by the op's name).
 * Returns node->out (the op's result; a failed recording leaves the tape's error set). */
tb_var *tb_op_run(tb_tape *tape, const tb_node *node);

#endif
