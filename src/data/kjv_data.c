/* kjv_data.c: the King James Bible (Debian bible-kjv-text, read with the bible-kjv program)
 * as character-level language-model examples.
 *
 * `bible -p DIR -f "Gen1:1-Rev22:21"` prints one verse per line, "Ge1:1 In the beginning...";
 * all 31,102 of them, or the data (bible.data and its concordance bible.data.conc) is corrupt
 * or incomplete. The cache keeps the verse texts (reference dropped), one per line, as
 * characters. An example is a window of context + 1 characters: the input is the first
 * `context`, the target the same shifted by one. Windows start every `context` characters;
 * every 20th window is the official test set (fixed). */
#include "data/path_impl.h"
#include "data/source.h"
#include "data/token_cache.h"
#include "trainbench/textfile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define KJV_DEFAULT_DIR "/usr/lib"
#define KJV_CACHE_FILE "kjv-chars.tbcache"
#define KJV_KIND 1
#define KJV_MISSING                                                                              \
    "the King James Bible is not installed: install the Debian packages bible-kjv-text and "     \
    "bible-kjv (apt-get install bible-kjv-text bible-kjv)"
#define KJV_VERSES 31102 /* Gen1:1-Rev22:21 */
/* the fix for data files that are there but damaged */
#define KJV_REINSTALL                                                                            \
    "the Debian package bible-kjv-text installs them in " KJV_DEFAULT_DIR                       \
    ": apt-get install --reinstall bible-kjv-text"

typedef struct kjv_ctx {
    const char *dir;
} kjv_ctx;

/* Starts `bible -p . -f Gen1:1-Rev22:21` in dir, with no shell (a path with a space or shell
 * characters is just a path): its stdout is *out, its stderr goes to errf. The child exits
 * 126 when it cannot enter dir, 127 when there is no `bible`. */
static tb_status kjv_spawn(const char *dir, FILE *errf, pid_t *pid, FILE **out, tb_error *err)
{
    int fd[2];
    if (pipe(fd) != 0) return tb_fail(err, TB_ERR_IO, "cannot run `bible`: no pipe");
    *pid = fork();
    if (*pid < 0) {
        close(fd[0]);
        close(fd[1]);
        return tb_fail(err, TB_ERR_IO, "cannot run `bible`: cannot fork");
    }
    if (*pid == 0) {
        dup2(fd[1], STDOUT_FILENO);
        dup2(fileno(errf), STDERR_FILENO);
        close(fd[0]);
        close(fd[1]);
        if (chdir(dir) != 0) _exit(126);
        execlp("bible", "bible", "-p", ".", "-f", "Gen1:1-Rev22:21", (char *)NULL);
        _exit(127);
    }
    close(fd[1]);
    if (!(*out = fdopen(fd[0], "r"))) {
        close(fd[0]);
        waitpid(*pid, NULL, 0);
        return tb_fail(err, TB_ERR_NOMEM, "cannot read `bible`'s output");
    }
    return TB_OK;
}

/* The first line of what `bible` wrote to errf, in buf ("" when nothing). */
static void kjv_stderr(FILE *errf, char *buf, size_t cap)
{
    buf[0] = '\0';
    rewind(errf);
    if (!fgets(buf, (int)cap, errf)) buf[0] = '\0';
    buf[strcspn(buf, "\r\n")] = '\0';
}

static tb_status kjv_build(void *p, tb_token_cache *out, tb_error *err)
{
    const kjv_ctx *ctx = p;
    /* without its concordance `bible` prints most verses, then crashes; a FIFO would block it
     * for ever */
    static const char *const files[2] = {"bible.data", "bible.data.conc"};
    for (int i = 0; i < 2; i++) {
        char path[1100];
        struct stat sb;
        snprintf(path, sizeof path, "%.*s/%s", tb_dir_len(ctx->dir), ctx->dir, files[i]);
        if (stat(path, &sb) != 0)
            return tb_fail(err, TB_ERR_FORMAT,
                           "the King James Bible data in %s is incomplete: bible.data is there "
                           "but bible.data.conc is missing (%s)",
                           ctx->dir, KJV_REINSTALL);
        if (!S_ISREG(sb.st_mode))
            return tb_fail(err, TB_ERR_IO, "%s is %s, not a regular file (%s)", path,
                           tb_file_kind(sb.st_mode), KJV_REINSTALL);
    }
    FILE *errf = tmpfile(), *f = NULL;
    if (!errf) return tb_fail(err, TB_ERR_IO, "cannot run `bible`: no temporary file");
    pid_t pid = -1;
    tb_status st = kjv_spawn(ctx->dir, errf, &pid, &f, err);
    if (st != TB_OK) {
        fclose(errf);
        return st;
    }
    size_t cap = 1 << 23, len = 0;
    unsigned char *text = malloc(cap);
    char line[8192];
    int64_t verses = 0;
    while (text && fgets(line, sizeof line, f)) {
        char *body = line, *sp = strchr(line, ' ');
        if (sp && memchr(line, ':', (size_t)(sp - line))) body = sp + 1; /* drop "Ge1:1 " */
        else if (line[0] == '\n') continue;
        size_t n = strlen(body);
        while (n && (body[n - 1] == '\n' || body[n - 1] == '\r' || body[n - 1] == ' ')) n--;
        if (len + n + 1 > cap) {
            unsigned char *t = realloc(text, cap *= 2);
            if (!t) {
                free(text);
                text = NULL;
                break;
            }
            text = t;
        }
        memcpy(text + len, body, n);
        len += n;
        text[len++] = '\n';
        verses++;
    }
    fclose(f);
    int rc;
    if (waitpid(pid, &rc, 0) != pid) rc = -1;
    char said[256];
    kjv_stderr(errf, said, sizeof said);
    fclose(errf);
    if (!text) return tb_fail(err, TB_ERR_NOMEM, "out of memory reading the Bible");
    if (rc != -1 && WIFEXITED(rc) && WEXITSTATUS(rc) == 127) { /* no `bible` */
        free(text);
        return tb_fail(err, TB_ERR_MISSING, "cannot run `bible`: %s", KJV_MISSING);
    }
    if (rc != -1 && WIFEXITED(rc) && WEXITSTATUS(rc) == 126) {
        free(text);
        return tb_fail(err, TB_ERR_MISSING, "cannot enter the data directory %s", ctx->dir);
    }
    if (rc != 0 || verses != KJV_VERSES) {
        /* the files are there (the signature found bible.data, and the concordance is there):
         * reading them failed, so they are damaged, not missing */
        char how[64] = "";
        if (rc == -1) snprintf(how, sizeof how, " and could not be waited for");
        else if (WIFSIGNALED(rc)) snprintf(how, sizeof how, " and was killed by signal %d",
                                           WTERMSIG(rc));
        else if (WIFEXITED(rc) && WEXITSTATUS(rc) != 0)
            snprintf(how, sizeof how, " and exited with status %d", WEXITSTATUS(rc));
        free(text);
        return tb_fail(err, TB_ERR_FORMAT,
                       "the King James Bible data in %s (bible.data, bible.data.conc) is corrupt "
                       "or incomplete: `bible` printed %lld of the %d verses%s%s%s (%s)",
                       ctx->dir, (long long)verses, KJV_VERSES, how, said[0] ? ": " : "", said,
                       KJV_REINSTALL);
    }
    int map[256];
    int64_t n_vocab = 0;
    for (int c = 0; c < 256; c++) map[c] = -1;
    for (size_t i = 0; i < len; i++) map[text[i]] = 0;
    out->vocab_blob = malloc(2 * 256);
    out->tokens = malloc(len * sizeof(int32_t));
    out->segments = malloc(sizeof(int64_t));
    if (!out->vocab_blob || !out->tokens || !out->segments) {
        free(text);
        return tb_fail(err, TB_ERR_NOMEM, "out of memory for the Bible's cache");
    }
    for (int c = 1; c < 256; c++)
        if (map[c] == 0) {
            out->vocab_blob[2 * n_vocab] = (char)c;
            out->vocab_blob[2 * n_vocab + 1] = '\0';
            map[c] = (int)n_vocab++;
        }
    for (size_t i = 0; i < len; i++) out->tokens[i] = map[text[i]];
    free(text);
    out->n_vocab = n_vocab;
    out->vocab_bytes = 2 * n_vocab;
    out->n_tokens = (int64_t)len;
    out->segments[0] = 0;
    out->n_segments = 1;
    return TB_OK;
}

/* id: the workload the data is for (named in the command that rebuilds a corrupt cache). */
static tb_status kjv_obtain(const char *data_dir, const char *cache_dir, const char *id,
                            bool force, tb_prepare_report *rep, tb_token_cache *out,
                            tb_error *err)
{
    kjv_ctx ctx = {.dir = data_dir ? data_dir : KJV_DEFAULT_DIR};
    char path[1024];
    snprintf(path, sizeof path, "%.*s/bible.data", tb_dir_len(ctx.dir), ctx.dir);
    const char *paths[1] = {path};
    char hint[512] = KJV_MISSING;
    if (data_dir) /* a directory the user chose */
        snprintf(hint, sizeof hint, "the King James Bible is not in the data directory %s (the "
                 "Debian packages bible-kjv-text and bible-kjv install bible.data in "
                 KJV_DEFAULT_DIR ")", ctx.dir);
    uint64_t sig;
    tb_status st = tb_source_signature(paths, 1, &sig, hint, err);
    if (st != TB_OK) return st;
    tb_token_cache_where w = {.cache_dir = cache_dir, .file = KJV_CACHE_FILE, .kind = KJV_KIND,
                              .workload = id, .data_dir = data_dir};
    return tb_token_cache_obtain(&w, sig, force, rep, kjv_build, &ctx, out, err);
}

tb_status tb_kjv_prepare(const char *data_dir, const char *cache_dir, bool force,
                         tb_prepare_report *report, tb_error *err)
{
    tb_token_cache c;
    tb_status st = kjv_obtain(data_dir, cache_dir, NULL, force, report, &c, err);
    if (st == TB_OK) tb_token_cache_free(&c);
    return st;
}

typedef struct kjv_data {
    tb_token_cache c;
    int64_t *starts; /* per example id */
    int context;
} kjv_data;

static void kjv_free(void *p)
{
    kjv_data *d = p;
    if (!d) return;
    tb_token_cache_free(&d->c);
    free(d->starts);
    free(d);
}

static void kjv_read(const void *p, int64_t id, void *x, void *y)
{
    const kjv_data *d = p;
    const int32_t *t = d->c.tokens + d->starts[id];
    memcpy(x, t, (size_t)d->context * sizeof(int32_t));
    memcpy(y, t + 1, (size_t)d->context * sizeof(int32_t));
}

tb_status tb_kjv_source_load(const char *data_dir, const char *cache_dir, const char *workload,
                             int context, tb_example_source *out, tb_error *err)
{
    memset(out, 0, sizeof *out);
    kjv_data *d = calloc(1, sizeof *d);
    if (!d) return tb_fail(err, TB_ERR_NOMEM, "cannot allocate the Bible");
    d->context = context;
    tb_status st = kjv_obtain(data_dir, cache_dir, workload, false, NULL, &d->c, err);
    int64_t windows = st == TB_OK ? (d->c.n_tokens - 1) / context : 0;
    if (st == TB_OK && !(d->starts = malloc((size_t)windows * sizeof *d->starts)))
        st = tb_fail(err, TB_ERR_NOMEM, "out of memory for the Bible's windows");
    if (st != TB_OK) {
        kjv_free(d);
        return st;
    }
    int64_t k = 0;
    for (int pass = 0; pass < 2; pass++) /* training windows first, then every 20th (test) */
        for (int64_t w = 0; w < windows; w++)
            if ((w % 20 == 19) == (pass == 1)) d->starts[k++] = w * context;
    *out = (tb_example_source){
        .n = windows,
        .n_official_train = windows - windows / 20,
        .classes = (int)d->c.n_vocab,
        .layout = {.x_dtype = TB_I32, .x_ndim = 1, .x_shape = {context}, .y_dtype = TB_I32,
                   .y_ndim = 1, .y_shape = {context}},
        .read = kjv_read,
        .data = d,
        .free_data = kjv_free,
    };
    return TB_OK;
}
