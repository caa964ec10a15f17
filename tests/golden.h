/* golden.h: reads the PyTorch reference fixtures of tests/golden/ (written by
 * tests/golden/make_golden.py) and compares trainbench results with them.
 *
 * One file per case, tests/golden/<case>.bin, all little-endian:
 *     magic "TBGOLD01" (8 bytes), count uint32, then count tensors, each:
 *     name_len uint32, name (name_len ASCII bytes), dtype uint32 (0 float32, 1 int32),
 *     ndim uint32 (0..6), shape int64[ndim], data numel * 4 bytes row-major.
 *
 * A value passes when |got - ref| <= TB_GOLDEN_ATOL + TB_GOLDEN_RTOL * |ref| for every
 * element. References are computed in float64 from the float32 inputs, so the tolerance only
 * covers trainbench's float32 rounding. With TB_GOLDEN_VERBOSE set in the environment every
 * passing comparison prints its maximum absolute difference. */
#ifndef TRAINBENCH_TEST_GOLDEN_H
#define TRAINBENCH_TEST_GOLDEN_H

#include <stdbool.h>
#include <stdint.h>

#include "testutil.h"

#define TB_GOLDEN_ATOL 1e-4
#define TB_GOLDEN_RTOL 1e-4

typedef struct tb_golden_tensor {
    char name[64];
    tb_dtype dtype;
    int ndim;
    int64_t shape[TB_MAX_DIMS];
    int64_t numel;
    void *data; /* host memory: float or int32_t */
} tb_golden_tensor;

typedef struct tb_golden {
    char name[64]; /* the case */
    int count;
    tb_golden_tensor *tensors;
} tb_golden;

/* True when the fixture directory is there; otherwise prints how to regenerate it. */
bool tb_golden_available(void);
/* Loads TB_SOURCE_DIR/tests/golden/<name>.bin. On failure prints why and returns false. */
bool tb_golden_load(const char *name, tb_golden *g);
void tb_golden_free(tb_golden *g);
/* The named tensor; NULL (with a message) if the case has none. */
const tb_golden_tensor *tb_golden_get(const tb_golden *g, const char *name);
/* A 0-d setting (smoothing, stride, ...); 0 with a message if missing. */
double tb_golden_scalar(const tb_golden *g, const char *name);

/* A new step variable on the tape holding the named tensor (float32 or int32). */
tb_var *tb_golden_var(tb_tape *tape, const tb_golden *g, const char *name, bool requires_grad);
/* Copies the named tensor into an existing tensor of the same element count. */
bool tb_golden_upload(const tb_golden *g, const char *name, tb_tensor *dst);

/* Compares a float32 tensor (NULL data: no gradient arrived) with the named reference: shape
 * and values. Records one check; on failure prints the case, the name, the worst element and
 * the maximum difference. */
bool tb_golden_compare(const tb_golden *g, const char *name, const tb_tensor *got);

/* Loads the case and creates a tape for it; NULL (failure recorded) if either fails. */
tb_tape *tb_golden_begin(tb_backend *be, const char *name, tb_golden *g);
void tb_golden_end(tb_tape *tape, tb_golden *g);
/* Runs backward from loss; on a tape error records a failure with the case and message. */
bool tb_golden_backward(const tb_golden *g, tb_tape *tape, tb_var *loss);

/* Copies every parameter's value from the tensor of the same name. */
bool tb_golden_params_upload(const tb_golden *g, tb_params *params);
/* Compares every parameter's gradient with the tensor "grad.<name>". */
bool tb_golden_params_compare(const tb_golden *g, tb_params *params);

/* The scalar sum(y * dy) built from tape ops, so that backward seeds y's gradient with dy. */
tb_var *tb_golden_dot(tb_tape *tape, tb_var *y, tb_var *dy);

#endif
