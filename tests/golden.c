/* golden.c: the fixture reader and comparisons of golden.h (format described there). */
#include "golden.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define GOLDEN_DIR TB_SOURCE_DIR "/tests/golden"
#define GOLDEN_HINT "regenerate with: /usr/bin/python3 tests/golden/make_golden.py"

bool tb_golden_available(void)
{
    struct stat st;
    if (stat(GOLDEN_DIR, &st) == 0 && S_ISDIR(st.st_mode)) return true;
    fprintf(stderr, "golden: fixture directory %s is missing; %s\n", GOLDEN_DIR, GOLDEN_HINT);
    return false;
}

/* ---- little-endian decoding, independent of the host's byte order ------------------------ */

static bool read_bytes(FILE *f, void *buf, size_t n) { return fread(buf, 1, n, f) == n; }

static bool read_u32(FILE *f, uint32_t *out)
{
    unsigned char b[4];
    if (!read_bytes(f, b, 4)) return false;
    *out = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
    return true;
}

static bool read_i64(FILE *f, int64_t *out)
{
    uint32_t lo, hi;
    if (!read_u32(f, &lo) || !read_u32(f, &hi)) return false;
    *out = (int64_t)((uint64_t)hi << 32 | lo);
    return true;
}

static bool read_tensor(FILE *f, tb_golden_tensor *t)
{
    uint32_t len, dtype, ndim;
    if (!read_u32(f, &len) || len >= sizeof t->name || !read_bytes(f, t->name, len)) return false;
    t->name[len] = '\0';
    if (!read_u32(f, &dtype) || dtype > 1 || !read_u32(f, &ndim) || ndim > TB_MAX_DIMS)
        return false;
    t->dtype = dtype == 0 ? TB_F32 : TB_I32;
    t->ndim = (int)ndim;
    t->numel = 1;
    for (int d = 0; d < t->ndim; d++) {
        if (!read_i64(f, &t->shape[d]) || t->shape[d] < 0 || t->shape[d] > (1 << 24))
            return false;
        t->numel *= t->shape[d];
    }
    if (t->numel > (1 << 24)) return false;
    uint32_t *words = malloc((size_t)(t->numel ? t->numel : 1) * 4);
    t->data = words;
    if (!words) return false;
    for (int64_t i = 0; i < t->numel; i++)
        if (!read_u32(f, &words[i])) return false;
    return true;
}

bool tb_golden_load(const char *name, tb_golden *g)
{
    memset(g, 0, sizeof *g);
    snprintf(g->name, sizeof g->name, "%s", name);
    char path[1024];
    snprintf(path, sizeof path, "%s/%s.bin", GOLDEN_DIR, name);
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "golden %s: cannot open %s (%s); %s\n", name, path, strerror(errno),
                GOLDEN_HINT);
        return false;
    }
    char magic[8];
    uint32_t count = 0;
    bool ok = read_bytes(f, magic, 8) && memcmp(magic, "TBGOLD01", 8) == 0 &&
              read_u32(f, &count) && count < 1000;
    if (ok) {
        g->tensors = calloc(count ? count : 1, sizeof *g->tensors);
        ok = g->tensors != NULL;
    }
    for (uint32_t i = 0; ok && i < count; i++) {
        ok = read_tensor(f, &g->tensors[i]);
        g->count = (int)i + 1;
    }
    fclose(f);
    if (!ok) {
        fprintf(stderr, "golden %s: %s is truncated or not a fixture file; %s\n", name, path,
                GOLDEN_HINT);
        tb_golden_free(g);
    }
    return ok;
}

void tb_golden_free(tb_golden *g)
{
    for (int i = 0; i < g->count; i++) free(g->tensors[i].data);
    free(g->tensors);
    g->tensors = NULL;
    g->count = 0;
}

const tb_golden_tensor *tb_golden_get(const tb_golden *g, const char *name)
{
    for (int i = 0; i < g->count; i++)
        if (strcmp(g->tensors[i].name, name) == 0) return &g->tensors[i];
    fprintf(stderr, "golden %s: the fixture has no tensor '%s'; %s\n", g->name, name,
            GOLDEN_HINT);
    return NULL;
}

double tb_golden_scalar(const tb_golden *g, const char *name)
{
    const tb_golden_tensor *t = tb_golden_get(g, name);
    if (!t || t->numel != 1) return 0.0;
    return t->dtype == TB_F32 ? (double)*(const float *)t->data
                              : (double)*(const int32_t *)t->data;
}

tb_var *tb_golden_var(tb_tape *tape, const tb_golden *g, const char *name, bool requires_grad)
{
    const tb_golden_tensor *t = tb_golden_get(g, name);
    if (!t) return NULL;
    tb_var *v = tb_tape_new_var(tape, t->dtype, t->ndim, t->shape, requires_grad);
    if (!v) return NULL;
    tb_tensor_upload(&v->value, t->data, NULL);
    return v;
}

bool tb_golden_upload(const tb_golden *g, const char *name, tb_tensor *dst)
{
    const tb_golden_tensor *t = tb_golden_get(g, name);
    if (!t || t->numel != tb_tensor_numel(dst) || t->dtype != dst->dtype) {
        if (t)
            fprintf(stderr, "golden %s: '%s' has %lld elements, the destination %lld\n", g->name,
                    name, (long long)t->numel, (long long)tb_tensor_numel(dst));
        return false;
    }
    return tb_tensor_upload(dst, t->data, NULL) == TB_OK;
}

bool tb_golden_compare(const tb_golden *g, const char *name, const tb_tensor *got)
{
    const tb_golden_tensor *ref = tb_golden_get(g, name);
    if (!ref) return tb_test_check(false, name, __FILE__, __LINE__);
    if (!got || !got->data) {
        fprintf(stderr, "golden %s: %s: trainbench produced nothing (no gradient arrived?)\n",
                g->name, name);
        return tb_test_check(false, name, __FILE__, __LINE__);
    }
    bool same = got->ndim == ref->ndim;
    for (int d = 0; same && d < ref->ndim; d++) same = got->shape[d] == ref->shape[d];
    if (!same) {
        char s[96];
        fprintf(stderr, "golden %s: %s: shape %s differs from the reference's (%d dims)\n",
                g->name, name, tb_shape_str(got, s, sizeof s), ref->ndim);
        return tb_test_check(false, name, __FILE__, __LINE__);
    }
    int64_t n = ref->numel;
    float *host = malloc((size_t)(n ? n : 1) * sizeof(float));
    tb_tensor_download(got, host, NULL);
    const float *r = ref->data;
    double max_diff = 0, worst_excess = 0;
    int64_t worst = -1;
    for (int64_t i = 0; i < n; i++) {
        double diff = fabs((double)host[i] - (double)r[i]);
        if (!(diff == diff)) diff = INFINITY; /* NaN fails */
        double excess = diff - (TB_GOLDEN_ATOL + TB_GOLDEN_RTOL * fabs((double)r[i]));
        if (diff > max_diff) max_diff = diff;
        if (excess > 0 && (worst < 0 || excess > worst_excess)) {
            worst = i;
            worst_excess = excess;
        }
    }
    if (worst >= 0)
        fprintf(stderr,
                "golden %s: %s differs from torch: element %lld is %.8g, reference %.8g "
                "(max abs diff %.3g; tolerance %.0e + %.0e |ref|)\n",
                g->name, name, (long long)worst, host[worst], r[worst], max_diff,
                (double)TB_GOLDEN_ATOL, (double)TB_GOLDEN_RTOL);
    else if (getenv("TB_GOLDEN_VERBOSE"))
        printf("golden %s: %s max abs diff %.3g\n", g->name, name, max_diff);
    free(host);
    return tb_test_check(worst < 0, name, __FILE__, __LINE__);
}

tb_var *tb_golden_dot(tb_tape *tape, tb_var *y, tb_var *dy)
{
    if (!y || !dy) return NULL;
    int64_t row[2] = {1, -1}, col[2] = {-1, 1};
    tb_var *a = tb_op_reshape(tape, y, 2, row);
    tb_var *b = tb_op_reshape(tape, dy, 2, col);
    return tb_op_matmul(tape, a, b, false);
}

tb_tape *tb_golden_begin(tb_backend *be, const char *name, tb_golden *g)
{
    if (!tb_golden_load(name, g)) {
        tb_test_check(false, name, __FILE__, __LINE__);
        return NULL;
    }
    tb_tape *tape = NULL;
    tb_error err = {0};
    if (tb_tape_create(be, &tape, &err) != TB_OK) {
        fprintf(stderr, "golden %s: cannot create a tape: %s\n", name, err.message);
        tb_test_check(false, name, __FILE__, __LINE__);
        tb_golden_free(g);
        return NULL;
    }
    return tape;
}

void tb_golden_end(tb_tape *tape, tb_golden *g)
{
    tb_tape_destroy(tape);
    tb_golden_free(g);
}

bool tb_golden_backward(const tb_golden *g, tb_tape *tape, tb_var *loss)
{
    if (loss && tb_tape_backward(tape, loss) == TB_OK) return true;
    fprintf(stderr, "golden %s: forward/backward failed: %s\n", g->name,
            tb_tape_status(tape) != TB_OK ? tb_tape_error(tape)->message : "no loss");
    return tb_test_check(false, g->name, __FILE__, __LINE__);
}

bool tb_golden_params_upload(const tb_golden *g, tb_params *params)
{
    bool ok = true;
    for (int i = 0; i < tb_params_count(params); i++) {
        tb_param *prm = tb_params_get(params, i);
        ok &= tb_golden_upload(g, prm->name, &prm->var.value);
    }
    return tb_test_check(ok, "parameters loaded", __FILE__, __LINE__);
}

bool tb_golden_params_compare(const tb_golden *g, tb_params *params)
{
    bool ok = true;
    for (int i = 0; i < tb_params_count(params); i++) {
        tb_param *prm = tb_params_get(params, i);
        char name[80];
        snprintf(name, sizeof name, "grad.%s", prm->name);
        ok &= tb_golden_compare(g, name, &prm->var.grad);
    }
    return ok;
}
