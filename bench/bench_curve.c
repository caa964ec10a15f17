/* bench_curve.c: the training curve of one run, as CSV on stdout.
 *
 *   bench_curve --workload fmnist_autoencoder --algorithm kfac --epochs 2 --hp learning_rate=0.01
 *
 * One line about every --every seconds of timed training, plus one per validation evaluation:
 * step, epoch (fractional), timed seconds, the training loss of that step (noisy: smooth it
 * over lines), validation metric (empty between evaluations). Used by bench/curvature.py. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trainbench/trainbench.h"

typedef struct curve {
    int64_t steps_per_epoch;
} curve;

static void on_progress(void *user, const tb_train_progress *p)
{
    const curve *c = user;
    printf("%lld,%.4f,%.3f,%.6f,", (long long)p->step,
           (double)p->step / (double)c->steps_per_epoch, p->elapsed_s, p->loss);
    if (p->validation) printf("%.6f", p->validation->metric);
    printf("\n");
    fflush(stdout);
}

int main(int argc, char **argv)
{
    tb_run_config cfg = tb_run_config_default();
    cfg.model.workload = "fmnist_autoencoder";
    cfg.model.algorithm = "kfac";
    cfg.length.epochs = 1;
    cfg.eval.during = 4;
    cfg.length.schedule = TB_SCHEDULE_CONSTANT;
    cfg.eval.examples = 2000;
    tb_train_observers obs = {.progress_every_s = 1.0};
    struct option opts[] = {
        {"workload", required_argument, 0, 'w'}, {"algorithm", required_argument, 0, 'a'},
        {"hp", required_argument, 0, 'p'},       {"epochs", required_argument, 0, 'e'},
        {"every", required_argument, 0, 'v'},    {"evals", required_argument, 0, 'n'},
        {"threads", required_argument, 0, 't'},  {"seed", required_argument, 0, 's'},
        {0, 0, 0, 0},
    };
    int c;
    tb_error err = {0};
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'w': cfg.model.workload = optarg; break;
        case 'a': cfg.model.algorithm = optarg; break;
        case 'p':
            if (tb_hparams_parse_assignment(&cfg.model.hparams, optarg, &err) != TB_OK) {
                fprintf(stderr, "bench_curve: %s\n", err.message);
                return 2;
            }
            break;
        case 'e': cfg.length.epochs = atof(optarg); break;
        case 'v': obs.progress_every_s = atof(optarg); break;
        case 'n': cfg.eval.during = atoi(optarg); break;
        case 't': cfg.model.backend.threads = atoi(optarg); break;
        case 's': tb_run_config_seed_all(&cfg, strtoull(optarg, NULL, 10)); break;
        default:
            fprintf(stderr, "usage: bench_curve [--workload ID] [--algorithm NAME] "
                            "[--hp NAME=VALUE]... [--epochs X] [--every S] [--evals N]\n");
            return 2;
        }
    }
    /* steps per epoch, for the fractional epoch column */
    tb_backend *be;
    tb_workload *wl;
    tb_backend_config bc = {.device = TB_DEVICE_CPU, .threads = 1};
    if (tb_backend_create(&bc, &be, &err) != TB_OK ||
        tb_workload_create(cfg.model.workload, be, NULL, &wl, &err) != TB_OK) {
        fprintf(stderr, "bench_curve: %s\n", err.message);
        return 1;
    }
    curve cv = {0};
    int batch = tb_workload_get_info(wl)->default_batch_size;
    cv.steps_per_epoch = tb_workload_size(wl, TB_SPLIT_TRAIN) / batch;
    tb_workload_destroy(wl);
    tb_backend_destroy(be);
    obs.progress = on_progress;
    obs.progress_user = &cv;
    printf("step,epoch,time_s,train_loss,validation_metric\n");
    tb_train_result r;
    tb_status st = tb_train(&cfg, &obs, &r, &err);
    if (st != TB_OK) {
        fprintf(stderr, "bench_curve: %s\n", err.message);
        return 1;
    }
    printf("# final validation %.6f test %.6f after %.1f s, %lld steps\n", r.validation.metric,
           r.test.metric, r.train_time_s, (long long)r.steps);
    return 0;
}
