/* backend.h: where tensors live and who computes on them.
 *
 * A backend (CPU with BLAS + OpenMP; CUDA when built with it) owns device memory and implements
 * every kernel the engine needs behind one interface (src/backend/backend_impl.h). Ops and layers
 * call the interface and never test which backend they run on. */
#ifndef TRAINBENCH_BACKEND_H
#define TRAINBENCH_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "trainbench/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum tb_device {
    TB_DEVICE_CPU = 0,
    TB_DEVICE_CUDA = 1,
} tb_device;

typedef struct tb_backend tb_backend; /* opaque */

typedef struct tb_backend_config {
    tb_device device;
    int threads;      /* CPU: threads shared by BLAS and OpenMP loops; 0 = all cores */
    int device_index; /* CUDA: which GPU */
} tb_backend_config;

/* Parses "cpu" or "cuda". */
tb_status tb_device_parse(const char *name, tb_device *out, tb_error *err);
const char *tb_device_name(tb_device device);
/* Whether this build has the code for device (CUDA needs a build with TB_WITH_CUDA). */
bool tb_device_compiled(tb_device device);

/* Creates a backend. Fails with TB_ERR_UNSUPPORTED if not compiled in and TB_ERR_NO_DEVICE if
 * the device is absent. The caller destroys it after every tensor allocated on it. */
tb_status tb_backend_create(const tb_backend_config *config, tb_backend **out, tb_error *err);
void tb_backend_destroy(tb_backend *be);

tb_device tb_backend_device(const tb_backend *be);
const char *tb_backend_name(const tb_backend *be);
/* Threads the backend computes with (CPU) or 1 (devices that manage their own). */
int tb_backend_threads(const tb_backend *be);
/* One line describing the backend: BLAS library and threads, or the GPU's name. */
const char *tb_backend_describe(const tb_backend *be);

/* Floating-point operations done by the backend's matrix products so far (2 m n k per product),
 * for GEMM-efficiency figures. Kernels that multiply matrices internally (attention) are not
 * counted. */
uint64_t tb_backend_gemm_flops(const tb_backend *be);

/* Device memory. Allocations are 64-byte aligned; tb_backend_alloc returns NULL on failure. */
void *tb_backend_alloc(tb_backend *be, size_t bytes);
void tb_backend_free(tb_backend *be, void *ptr);
void tb_backend_upload(tb_backend *be, void *dst_device, const void *src_host, size_t bytes);
void tb_backend_download(tb_backend *be, void *dst_host, const void *src_device, size_t bytes);
/* Waits until all queued work has finished (a no-op on CPU). */
void tb_backend_sync(tb_backend *be);

#ifdef __cplusplus
}
#endif
#endif
