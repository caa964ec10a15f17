/* cmd_train.c: `trainbench train`: one run, progress on a terminal, a result at the end. */
#include "cli.h"
#include "train_file.h"
#include "train_sharpness.h"

#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const char train_usage[] =
    "usage: trainbench train [options]\n"
    "\n"
    "Trains one workload with one training algorithm, then evaluates it on the validation\n"
    "and test sets. Progress (step, loss, examples/s, ETA) is shown when stderr is a terminal.\n"
    "\n"
    "options:\n"
    "  -w, --workload ID         workload (default fmnist_mlp; see `trainbench workloads`)\n"
    "  -a, --algorithm NAME      training algorithm (default adamw; see `trainbench algorithms`)\n"
    "                            or a submission file: a .py defining AlgoPerf's functions,\n"
    "                            or a .so (docs/SUBMISSIONS.md), run in this process as a\n"
    "                            benchmark trial runs it, with the --hp values; it schedules\n"
    "                            its own learning rate (--schedule and --warmup do not\n"
    "                            apply); not with --dist, --cuda-graph or --sharpness-every\n"
    "  -p, --hp NAME=VALUE       set a hyperparameter of the algorithm (repeatable),\n"
    "                            e.g. --hp learning_rate=3e-4 --hp weight_decay=0\n"
    "      --lr VALUE            shorthand for --hp learning_rate=VALUE\n"
    "      --preset NAME         a published configuration: its algorithm and hyperparameters\n"
    "                            (--hp values win) and, for nadamw_self_tuning, its warmup\n"
    "                            (--schedule, --warmup win); algoperf_sf_adamw is AlgoPerf's\n"
    "                            self-tuning Schedule-Free AdamW (`trainbench algorithms`)\n"
    "  -e, --epochs X            length of the run in epochs (default 5, or with --budget\n"
    "                            none; may be fractional; at most 1e9 steps)\n"
    "      --steps N             length of the run in steps (overrides --epochs; 1 to 1e9)\n"
    "  -b, --batch-size N        examples per step (default: the workload's)\n"
    "      --full-batch N        full-batch training: a fixed subset of N training examples\n"
    "                            (drawn by the data-order seed), every step on all of it (an\n"
    "                            epoch is one step; no --batch-size, echoing or augmentation)\n"
    "      --schedule NAME       warmup_cosine (default), constant, linear_decay, polynomial\n"
    "                            (power 2) or step (x0.1 every third of the run); it spans\n"
    "                            the run's steps, or with --budget and neither --steps nor\n"
    "                            --epochs the workload's step hint (then holds its end)\n"
    "      --warmup X            linear warmup fraction of the schedule for every schedule\n"
    "                            but constant (default 0.05)\n"
    "      --evals N             validation evaluations during the run, evenly spaced\n"
    "                            (default 3; 0: none), then always the final one; at most\n"
    "                            one per step; none in a run ended by time: see --eval-period\n"
    "      --eval-examples N     evaluate N examples of each split, spread evenly over it\n"
    "                            (every split-size/N-th; default: all)\n"
    "  -s, --seed N              seed of every source of variation (default 0)\n"
    "      --seed-SOURCE N       seed of one source: SOURCE is init, data_order, dropout,\n"
    "                            augment, split or hparam (e.g. --seed-init 7)\n"
    TB_CLI_THREADS_HELP
    TB_CLI_DEVICE_HELP
    TB_CLI_PRECISION_HELP
    "      --cuda-graph          cuda only: after 2 eager warm-up steps, capture one whole\n"
    "                            step (forward, backward, update) as a CUDA graph and replay\n"
    "                            it; an error with --device cpu. lars, lamb, kfac, ekfac,\n"
    "                            shampoo, schedule_free_*, prodigy and mars have host-side\n"
    "                            work: they run eagerly and the result says why. Compiled,\n"
    "                            not yet run on a GPU\n"
    TB_CLI_DATA_HELP
    "      --split KIND          official (default) or bootstrap (out-of-bootstrap\n"
    "                            validation and test, stratified; varies with --seed-split)\n"
    "      --dropout-rate R      dropout_rate of the hidden layers, in [0, 1) (workloads\n"
    "                            with dropout: fmnist_*_dropout*, fmnist_mlp_projected:\n"
    "                            the rate of its projected noise)\n"
    "      --augment             random crop (padding 2) and horizontal flip (images; the\n"
    "                            autoencoder's target, the image, gets the same crop and flip)\n"
    "      --echo KIND           data echoing: none, example_before_augment (or example),\n"
    "                            example_after_augment, batch\n"
    "      --echo-factor X       mean copies per item (>= 1, may be fractional; needs an\n"
    "                            --echo other than none)\n"
    "      --shuffle-buffer N    examples mixed after echoing (default 0; at most the\n"
    "                            training examples, else refused)\n"
    "      --prefetch N          batches prepared ahead by the input thread (1 to 64,\n"
    "                            default 2; -1: no thread, upstream runs between steps)\n"
    "      --slow-upstream S     add S seconds of upstream work per fresh example; Nx: N\n"
    "                            times the step time per batch (the step measured first,\n"
    "                            as the benchmark times it: the delay is S = N x step /\n"
    "                            batch, printed and in the JSON)\n"
    "      --max-time S          stop after S seconds of timed training (S > 0; default:\n"
    "                            no time limit)\n"
    "      --eval-period S       also evaluate once S timed seconds have passed since the\n"
    "                            last evaluation (S > 0; default: off)\n"
    "      --budget              --max-time, --eval-period and --stop-at-target from the\n"
    "                            workload's calibrated budget, eval period and target;\n"
    "                            without --steps or --epochs the time ends the run and the\n"
    "                            schedule spans the workload's step hint (the steps a\n"
    "                            tuned baseline takes in the budget: docs/WORKLOADS.md)\n"
    "      --stop-at-target      stop once validation reaches the workload's target (it is\n"
    "                            calibrated on the whole validation split: with\n"
    "                            --eval-examples, a subset at the target is confirmed by an\n"
    "                            evaluation of the whole split, and only that one counts)\n"
    "      --profile             time every op's forward and backward and print where the\n"
    "                            training steps went (synchronises per op: slower run)\n"
    "      --sharpness-every N   after every N-th step, untimed: the sharpness lambda_1(H)\n"
    "                            and the preconditioned sharpness lambda_1(P^-1 H) (P: the\n"
    "                            optimizer's diagonal preconditioner at that step, epsilon\n"
    "                            and bias correction included) of the training loss on a\n"
    "                            fixed batch, beside the step's stability threshold (38/lr\n"
    "                            for adam at beta1 0.9; docs/CURVATURE.md). A line on stderr\n"
    "                            each, and every one in --json. Cost, K Lanczos steps per\n"
    "                            quantity: 2K gradient evaluations of the batch each, 4K\n"
    "                            per measurement (2K for sgd, momentum and nesterov, whose\n"
    "                            P is 1). Not for lars, lamb, kfac, ekfac, shampoo and\n"
    "                            the newer element-wise ones (no diagonal P derived)\n"
    "      --sharpness-iters K   Lanczos steps per quantity (1 to 256, default 20)\n"
    "      --sharpness-batch B   examples in the fixed batch, spread evenly over the\n"
    "                            training split (default: the run's batch size; with\n"
    "                            --full-batch N and B = N or none, the run's own subset)\n"
    "      --sharpness-fd-scale X\n"
    "                            relative step of the central differences: Hessian-vector\n"
    "                            products from gradients at theta +- r u, r = X max(||theta||,\n"
    "                            1) (default 1e-3, at most 0.1). Models with ReLU or max-pool\n"
    "                            kinks give values that depend on it: compare two\n"
    "      --dist                data-parallel across the ranks of an MPI job: run as\n"
    "                            `mpirun -np W trainbench train --dist ...`; each rank\n"
    "                            trains on its 1/W of every batch (--batch-size is the\n"
    "                            global batch and must divide by W) and the gradients are\n"
    "                            averaged before each update, so every rank holds the same\n"
    "                            weights (checked at the end); rank 0 evaluates, decides\n"
    "                            when to stop and alone prints. cpu only; not with\n"
    "                            --cuda-graph, --sharpness-every, kfac or ekfac. Batch norm\n"
    "                            uses each shard's statistics (docs/DISTRIBUTED.md).\n"
    "                            Without a launcher: one process, as without --dist\n"
    "      --json                print the result as one JSON object on stdout\n"
    "  -q, --quiet               no progress display\n"
    "  -h, --help                this help\n"
    "\n"
    "exit code 4: the run diverged: a step's training loss was NaN, infinite or more than\n"
    "1e4 times the first step's (the untrained model's), or the final validation loss was;\n"
    "or a step found a NaN or an infinity in its own numbers (a gradient, a trust ratio, a\n"
    "K-FAC or Shampoo preconditioned gradient), before updating the weights. The error says\n"
    "which step and what; with --json \"diverged\" is true exactly then. A hyperparameter\n"
    "that float32 cannot use (beta2=0.99999999 is 1 in float32, epsilon or damping below\n"
    "1.18e-38) is refused before training with exit code 2. With --json, numbers that are\n"
    "not finite are written as null.\n"
    "\n"
    "example:\n"
    "  trainbench train --workload fmnist_mlp --algorithm adamw --lr 1e-3 --epochs 3\n";

typedef struct progress_state {
    bool tty;
    const char *metric;
} progress_state;

static void show_progress(void *user, const tb_train_progress *p)
{
    progress_state *s = user;
    if (p->validation) {
        fprintf(stderr, "%s  step %lld", s->tty ? "\r\033[K" : "", (long long)p->step);
        if (p->total_steps > 0) fprintf(stderr, "/%lld", (long long)p->total_steps);
        fprintf(stderr, "  %.1fs  validation %s %.4f  loss %.4f\n", p->elapsed_s, s->metric,
                p->validation->metric, p->validation->loss);
    }
    if (!s->tty) return;
    if (p->total_steps > 0)
        fprintf(stderr, "\r\033[Kstep %lld/%lld", (long long)p->step, (long long)p->total_steps);
    else /* ended by time */
        fprintf(stderr, "\r\033[Kstep %lld", (long long)p->step);
    fprintf(stderr, "  epoch %lld  loss %.4f  %.0f examples/s  ETA %.0fs", (long long)p->epoch,
            p->loss, p->examples_per_s, p->eta_s);
    if (p->step == p->total_steps) fputs("\r\033[K", stderr);
    fflush(stderr);
}

/* A JSON string's contents: quotes and backslashes escaped, control characters dropped. */
/* One split's evaluation: the workload's metric, then accuracy where the workload has one (not
 * for reconstruction or regression losses; its error unless that is the metric) and the loss
 * where the metric is not the loss. */
static void print_split(const char *label, const char *metric, const tb_eval_metrics *m)
{
    printf("%s %s %.4f", label, metric, m->metric);
    if (!isnan(m->accuracy)) {
        printf(", accuracy %.4f", m->accuracy);
        if (strcmp(metric, "error_rate") != 0) printf(" (error %.4f)", m->error_rate);
    }
    if (strcmp(metric, "loss") != 0) printf(", loss %.4f", m->loss);
    printf("\n");
}

/* "name":value, with a comma before it unless first (the name escaped: a user's hyperparameter
 * name may hold anything). */
static void print_json_field(bool first, const char *name, const char *fmt, double v)
{
    printf("%s\"", first ? "" : ",");
    tb_cli_json_text(name);
    printf("\":");
    tb_cli_json_number(fmt, v);
}

/* the projection stage of a projected variant (docs/DROPOUT.md) */
static void print_projection(const tb_projection_stats *p)
{
    if (p->batches == 0) return;
    printf("projection: %lld of %lld batches trained on their projection: %.1f input-gradient "
           "steps on average (at most %d), relative error %.4g -> %.4g on average\n",
           (long long)p->projected, (long long)p->batches, p->mean_steps, p->max_steps,
           p->mean_initial_error, p->mean_final_error);
    printf("            %lld refused (did not converge; trained on their clean inputs)%s%s\n",
           (long long)p->unconverged, p->last_refusal[0] ? ", the last: " : "", p->last_refusal);
}

static void print_projection_json(const tb_projection_stats *p)
{
    if (p->batches == 0) return;
    printf("\"projection\":{\"batches\":%lld,\"projected\":%lld,\"unconverged\":%lld,",
           (long long)p->batches, (long long)p->projected, (long long)p->unconverged);
    print_json_field(true, "mean_steps", "%.4f", p->mean_steps);
    print_json_field(false, "mean_initial_error", "%.6g", p->mean_initial_error);
    print_json_field(false, "mean_final_error", "%.6g", p->mean_final_error);
    printf(",\"max_steps\":%d,\"last_refusal\":\"", p->max_steps);
    tb_cli_json_text(p->last_refusal);
    printf("\"},");
}

static void print_json(const tb_run_config *c, const tb_train_result *r, tb_status st,
                       const tb_error *err, int64_t sharpness_batch,
                       const tb_cli_sharpness_log *sharpness)
{
    printf("{\"workload\":\"");
    tb_cli_json_text(c->model.workload);
    printf("\",\"algorithm\":\"");
    tb_cli_json_text(c->model.algorithm);
    printf("\",\"status\":\"%s\"", tb_status_name(st));
    if (st != TB_OK) {
        printf(",\"error\":\"");
        tb_cli_json_text(err->message);
        putchar('"');
    }
    if (c->model.cuda_graph) {
        printf(",\"cuda_graph\":{\"replays\":%lld,\"note\":\"", (long long)r->graph_replays);
        tb_cli_json_text(r->graph_note);
        printf("\"}");
    }
    /* every hyperparameter the run used, and which took defaults; the given ones alone when
     * they are invalid (then the run did not start) */
    const tb_hparams *hp = r->hparams.count > 0 ? &r->hparams : &c->model.hparams;
    printf(",\"hparams\":{");
    for (int i = 0; i < hp->count; i++)
        print_json_field(i == 0, hp->names[i], "%.17g", hp->values[i]);
    printf("},\"default_hparams\":[");
    for (int i = 0; i < r->default_hparams.count; i++) {
        printf("%s\"", i ? "," : "");
        tb_cli_json_text(r->default_hparams.names[i]);
        putchar('"');
    }
    printf("],\"seeds\":{");
    for (int i = 0; i < TB_STREAM_COUNT; i++)
        printf("%s\"%s\":%llu", i ? "," : "", tb_stream_name((tb_stream)i),
               (unsigned long long)c->seeds[i]);
    printf("},\"steps\":%lld,\"examples\":%lld", (long long)r->steps, (long long)r->examples);
    print_json_field(false, "train_time_s", "%.3f", r->train_time_s);
    print_json_field(false, "examples_per_s", "%.1f", r->examples_per_s);
    print_json_field(false, "final_train_loss", "%.6g", r->final_train_loss);
    printf(",\"diverged\":%s,\"parameters\":%lld,", r->diverged ? "true" : "false",
           (long long)r->parameters);
    printf("\"schedule\":{\"kind\":\"%s\",\"warmup_steps\":%lld,\"total_steps\":%lld},",
           tb_schedule_name(r->schedule.kind), (long long)r->schedule.warmup_steps,
           (long long)r->schedule.total_steps);
    if (st == TB_OK) {
        const tb_eval_metrics *ms[2] = {&r->validation, &r->test};
        for (int i = 0; i < 2; i++) {
            printf("\"%s\":{", i ? "test" : "validation");
            if (isfinite(ms[i]->accuracy)) { /* NaN: no classes, left out */
                print_json_field(true, "accuracy", "%.6f", ms[i]->accuracy);
                print_json_field(false, "error_rate", "%.6f", ms[i]->error_rate);
                putchar(',');
            }
            print_json_field(true, "loss", "%.6f", ms[i]->loss);
            print_json_field(false, "metric", "%.6f", ms[i]->metric);
            printf("},");
        }
    }
    print_projection_json(&r->projection);
    printf("\"upstream_delay_s\":%.6g,\"fresh_to_target\":%lld,",
           c->data.pipeline.upstream_delay_s, (long long)r->fresh_to_target);
    printf("\"fresh_examples\":%lld,\"evaluations\":%lld,\"reached_target\":%s,",
           (long long)r->fresh_examples, (long long)r->evaluations,
           r->reached_target ? "true" : "false");
    if (isfinite(r->best_validation_metric))
        printf("\"best_validation_metric\":%.6f,", r->best_validation_metric);
    if (isfinite(r->time_to_target_s)) printf("\"time_to_target_s\":%.3f,", r->time_to_target_s);
    if (c->diag.profile) {
        printf("\"profile\":[");
        for (int i = 0; i < r->profile_ops; i++) {
            printf("%s{\"op\":\"%s\",\"calls\":%lld", i ? "," : "", r->profile[i].name,
                   (long long)r->profile[i].calls);
            print_json_field(false, "forward_s", "%.6f", r->profile[i].forward_s);
            print_json_field(false, "backward_s", "%.6f", r->profile[i].backward_s);
            putchar('}');
        }
        printf("],");
    }
    tb_cli_sharpness_json(c, r, sharpness_batch, sharpness);
    if (c->dist) printf("\"ranks\":%d,", tb_dist_size(c->dist));
    printf("\"backend\":\"%s\"}\n", r->backend);
}

/* "hparams:    a=1, b=2; defaults: c=3, d=4": the given values, then the defaults. */
static void print_hparams(const tb_train_result *r)
{
    printf("hparams:   ");
    int printed = 0;
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0, k = 0; i < r->hparams.count; i++) {
            const char *name = r->hparams.names[i];
            if (tb_hparams_has(&r->default_hparams, name) != (pass == 1)) continue;
            const char *sep = k ? "," : pass && printed ? ";" : "";
            printf("%s%s %s=%g", sep, pass && !k ? " defaults:" : "", name, r->hparams.values[i]);
            k++;
            printed++;
        }
    putchar('\n');
}

/* Where the training steps went: per op, forward and backward, and the rest of the timed
 * training (update, input, evaluation excluded). */
static void print_profile(const tb_train_result *r)
{
    double ops = 0;
    for (int i = 0; i < r->profile_ops; i++)
        ops += r->profile[i].forward_s + r->profile[i].backward_s;
    printf("profile:    %-24s %8s %10s %10s %7s\n", "op", "calls", "forward s", "backward s",
           "share");
    for (int i = 0; i < r->profile_ops; i++) {
        const tb_op_profile *p = &r->profile[i];
        printf("            %-24s %8lld %10.3f %10.3f %6.1f%%\n", p->name, (long long)p->calls,
               p->forward_s, p->backward_s,
               r->train_time_s > 0 ? 100.0 * (p->forward_s + p->backward_s) / r->train_time_s
                                   : 0.0);
    }
    double rest = r->train_time_s - ops;
    printf("            %-24s %8s %10.3f %10s %6.1f%%\n", "rest (update, input)", "",
           rest > 0 ? rest : 0.0, "",
           r->train_time_s > 0 && rest > 0 ? 100.0 * rest / r->train_time_s : 0.0);
}

enum { OPT_LR = 1000, OPT_SCHEDULE, OPT_WARMUP, OPT_EVALS, OPT_JSON, OPT_AUGMENT, OPT_ECHO,
       OPT_ECHO_FACTOR, OPT_SHUFFLE, OPT_PREFETCH, OPT_SLOW, OPT_MAX_TIME, OPT_EVAL_PERIOD,
       OPT_BUDGET, OPT_STOP, OPT_CUDA_GRAPH, OPT_PROFILE, OPT_SHARP_EVERY, OPT_SHARP_ITERS,
       OPT_SHARP_BATCH, OPT_SHARP_FD, OPT_DIST, OPT_PRESET, OPT_SEED_BASE };

/* --slow-upstream Nx: true with *slowdown = N (> 0); a bad N prints why and sets -1; false
 * for an absolute delay (no trailing x). */
static bool slow_upstream_multiple(const char *text, double *slowdown)
{
    size_t n = strlen(text);
    if (n < 2 || text[n - 1] != 'x') return false;
    char num[64];
    snprintf(num, sizeof num, "%.*s", (int)(n - 1), text);
    double v = 0;
    const bool number = tb_cli_parse_double("--slow-upstream", num, &v);
    if (number && !(v > 0 && v <= 1000))
        tb_cli_error("--slow-upstream: %s: the multiple of the step time must be in (0, 1000]",
                     text);
    if (!number || !(v > 0 && v <= 1000)) {
        *slowdown = -1;
        return false;
    }
    *slowdown = v;
    return true;
}

/* The delay of --slow-upstream Nx: the step time measured on a run of its own, then N x step
 * / batch per fresh example into cfg. */
static tb_status state_slow_upstream(tb_run_config *cfg, double slowdown, int64_t batch,
                                     bool quiet, tb_error *err)
{
    const tb_step_time_plan how = {5, 20, 3};
    double step_s = 0;
    tb_status st = tb_run_measure_step_s(cfg, &how, &step_s, err);
    if (st == TB_OK)
        st = tb_upstream_delay_for(slowdown, step_s, batch, &cfg->data.pipeline.upstream_delay_s,
                                   err);
    if (st == TB_OK && !quiet)
        fprintf(stderr, "slow upstream: %gx the step time (%.4g ms, the median of 3 windows of "
                "20 steps) = %.4g us per fresh example\n", slowdown, step_s * 1e3,
                cfg->data.pipeline.upstream_delay_s * 1e6);
    return st;
}

/* tb_train; when the algorithm names a submission file, with its functions as the update
 * (tb_cli_train_file: the file's functions, as a benchmark trial runs them). */
static tb_status train_run(tb_run_config *cfg, const tb_train_observers *obs,
                           tb_train_result *res, tb_error *err)
{
    if (!tb_cli_submission_file(cfg->model.algorithm)) return tb_train(cfg, obs, res, err);
    memset(res, 0, sizeof *res);
    res->validation.loss = res->test.loss = NAN;
    tb_submission_ref *ref = NULL;
    tb_status st = tb_submission_load(cfg->model.algorithm, NULL, &ref, err);
    if (st == TB_OK) st = tb_cli_train_file(ref, cfg, obs, res, err);
    tb_submission_unload(ref);
    return st;
}

int tb_cli_train(int argc, char **argv)
{
    tb_run_config cfg = tb_run_config_default();
    bool json = false, quiet = false, use_budget = false, length_set = false;
    bool echo_factor_set = false, use_dist = false, algorithm_set = false;
    bool schedule_set = false; /* --schedule or --warmup: a preset's schedule gives way */
    const char *preset = NULL;
    double slowdown = 0; /* --slow-upstream Nx */
    bool seed_set[TB_STREAM_COUNT] = {false};
    uint64_t seed_one[TB_STREAM_COUNT] = {0}, seed = 0;
    tb_error err = {0};
    struct option opts[] = {
        TB_CLI_RUN_OPTIONS,
        {"algorithm", required_argument, 0, 'a'},
        {"hp", required_argument, 0, 'p'},
        {"lr", required_argument, 0, OPT_LR},
        {"preset", required_argument, 0, OPT_PRESET},
        {"schedule", required_argument, 0, OPT_SCHEDULE},
        {"warmup", required_argument, 0, OPT_WARMUP},
        {"evals", required_argument, 0, OPT_EVALS},
        {"seed", required_argument, 0, 's'},
        {"seed-init", required_argument, 0, OPT_SEED_BASE + TB_STREAM_INIT},
        {"seed-data_order", required_argument, 0, OPT_SEED_BASE + TB_STREAM_DATA_ORDER},
        {"seed-dropout", required_argument, 0, OPT_SEED_BASE + TB_STREAM_DROPOUT},
        {"seed-augment", required_argument, 0, OPT_SEED_BASE + TB_STREAM_AUGMENT},
        {"seed-split", required_argument, 0, OPT_SEED_BASE + TB_STREAM_SPLIT},
        {"seed-hparam", required_argument, 0, OPT_SEED_BASE + TB_STREAM_HPARAM},
        {"cuda-graph", no_argument, 0, OPT_CUDA_GRAPH},
        {"json", no_argument, 0, OPT_JSON},
        {"dist", no_argument, 0, OPT_DIST},
        {"profile", no_argument, 0, OPT_PROFILE},
        {"sharpness-every", required_argument, 0, OPT_SHARP_EVERY},
        {"sharpness-iters", required_argument, 0, OPT_SHARP_ITERS},
        {"sharpness-batch", required_argument, 0, OPT_SHARP_BATCH},
        {"sharpness-fd-scale", required_argument, 0, OPT_SHARP_FD},
        {"augment", no_argument, 0, OPT_AUGMENT},
        {"echo", required_argument, 0, OPT_ECHO},
        {"echo-factor", required_argument, 0, OPT_ECHO_FACTOR},
        {"shuffle-buffer", required_argument, 0, OPT_SHUFFLE},
        {"prefetch", required_argument, 0, OPT_PREFETCH},
        {"slow-upstream", required_argument, 0, OPT_SLOW},
        {"max-time", required_argument, 0, OPT_MAX_TIME},
        {"eval-period", required_argument, 0, OPT_EVAL_PERIOD},
        {"budget", no_argument, 0, OPT_BUDGET},
        {"stop-at-target", no_argument, 0, OPT_STOP},
        {"quiet", no_argument, 0, 'q'},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    optind = 1;
    opterr = 0;
    int c;
    long lv;
    double dv;
    tb_run_config *const cfgs[1] = {&cfg};
    while ((c = getopt_long(argc, argv, ":w:a:p:e:b:s:t:qh", opts, NULL)) != -1) {
        int r = tb_cli_run_option(c, cfgs, 1);
        if (r == 2) return TB_EXIT_USAGE;
        if (r == 0) {
            length_set |= c == 'e' || c == TB_OPT_STEPS;
            continue;
        }
        switch (c) {
        case 'a': cfg.model.algorithm = optarg, algorithm_set = true; break;
        case OPT_PRESET: preset = optarg; break;
        case 'p':
            if (tb_hparams_parse_assignment(&cfg.model.hparams, optarg, &err) != TB_OK) {
                tb_cli_error("--hp: %s", err.message);
                return TB_EXIT_USAGE;
            }
            break;
        case OPT_LR:
            if (!tb_cli_parse_double("--lr", optarg, &dv)) return TB_EXIT_USAGE;
            tb_hparams_set(&cfg.model.hparams, "learning_rate", dv, NULL);
            break;
        case OPT_SCHEDULE:
            if (tb_schedule_parse(optarg, &cfg.length.schedule, &err) != TB_OK) {
                tb_cli_error("--schedule: %s", err.message);
                return TB_EXIT_USAGE;
            }
            schedule_set = true;
            break;
        case OPT_WARMUP:
            if (!tb_cli_parse_double("--warmup", optarg, &cfg.length.warmup_fraction))
                return TB_EXIT_USAGE;
            if (cfg.length.warmup_fraction < 0 || cfg.length.warmup_fraction > 1) {
                tb_cli_error("--warmup: %s is outside [0, 1]", optarg);
                return TB_EXIT_USAGE;
            }
            schedule_set = true;
            break;
        case OPT_EVALS:
            if (!tb_cli_parse_int("--evals", optarg, 0, 100000L, &lv)) return TB_EXIT_USAGE;
            cfg.eval.during = (int)lv;
            break;
        case 's':
            if (!tb_cli_parse_u64("--seed", optarg, &seed)) return TB_EXIT_USAGE;
            break;
        case OPT_CUDA_GRAPH: cfg.model.cuda_graph = true; break;
        case OPT_PROFILE: cfg.diag.profile = true; break;
        case OPT_SHARP_EVERY:
            if (!tb_cli_parse_int("--sharpness-every", optarg, 1, TB_RUN_MAX_STEPS, &lv))
                return TB_EXIT_USAGE;
            cfg.diag.sharpness_every = lv;
            break;
        case OPT_SHARP_ITERS:
            if (!tb_cli_parse_int("--sharpness-iters", optarg, 1, TB_LANCZOS_MAX_ITERS, &lv))
                return TB_EXIT_USAGE;
            cfg.diag.sharpness_iters = (int)lv;
            break;
        case OPT_SHARP_BATCH:
            if (!tb_cli_parse_int("--sharpness-batch", optarg, 1, 1000000L, &lv))
                return TB_EXIT_USAGE;
            cfg.diag.sharpness_batch = lv;
            break;
        case OPT_SHARP_FD:
            if (!tb_cli_parse_double("--sharpness-fd-scale", optarg, &cfg.diag.sharpness_fd_scale))
                return TB_EXIT_USAGE;
            if (!(cfg.diag.sharpness_fd_scale > 0 && cfg.diag.sharpness_fd_scale <= 0.1)) {
                tb_cli_error("--sharpness-fd-scale: %s is outside (0, 0.1]", optarg);
                return TB_EXIT_USAGE;
            }
            break;
        case OPT_JSON: json = true; break;
        case OPT_AUGMENT: cfg.data.pipeline.augment = true; break;
        case OPT_ECHO:
            if (tb_echo_kind_parse(optarg, &cfg.data.pipeline.echo, &err) != TB_OK) {
                tb_cli_error("--echo: %s", err.message);
                return TB_EXIT_USAGE;
            }
            break;
        case OPT_ECHO_FACTOR:
            if (!tb_cli_parse_double("--echo-factor", optarg, &cfg.data.pipeline.echo_factor))
                return TB_EXIT_USAGE;
            if (!(cfg.data.pipeline.echo_factor >= 1 && cfg.data.pipeline.echo_factor <= 1000)) {
                tb_cli_error("--echo-factor: %s is outside [1, 1000] (mean copies per item)",
                             optarg);
                return TB_EXIT_USAGE;
            }
            echo_factor_set = true;
            break;
        case OPT_SHUFFLE:
            if (!tb_cli_parse_int("--shuffle-buffer", optarg, 0, 10000000L, &lv))
                return TB_EXIT_USAGE;
            cfg.data.pipeline.shuffle_buffer = lv;
            break;
        case OPT_PREFETCH:
            if (!tb_cli_parse_int("--prefetch", optarg, -1, 64, &lv)) return TB_EXIT_USAGE;
            if (lv == 0) {
                tb_cli_error("--prefetch: 0 batches ahead leaves the input thread nothing to "
                             "do: give 1 to 64, or -1 to run upstream without a thread");
                return TB_EXIT_USAGE;
            }
            cfg.data.pipeline.prefetch = (int)lv;
            break;
        case OPT_SLOW:
            if (slow_upstream_multiple(optarg, &slowdown)) break;
            if (slowdown < 0) return 2;
            if (!tb_cli_parse_double("--slow-upstream", optarg, &cfg.data.pipeline.upstream_delay_s))
                return TB_EXIT_USAGE;
            break;
        case OPT_MAX_TIME:
            if (!tb_cli_parse_double("--max-time", optarg, &cfg.length.max_time_s)) return TB_EXIT_USAGE;
            if (cfg.length.max_time_s <= 0) {
                tb_cli_error("--max-time: must be positive, got %s (leave it out for no time "
                             "limit)", optarg);
                return TB_EXIT_USAGE;
            }
            break;
        case OPT_EVAL_PERIOD:
            if (!tb_cli_parse_double("--eval-period", optarg, &cfg.eval.period_s))
                return TB_EXIT_USAGE;
            if (cfg.eval.period_s <= 0) {
                tb_cli_error("--eval-period: must be positive, got %s (leave it out for no "
                             "evaluations by time)", optarg);
                return TB_EXIT_USAGE;
            }
            break;
        case OPT_BUDGET: use_budget = true; break;
        case OPT_STOP: cfg.eval.stop_at_target = true; break;
        case OPT_DIST: use_dist = true; break;
        case 'q': quiet = true; break;
        case 'h': fputs(train_usage, stdout); return TB_EXIT_OK;
        case ':':
        case '?': return tb_cli_option_error("train", c, argv);
        default:
            if (c >= OPT_SEED_BASE && c < OPT_SEED_BASE + TB_STREAM_COUNT) {
                int s = c - OPT_SEED_BASE;
                char option[48];
                snprintf(option, sizeof option, "--seed-%s", tb_stream_name((tb_stream)s));
                if (!tb_cli_parse_u64(option, optarg, &seed_one[s]))
                    return TB_EXIT_USAGE;
                seed_set[s] = true;
            }
            break;
        }
    }
    if (tb_cli_no_arguments("train", argc, argv) != TB_EXIT_OK) return TB_EXIT_USAGE;
    if (echo_factor_set && cfg.data.pipeline.echo == TB_ECHO_NONE) {
        tb_cli_error("--echo-factor %g does nothing without echoing: give --echo "
                     "example_before_augment, example_after_augment or batch",
                     cfg.data.pipeline.echo_factor);
        return TB_EXIT_USAGE;
    }
    if ((cfg.diag.sharpness_iters > 0 || cfg.diag.sharpness_batch > 0 || cfg.diag.sharpness_fd_scale > 0) &&
        cfg.diag.sharpness_every == 0) {
        tb_cli_error("--sharpness-%s does nothing without --sharpness-every N",
                     cfg.diag.sharpness_iters > 0   ? "iters"
                     : cfg.diag.sharpness_batch > 0 ? "batch"
                                               : "fd-scale");
        return TB_EXIT_USAGE;
    }
    if (cfg.model.cuda_graph && cfg.model.backend.device != TB_DEVICE_CUDA) {
        tb_cli_error("--cuda-graph needs --device cuda (the %s backend has no CUDA graphs)",
                     tb_device_name(cfg.model.backend.device));
        return TB_EXIT_USAGE;
    }
    if (!tb_cli_run_finish("train", cfgs, 1)) return TB_EXIT_USAGE;
    const tb_workload_info *winfo = NULL;
    for (int i = 0; i < tb_workload_count(); i++)
        if (strcmp(tb_workload_info_at(i)->id, cfg.model.workload) == 0) winfo = tb_workload_info_at(i);
    if (preset && algorithm_set) {
        tb_cli_error("--preset %s sets the algorithm: give it or --algorithm, not both", preset);
        return TB_EXIT_USAGE;
    }
    if (preset && tb_optimizer_preset_apply(preset, winfo ? winfo->step_hint : 0,
                                            &cfg.model.algorithm, &cfg.model.hparams,
                                            &err) != TB_OK) {
        tb_cli_error("--preset: %s", err.message);
        return TB_EXIT_USAGE;
    }
    /* a preset's own schedule (nadamw_self_tuning's warmup 2% then cosine) unless one is given */
    const tb_optimizer_preset *pre = preset ? tb_optimizer_preset_find(preset) : NULL;
    if (pre && pre->schedule_warmup > 0 && !schedule_set) {
        cfg.length.schedule = TB_SCHEDULE_WARMUP_COSINE;
        cfg.length.warmup_fraction = pre->schedule_warmup;
    }
    if (use_budget && winfo) {
        if (cfg.length.max_time_s == 0) cfg.length.max_time_s = winfo->max_runtime_s;
        if (cfg.eval.period_s == 0) cfg.eval.period_s = winfo->eval_period_s;
        cfg.eval.stop_at_target = true;
        /* no length given: the time ends the run, the schedule spans the step hint (tb_train) */
        if (!length_set) cfg.length.epochs = 0;
    }
    tb_run_config_seed_all(&cfg, seed);
    for (int s = 0; s < TB_STREAM_COUNT; s++)
        if (seed_set[s]) cfg.seeds[s] = seed_one[s];
    if (use_dist && tb_cli_submission_file(cfg.model.algorithm)) {
        tb_cli_error("--dist: a submission file (%s) trains in one process", cfg.model.algorithm);
        return TB_EXIT_USAGE;
    }
    /* --dist: this rank of the MPI job (a world of 1 without a launcher); only rank 0 prints */
    if (!use_dist) tb_cli_dist_warn_undistributed("train");
    if (use_dist && tb_dist_init(&cfg.dist, &err) != TB_OK) {
        tb_cli_error("--dist: %s", err.message);
        return tb_cli_exit_code(err.status);
    }
    bool root = tb_dist_rank(cfg.dist) == 0;
    if (!root) quiet = true, json = false;
    progress_state ps = {isatty(STDERR_FILENO) != 0, winfo ? winfo->metric : "metric"};
    tb_train_observers obs = {.progress_every_s = 0.5};
    if (!quiet) {
        obs.progress = show_progress;
        obs.progress_user = &ps;
    }
    tb_cli_sharpness_log sharp = {.print = !quiet, .tty = ps.tty};
    if (cfg.diag.sharpness_every > 0) {
        obs.on_sharpness = tb_cli_sharpness_record;
        obs.sharpness_user = &sharp;
    }
    const int64_t batch = cfg.data.batch_size > 0 ? cfg.data.batch_size
                          : winfo                ? winfo->default_batch_size
                                                 : 0;
    if (slowdown > 0 && state_slow_upstream(&cfg, slowdown, batch, quiet, &err) != TB_OK) {
        tb_cli_error("--slow-upstream %gx: %s", slowdown, err.message);
        return tb_cli_exit_code(err.status);
    }
    if (!quiet && !json)
        fprintf(stderr, "training %s with %s%s\n", cfg.model.workload, cfg.model.algorithm,
                ps.tty ? "" : " (progress is shown on a terminal only)");
    tb_train_result res;
    tb_status st = train_run(&cfg, &obs, &res, &err);
    /* a run ended early (time, target, error) leaves its progress line: clear it */
    if (!quiet && ps.tty) fputs("\r\033[K", stderr);
    if (json) {
        print_json(&cfg, &res, st, &err, cfg.diag.sharpness_batch > 0 ? cfg.diag.sharpness_batch : batch,
                   &sharp);
    } else if (st == TB_OK && root) {
        printf("%s with %s: %lld steps, %lld examples in %.1f s of training (%.0f examples/s)\n",
               cfg.model.workload, cfg.model.algorithm, (long long)res.steps, (long long)res.examples,
               res.train_time_s, res.examples_per_s);
        const char *mn = winfo ? winfo->metric : "metric";
        print_split("validation:", mn, &res.validation);
        print_split("test:      ", mn, &res.test);
        if (winfo && res.reached_target)
            printf("target:     validation %s %.4g reached after %.1f s of training\n", mn,
                   winfo->validation_target, res.time_to_target_s);
        else if (winfo)
            printf("target:     validation %s %.4g not reached (best %.4f)\n", mn,
                   winfo->validation_target, res.best_validation_metric);
        print_hparams(&res);
        printf("input:      %lld fresh examples read\n", (long long)res.fresh_examples);
        print_projection(&res.projection);
        printf("backend:    %s\n", res.backend);
        if (cfg.model.cuda_graph && res.graph_note[0])
            printf("graph:      %s\n", res.graph_note);
        else if (cfg.model.cuda_graph)
            printf("graph:      %lld of %lld steps replayed from one captured CUDA graph\n",
                   (long long)res.graph_replays, (long long)res.steps);
        if (cfg.diag.profile) print_profile(&res);
        tb_cli_sharpness_summary(&cfg, &res);
        int ranks = tb_dist_size(cfg.dist);
        if (cfg.dist && ranks == 1)
            printf("dist:       1 rank (not started by an MPI launcher): trained as one "
                   "process\n");
        else if (cfg.dist && res.steps > 0)
            printf("dist:       %d ranks x %lld examples per step, gradients averaged; the "
                   "weights are identical on every rank\n",
                   ranks, (long long)(res.examples / res.steps / ranks));
    }
    tb_cli_sharpness_free(&sharp);
    if (cfg.dist) return tb_cli_dist_finish(cfg.dist, st, &err);
    if (st != TB_OK) tb_cli_error("%s", err.message);
    return tb_cli_exit_code(st);
}
