/* options.c: the options several commands share, each parsed by one rule in one place: the
 * data options (--data-dir, --cache-dir) of every command that loads data, the backend's
 * (--threads, --device, --precision), and the length and evaluation options of the commands
 * that train (train, variance, compare). */
#include "cli.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

const char *tb_cli_default_cache_dir(void)
{
    static char buf[1024];
    return tb_default_cache_dir(buf, sizeof buf) ? buf : NULL;
}

const char *tb_cli_cache_dir(const char *cmd, const char *given)
{
    const char *dir = given ? given : tb_cli_default_cache_dir();
    if (!dir)
        tb_cli_error("%s: no cache directory: neither HOME nor an absolute XDG_CACHE_HOME is "
                     "set: give --cache-dir DIR", cmd);
    return dir;
}

bool tb_cli_data_option(int c, tb_cli_data *d)
{
    if (c == TB_OPT_DATA_DIR) d->data_dir = optarg;
    else if (c == TB_OPT_CACHE_DIR) d->cache_dir = optarg;
    else return false;
    return true;
}

bool tb_cli_data_finish(const char *cmd, tb_cli_data *d)
{
    d->cache_dir = tb_cli_cache_dir(cmd, d->cache_dir);
    return d->cache_dir != NULL;
}

bool tb_cli_parse_threads(const char *text, int *out)
{
    long v;
    if (!tb_cli_parse_int("--threads", text, 0, TB_CLI_THREADS_MAX, &v)) return false;
    if (v < 1) {
        tb_cli_error("--threads: 0 threads cannot run anything: give 1 to %d, or leave "
                     "--threads out for all cores", TB_CLI_THREADS_MAX);
        return false;
    }
    *out = (int)v;
    return true;
}

/* Whether a library parser succeeded (st); prints "opt: <its message>" when not. */
static bool parsed(const char *opt, tb_status st, const tb_error *err)
{
    if (st != TB_OK) tb_cli_error("%s: %s", opt, err->message);
    return st == TB_OK;
}

bool tb_cli_parse_device(const char *text, tb_device *out)
{
    tb_error err = {0};
    return parsed("--device", tb_device_parse(text, out, &err), &err);
}

bool tb_cli_parse_eval_examples(const char *text, int64_t *out)
{
    long v;
    if (!tb_cli_parse_int("--eval-examples", text, 1, TB_CLI_EVAL_EXAMPLES_MAX, &v))
        return false;
    *out = v;
    return true;
}

/* One parsed value of a run option, for every config it applies to. */
typedef struct run_value {
    long l;
    double d;
    const char *s;
    tb_device device;
    tb_precision precision;
    tb_split_kind split;
} run_value;

static void apply(int c, const run_value *v, tb_run_config *t)
{
    switch (c) {
    case 'w': t->model.workload = v->s; break;
    case 'e': t->length.epochs = v->d; break;
    case TB_OPT_STEPS: t->length.max_steps = v->l; break;
    case 'b': t->data.batch_size = (int)v->l; break;
    case 't': t->model.backend.threads = (int)v->l; break;
    case TB_OPT_DEVICE: t->model.backend.device = v->device; break;
    case TB_OPT_PRECISION: t->model.backend.precision = v->precision; break;
    case TB_OPT_EVAL_EXAMPLES: t->eval.examples = v->l; break;
    case TB_OPT_SPLIT: t->data.source.split_kind = v->split; break;
    case TB_OPT_DROPOUT_RATE: t->data.source.dropout_rate = v->d; break;
    case TB_OPT_FULL_BATCH: t->data.full_batch = v->l; break;
    case TB_OPT_DATA_DIR: t->data.source.data_dir = v->s; break;
    case TB_OPT_CACHE_DIR: t->data.source.cache_dir = v->s; break;
    }
}

int tb_cli_run_option(int c, tb_run_config *const *cfgs, int n)
{
    run_value v = {.s = optarg};
    tb_error err = {0};
    int threads;
    int64_t examples;
    switch (c) {
    case 'w':
    case TB_OPT_DATA_DIR:
    case TB_OPT_CACHE_DIR: break;
    case 'e':
        if (!tb_cli_parse_double("--epochs", optarg, &v.d)) return 2;
        if (v.d <= 0) {
            tb_cli_error("--epochs: must be positive, got %s", optarg);
            return 2;
        }
        break;
    case TB_OPT_STEPS:
        if (!tb_cli_parse_int("--steps", optarg, 1, TB_RUN_MAX_STEPS, &v.l)) return 2;
        break;
    case 'b':
        if (!tb_cli_parse_int("--batch-size", optarg, 1, 1000000L, &v.l)) return 2;
        break;
    case 't':
        if (!tb_cli_parse_threads(optarg, &threads)) return 2;
        v.l = threads;
        break;
    case TB_OPT_DEVICE:
        if (!tb_cli_parse_device(optarg, &v.device)) return 2;
        break;
    case TB_OPT_PRECISION:
        if (!parsed("--precision", tb_precision_parse(optarg, &v.precision, &err), &err))
            return 2;
        break;
    case TB_OPT_EVAL_EXAMPLES:
        if (!tb_cli_parse_eval_examples(optarg, &examples)) return 2;
        v.l = (long)examples;
        break;
    case TB_OPT_SPLIT:
        if (!parsed("--split", tb_split_kind_parse(optarg, &v.split, &err), &err)) return 2;
        break;
    case TB_OPT_DROPOUT_RATE: /* the range is the workload's to check (it names the field) */
        if (!tb_cli_parse_double("--dropout-rate", optarg, &v.d)) return 2;
        break;
    case TB_OPT_FULL_BATCH: /* past the training split: the run says so, naming its size */
        if (!tb_cli_parse_int("--full-batch", optarg, 1, 1000000L, &v.l)) return 2;
        break;
    default: return 1;
    }
    for (int i = 0; i < n; i++) apply(c, &v, cfgs[i]);
    return 0;
}

bool tb_cli_submission_file(const char *name)
{
    size_t len = name ? strlen(name) : 0;
    return len && (strchr(name, '/') || (len > 3 && (strcmp(name + len - 3, ".py") == 0 ||
                                                     strcmp(name + len - 3, ".so") == 0)));
}

bool tb_cli_run_finish(const char *cmd, tb_run_config *const *cfgs, int n)
{
    for (int i = 0; i < n; i++) {
        const char *alg = cfgs[i]->model.algorithm;
        /* train and compare run one as the run core's update (tb_cli_train_file); variance
         * runs the registry's optimizers */
        if (tb_cli_submission_file(alg) && strcmp(cmd, "train") != 0 &&
            strcmp(cmd, "compare") != 0) {
            tb_cli_error("%s: '%s' is a submission file; %s runs the optimizers of the "
                         "registry (`trainbench algorithms`): run a submission with "
                         "`trainbench train -a %s`, `trainbench compare -A %s` or "
                         "`trainbench bench -s %s`", cmd, alg, cmd, alg, alg, alg);
            return false;
        }
        cfgs[i]->data.source.cache_dir = tb_cli_cache_dir(cmd, cfgs[i]->data.source.cache_dir);
        if (!cfgs[i]->data.source.cache_dir) return false;
    }
    return true;
}
