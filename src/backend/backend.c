/* backend.c: the backend registry. The only file that knows which backends were compiled. */
#include "backend/backend_impl.h"

#include <stdlib.h>
#include <string.h>

tb_status tb_device_parse(const char *name, tb_device *out, tb_error *err)
{
    if (!name || !out)
        return tb_fail(err, TB_ERR_INVALID, "device_parse: %s is NULL", name ? "out" : "name");
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
    if (!name || !out)
        return tb_fail(err, TB_ERR_INVALID, "precision_parse: %s is NULL", name ? "out" : "name");
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

/* gemm_ep for a backend without a fused one, from its other entries: C starts as the bias in
 * every row (or zero) and the product is added to it, then the residual is added and the
 * activation applied, each a pass over C. */
void tb_backend_gemm_ep_by_parts(tb_backend *be, bool ta, bool tb, int m, int n, int k,
                                 const float *a, int lda, const float *b, int ldb,
                                 const tb_gemm_epilogue *ep, float *c, int ldc)
{
    const int64_t shape[2] = {m, n}, c_stride[2] = {ldc, 1};
    float beta = 0.0f;
    if (ep->bias) {
        const int64_t bias_stride[2] = {0, 1};
        be->ops.strided_copy(be, 2, shape, c, c_stride, ep->bias, bias_stride, false);
        beta = 1.0f;
    }
    be->ops.gemm(be, ta, tb, m, n, k, 1.0f, a, lda, b, ldb, beta, c, ldc);
    if (ep->residual) be->ops.strided_copy(be, 2, shape, c, c_stride, ep->residual, c_stride, true);
    if (ep->mode == TB_GEMM_ACT_NONE) return;
    /* the element-wise entries take contiguous vectors: row by row unless C is contiguous */
    const int rows = ldc == n ? 1 : m;
    const int64_t len = ldc == n ? (int64_t)m * n : n;
    for (int r = 0; r < rows; r++) {
        const int64_t off = (int64_t)r * ldc;
        if (ep->mode == TB_GEMM_ACT_FWD)
            be->ops.act_fwd(be, ep->act, len, c + off, ep->act_y + off);
        else
            be->ops.act_bwd(be, ep->act, len, ep->act_x + off, ep->act_y ? ep->act_y + off : NULL,
                            c + off, c + off, false);
    }
}

/* linear_wgrad for a backend without a fused one: the product, then the bias gradient. */
static void linear_wgrad_by_parts(tb_backend *be, int rows, int in, int out, const float *dy,
                                  const float *x, float *dw, bool dw_acc, float *db, bool db_acc)
{
    be->ops.gemm(be, true, false, out, in, rows, 1.0f, dy, out, x, in, dw_acc ? 1.0f : 0.0f, dw,
                 in);
    if (!db) return;
    if (!db_acc) be->ops.fill(be, db, out, 0.0f); /* bias_grad adds */
    be->ops.bias_grad(be, rows, out, dy, db);
}

tb_status tb_backend_create(const tb_backend_config *config, tb_backend **out, tb_error *err)
{
    if (!out) return tb_fail(err, TB_ERR_INVALID, "backend_create: out is NULL");
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
    if (!be->ops.gemm_ep) be->ops.gemm_ep = tb_backend_gemm_ep_by_parts;
    if (!be->ops.linear_wgrad) be->ops.linear_wgrad = linear_wgrad_by_parts;
    *out = be;
    return TB_OK;
}

static void step_block_release(tb_backend *be)
{
    tb_step_block *b = &be->step;
    if (b->device) be->ops.free(be, b->device);
    if (b->host && b->pinned) be->ops.host_free(be, b->host);
    else free(b->host);
    memset(b, 0, sizeof *b);
}

void tb_backend_destroy(tb_backend *be)
{
    if (!be) return;
    step_block_release(be);
    tb_product_prof_free(be);
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

/* TB_ERR_INVALID naming the call when be is NULL. */
static tb_status no_backend(const char *call, tb_error *err)
{
    return tb_fail(err, TB_ERR_INVALID, "%s: backend is NULL", call);
}

tb_status tb_backend_check(tb_backend *be, tb_error *err)
{
    if (!be) return no_backend("backend_check", err);
    return be->ops.status ? be->ops.status(be, err) : TB_OK;
}

bool tb_backend_has_graphs(const tb_backend *be) { return be && be->ops.capture_begin; }

tb_status tb_backend_capture_begin(tb_backend *be, tb_error *err)
{
    if (!be) return no_backend("capture_begin", err);
    if (!be->ops.capture_begin)
        return tb_fail(err, TB_ERR_UNSUPPORTED, "the %s backend has no graph capture", be->name);
    if (be->capturing) return tb_fail(err, TB_ERR_INVALID, "a graph capture is already open");
    tb_status st = be->ops.capture_begin(be, err);
    if (st == TB_OK) be->capturing = true;
    return st;
}

tb_status tb_backend_capture_end(tb_backend *be, tb_error *err)
{
    if (!be) return no_backend("capture_end", err);
    if (!be->ops.capture_end)
        return tb_fail(err, TB_ERR_UNSUPPORTED, "the %s backend has no graph capture", be->name);
    if (!be->capturing) return tb_fail(err, TB_ERR_INVALID, "no graph capture is open");
    tb_status st = be->ops.capture_end(be, err);
    be->capturing = false;
    return st;
}

tb_status tb_backend_replay(tb_backend *be, tb_error *err)
{
    if (!be) return no_backend("replay", err);
    if (!be->ops.replay)
        return tb_fail(err, TB_ERR_UNSUPPORTED, "the %s backend has no graph replay", be->name);
    return be->ops.replay(be, err);
}

bool tb_backend_capturing(const tb_backend *be) { return be->capturing; }

/* ---- the step block: 64-byte slots, first fit; a device mirror where graphs exist ---------- */

static bool step_block_create(tb_backend *be)
{
    tb_step_block *b = &be->step;
    if (be->ops.host_alloc) {
        b->host = be->ops.host_alloc(be, TB_STEP_BLOCK_BYTES);
        b->pinned = b->host != NULL;
    }
    if (!b->host) b->host = aligned_alloc(TB_STEP_SLOT_BYTES, TB_STEP_BLOCK_BYTES);
    if (!b->host) return false;
    memset(b->host, 0, TB_STEP_BLOCK_BYTES);
    /* devices with graphs keep a mirror that captured kernels read */
    if (be->ops.capture_begin) {
        b->device = be->ops.alloc(be, TB_STEP_BLOCK_BYTES);
        if (!b->device) {
            step_block_release(be);
            return false;
        }
    }
    return true;
}

void *tb_backend_step_alloc(tb_backend *be, size_t bytes)
{
    tb_step_block *b = &be->step;
    if (!b->host && !step_block_create(be)) return NULL;
    size_t need = (bytes ? bytes : 1) + TB_STEP_SLOT_BYTES - 1;
    need /= TB_STEP_SLOT_BYTES;
    if (need > TB_STEP_SLOTS) return NULL;
    for (size_t i = 0; i + need <= TB_STEP_SLOTS; i++) {
        size_t j = 0;
        while (j < need && !b->used[i + j]) j++;
        if (j < need) {
            i += j; /* the slot i + j is taken: continue after it */
            continue;
        }
        for (j = 0; j < need; j++) b->used[i + j] = true;
        b->span[i] = (uint16_t)need;
        size_t end = (i + need) * TB_STEP_SLOT_BYTES;
        if (end > b->high) b->high = end;
        unsigned char *p = b->host + i * TB_STEP_SLOT_BYTES;
        memset(p, 0, need * TB_STEP_SLOT_BYTES);
        return p;
    }
    return NULL;
}

void tb_backend_step_free(tb_backend *be, void *ptr)
{
    tb_step_block *b = &be->step;
    if (!ptr || !b->host) return;
    size_t off = (size_t)((unsigned char *)ptr - b->host), i = off / TB_STEP_SLOT_BYTES;
    if (off >= TB_STEP_BLOCK_BYTES || off % TB_STEP_SLOT_BYTES || !b->span[i]) return;
    for (size_t j = 0; j < b->span[i]; j++) b->used[i + j] = false;
    b->span[i] = 0;
    size_t high = 0; /* the highest slot still in use bounds what uploads copy */
    for (size_t j = 0; j < TB_STEP_SLOTS; j++)
        if (b->used[j]) high = (j + 1) * TB_STEP_SLOT_BYTES;
    b->high = high;
}

tb_status tb_backend_step_upload(tb_backend *be, tb_error *err)
{
    if (!be) return no_backend("step_upload", err);
    if (be->capturing)
        return tb_fail(err, TB_ERR_INVALID,
                       "the step block cannot be uploaded inside a graph capture (upload it "
                       "before the replay)");
    tb_step_block *b = &be->step;
    if (!b->device || !b->high) return TB_OK;
    be->ops.upload(be, b->device, b->host, b->high);
    return tb_backend_check(be, err);
}
