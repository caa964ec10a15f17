/* backend.c: the backend registry. The only file that knows which backends were compiled. */
#include "backend/backend_impl.h"

#include <stdlib.h>
#include <string.h>

tb_status tb_device_parse(const char *name, tb_device *out, tb_error *err)
{
    if (strcmp(name, "cpu") == 0) {
        *out = TB_DEVICE_CPU;
        return TB_OK;
    }
    if (strcmp(name, "cuda") == 0 || strcmp(name, "gpu") == 0) {
        *out = TB_DEVICE_CUDA;
        return TB_OK;
    }
    return tb_fail(err, TB_ERR_INVALID, "unknown device '%s' (expected cpu or cuda)", name);
}

tb_status tb_precision_parse(const char *name, tb_precision *out, tb_error *err)
{
    static const tb_precision all[3] = {TB_PRECISION_FP32, TB_PRECISION_TF32, TB_PRECISION_BF16};
    for (int i = 0; i < 3; i++) {
        if (strcmp(name, tb_precision_name(all[i])) == 0) {
            *out = all[i];
            return TB_OK;
        }
    }
    return tb_fail(err, TB_ERR_INVALID, "unknown precision '%s' (expected fp32, tf32 or bf16)",
                   name);
}

const char *tb_precision_name(tb_precision precision)
{
    switch (precision) {
    case TB_PRECISION_TF32: return "tf32";
    case TB_PRECISION_BF16: return "bf16";
    default: return "fp32";
    }
}

const char *tb_device_name(tb_device device)
{
    return device == TB_DEVICE_CUDA ? "cuda" : "cpu";
}

bool tb_device_compiled(tb_device device)
{
    if (device == TB_DEVICE_CPU) return true;
#ifdef TB_WITH_CUDA
    return true;
#else
    return false;
#endif
}

tb_status tb_backend_create(const tb_backend_config *config, tb_backend **out, tb_error *err)
{
    tb_backend_config cfg = {0};
    if (config) cfg = *config;
    if (!tb_device_compiled(cfg.device))
        return tb_fail(err, TB_ERR_UNSUPPORTED,
                       "this trainbench was built without %s support (rebuild with "
                       "-DTB_CUDA=ON on a machine with the CUDA toolkit)",
                       tb_device_name(cfg.device));
    tb_backend *be = calloc(1, sizeof *be);
    if (!be) return tb_fail(err, TB_ERR_NOMEM, "cannot allocate a backend");
    tb_status st;
    if (cfg.device == TB_DEVICE_CPU) {
        st = tb_cpu_backend_init(be, &cfg, err);
    } else {
#ifdef TB_WITH_CUDA
        st = tb_cuda_backend_init(be, &cfg, err);
#else
        st = TB_ERR_INTERNAL;
#endif
    }
    if (st != TB_OK) {
        free(be);
        return st;
    }
    *out = be;
    return TB_OK;
}

void tb_backend_destroy(tb_backend *be)
{
    if (!be) return;
    if (be->destroy) be->destroy(be);
    free(be);
}

tb_device tb_backend_device(const tb_backend *be) { return be->device; }
const char *tb_backend_name(const tb_backend *be) { return be->name; }
uint64_t tb_backend_gemm_flops(const tb_backend *be) { return be->gemm_flops; }
int tb_backend_threads(const tb_backend *be) { return be->threads; }
const char *tb_backend_describe(const tb_backend *be) { return be->description; }
void *tb_backend_alloc(tb_backend *be, size_t bytes) { return be->ops.alloc(be, bytes); }
void tb_backend_free(tb_backend *be, void *ptr) { if (ptr) be->ops.free(be, ptr); }
void tb_backend_sync(tb_backend *be) { be->ops.sync(be); }

void tb_backend_upload(tb_backend *be, void *dst, const void *src, size_t bytes)
{
    be->ops.upload(be, dst, src, bytes);
}

void tb_backend_download(tb_backend *be, void *dst, const void *src, size_t bytes)
{
    be->ops.download(be, dst, src, bytes);
}

tb_status tb_backend_check(tb_backend *be, tb_error *err)
{
    return be->ops.status ? be->ops.status(be, err) : TB_OK;
}

tb_status tb_backend_capture_begin(tb_backend *be, tb_error *err)
{
    if (!be->ops.capture_begin)
        return tb_fail(err, TB_ERR_UNSUPPORTED, "the %s backend has no graph capture", be->name);
    return be->ops.capture_begin(be, err);
}

tb_status tb_backend_capture_end(tb_backend *be, tb_error *err)
{
    if (!be->ops.capture_end)
        return tb_fail(err, TB_ERR_UNSUPPORTED, "the %s backend has no graph capture", be->name);
    return be->ops.capture_end(be, err);
}

tb_status tb_backend_replay(tb_backend *be, tb_error *err)
{
    if (!be->ops.replay)
        return tb_fail(err, TB_ERR_UNSUPPORTED, "the %s backend has no graph replay", be->name);
    return be->ops.replay(be, err);
}
