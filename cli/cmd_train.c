/* cmd_train.c: `trainbench train`: one run, progress on a terminal, a result at the end. */
#include "cli.h"

#include <getopt.h>
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
    "  -p, --hp NAME=VALUE       set a hyperparameter of the algorithm (repeatable),\n"
    "                            e.g. --hp learning_rate=3e-4 --hp weight_decay=0\n"
    "      --lr VALUE            shorthand for --hp learning_rate=VALUE\n"
    "  -e, --epochs X            length of the run in epochs (default 5; may be fractional)\n"
    "      --steps N             length of the run in steps (overrides --epochs)\n"
    "  -b, --batch-size N        examples per step (default: the workload's)\n"
    "      --schedule NAME       warmup_cosine (default), constant, linear_decay, polynomial\n"
    "                            (power 2) or step (x0.1 every third of the run)\n"
    "      --warmup X            linear warmup fraction of the run for every schedule but\n"
    "                            constant (default 0.05)\n"
    "      --evals N             validation evaluations during the run (default 3)\n"
    "      --eval-examples N     evaluate only the first N examples of each split (default: all)\n"
    "  -s, --seed N              seed of every source of variation (default 0)\n"
    "      --seed-SOURCE N       seed of one source: SOURCE is init, data_order, dropout,\n"
    "                            augment, split or hparam (e.g. --seed-init 7)\n"
    "  -t, --threads N           CPU threads shared by BLAS and OpenMP (default: all cores)\n"
    "      --device NAME         cpu (default) or cuda\n"
    "      --precision P         matrix products: fp32 (default), or on cuda tf32 or bf16\n"
    "                            (bf16 operands, fp32 accumulation and master weights)\n"
    "      --data-dir DIR        Fashion-MNIST directory (default\n"
    "                            /usr/share/datasets/fashion-mnist)\n"
    "      --json                print the result as one JSON object on stdout\n"
    "  -q, --quiet               no progress display\n"
    "  -h, --help                this help\n"
    "\n"
    "example:\n"
    "  trainbench train --workload fmnist_mlp --algorithm adamw --lr 1e-3 --epochs 3\n";

typedef struct progress_state {
    bool tty;
} progress_state;

static void show_progress(void *user, const tb_train_progress *p)
{
    progress_state *s = user;
    if (p->validation) {
        fprintf(stderr, "%s  step %lld/%lld  validation error %.4f  loss %.4f%s\n",
                s->tty ? "\r\033[K" : "", (long long)p->step, (long long)p->total_steps,
                p->validation->error_rate, p->validation->loss, "");
    }
    if (!s->tty) return;
    fprintf(stderr, "\r\033[Kstep %lld/%lld  epoch %lld  loss %.4f  %.0f examples/s  ETA %.0fs",
            (long long)p->step, (long long)p->total_steps, (long long)p->epoch, p->loss,
            p->examples_per_s, p->eta_s);
    if (p->step == p->total_steps) fputs("\r\033[K", stderr);
    fflush(stderr);
}

static void print_json(const tb_train_config *c, const tb_train_result *r, tb_status st,
                       const tb_error *err)
{
    printf("{\"workload\":\"%s\",\"algorithm\":\"%s\",\"status\":\"%s\"", c->workload,
           c->algorithm, tb_status_name(st));
    if (st != TB_OK) {
        printf(",\"error\":\"");
        for (const char *q = err->message; *q; q++) {
            if (*q == '"' || *q == '\\') putchar('\\');
            if ((unsigned char)*q >= 0x20) putchar(*q);
        }
        putchar('"');
    }
    printf(",\"hparams\":{");
    for (int i = 0; i < c->hparams.count; i++)
        printf("%s\"%s\":%.17g", i ? "," : "", c->hparams.names[i], c->hparams.values[i]);
    printf("},\"seeds\":{");
    for (int i = 0; i < TB_STREAM_COUNT; i++)
        printf("%s\"%s\":%llu", i ? "," : "", tb_stream_name((tb_stream)i),
               (unsigned long long)c->seeds[i]);
    printf("},\"steps\":%lld,\"examples\":%lld,\"train_time_s\":%.3f,\"examples_per_s\":%.1f,"
           "\"final_train_loss\":%.6g,\"diverged\":%s,\"parameters\":%lld,",
           (long long)r->steps, (long long)r->examples, r->train_time_s, r->examples_per_s,
           r->final_train_loss, r->diverged ? "true" : "false", (long long)r->parameters);
    if (st == TB_OK)
        printf("\"validation\":{\"accuracy\":%.6f,\"error_rate\":%.6f,\"loss\":%.6f},"
               "\"test\":{\"accuracy\":%.6f,\"error_rate\":%.6f,\"loss\":%.6f},",
               r->validation.accuracy, r->validation.error_rate, r->validation.loss,
               r->test.accuracy, r->test.error_rate, r->test.loss);
    printf("\"backend\":\"%s\"}\n", r->backend);
}

enum { OPT_LR = 1000, OPT_EVAL_EXAMPLES, OPT_STEPS, OPT_SCHEDULE, OPT_WARMUP, OPT_EVALS,
       OPT_DEVICE, OPT_DATA, OPT_JSON, OPT_PRECISION, OPT_SEED_BASE };

int tb_cli_train(int argc, char **argv)
{
    tb_train_config cfg = tb_train_config_default();
    bool json = false, quiet = false;
    bool seed_set[TB_STREAM_COUNT] = {false};
    uint64_t seed_one[TB_STREAM_COUNT] = {0}, seed = 0;
    tb_error err = {0};
    struct option opts[] = {
        {"workload", required_argument, 0, 'w'},
        {"algorithm", required_argument, 0, 'a'},
        {"hp", required_argument, 0, 'p'},
        {"lr", required_argument, 0, OPT_LR},
        {"epochs", required_argument, 0, 'e'},
        {"steps", required_argument, 0, OPT_STEPS},
        {"batch-size", required_argument, 0, 'b'},
        {"schedule", required_argument, 0, OPT_SCHEDULE},
        {"warmup", required_argument, 0, OPT_WARMUP},
        {"evals", required_argument, 0, OPT_EVALS},
        {"eval-examples", required_argument, 0, OPT_EVAL_EXAMPLES},
        {"seed", required_argument, 0, 's'},
        {"seed-init", required_argument, 0, OPT_SEED_BASE + TB_STREAM_INIT},
        {"seed-data_order", required_argument, 0, OPT_SEED_BASE + TB_STREAM_DATA_ORDER},
        {"seed-dropout", required_argument, 0, OPT_SEED_BASE + TB_STREAM_DROPOUT},
        {"seed-augment", required_argument, 0, OPT_SEED_BASE + TB_STREAM_AUGMENT},
        {"seed-split", required_argument, 0, OPT_SEED_BASE + TB_STREAM_SPLIT},
        {"seed-hparam", required_argument, 0, OPT_SEED_BASE + TB_STREAM_HPARAM},
        {"threads", required_argument, 0, 't'},
        {"device", required_argument, 0, OPT_DEVICE},
        {"precision", required_argument, 0, OPT_PRECISION},
        {"data-dir", required_argument, 0, OPT_DATA},
        {"json", no_argument, 0, OPT_JSON},
        {"quiet", no_argument, 0, 'q'},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    optind = 1;
    opterr = 0;
    int c;
    long lv;
    double dv;
    while ((c = getopt_long(argc, argv, ":w:a:p:e:b:s:t:qh", opts, NULL)) != -1) {
        switch (c) {
        case 'w': cfg.workload = optarg; break;
        case 'a': cfg.algorithm = optarg; break;
        case 'p':
            if (tb_hparams_parse_assignment(&cfg.hparams, optarg, &err) != TB_OK) {
                tb_cli_error("--hp: %s", err.message);
                return TB_EXIT_USAGE;
            }
            break;
        case OPT_LR:
            if (!tb_cli_parse_double("--lr", optarg, &dv)) return TB_EXIT_USAGE;
            tb_hparams_set(&cfg.hparams, "learning_rate", dv, NULL);
            break;
        case 'e':
            if (!tb_cli_parse_double("--epochs", optarg, &cfg.epochs)) return TB_EXIT_USAGE;
            if (cfg.epochs <= 0) {
                tb_cli_error("--epochs: must be positive, got %s", optarg);
                return TB_EXIT_USAGE;
            }
            break;
        case OPT_STEPS:
            if (!tb_cli_parse_int("--steps", optarg, 1, 1000000000L, &lv)) return TB_EXIT_USAGE;
            cfg.max_steps = lv;
            break;
        case 'b':
            if (!tb_cli_parse_int("--batch-size", optarg, 1, 1000000L, &lv)) return TB_EXIT_USAGE;
            cfg.batch_size = (int)lv;
            break;
        case OPT_SCHEDULE:
            if (tb_schedule_parse(optarg, &cfg.schedule, &err) != TB_OK) {
                tb_cli_error("--schedule: %s", err.message);
                return TB_EXIT_USAGE;
            }
            break;
        case OPT_WARMUP:
            if (!tb_cli_parse_double("--warmup", optarg, &cfg.warmup_fraction))
                return TB_EXIT_USAGE;
            if (cfg.warmup_fraction < 0 || cfg.warmup_fraction > 1) {
                tb_cli_error("--warmup: %s is outside [0, 1]", optarg);
                return TB_EXIT_USAGE;
            }
            break;
        case OPT_EVALS:
            if (!tb_cli_parse_int("--evals", optarg, 0, 100000L, &lv)) return TB_EXIT_USAGE;
            cfg.evals = (int)lv;
            break;
        case OPT_EVAL_EXAMPLES:
            if (!tb_cli_parse_int("--eval-examples", optarg, 1, 1000000000L, &lv))
                return TB_EXIT_USAGE;
            cfg.eval_examples = lv;
            break;
        case 's':
            if (!tb_cli_parse_u64("--seed", optarg, &seed)) return TB_EXIT_USAGE;
            break;
        case 't':
            if (!tb_cli_parse_int("--threads", optarg, 0, 4096, &lv)) return TB_EXIT_USAGE;
            cfg.backend.threads = (int)lv;
            break;
        case OPT_DEVICE:
            if (tb_device_parse(optarg, &cfg.backend.device, &err) != TB_OK) {
                tb_cli_error("--device: %s", err.message);
                return TB_EXIT_USAGE;
            }
            break;
        case OPT_PRECISION:
            if (tb_precision_parse(optarg, &cfg.backend.precision, &err) != TB_OK) {
                tb_cli_error("--precision: %s", err.message);
                return TB_EXIT_USAGE;
            }
            break;
        case OPT_DATA: cfg.data_dir = optarg; break;
        case OPT_JSON: json = true; break;
        case 'q': quiet = true; break;
        case 'h': fputs(train_usage, stdout); return TB_EXIT_OK;
        case ':': tb_cli_error("train: %s needs a value", argv[optind - 1]); return TB_EXIT_USAGE;
        case '?':
            tb_cli_error("train: unknown option '%s' (see `trainbench train --help`)",
                         argv[optind - 1]);
            return TB_EXIT_USAGE;
        default:
            if (c >= OPT_SEED_BASE && c < OPT_SEED_BASE + TB_STREAM_COUNT) {
                int s = c - OPT_SEED_BASE;
                if (!tb_cli_parse_u64("--seed-<source>", optarg, &seed_one[s]))
                    return TB_EXIT_USAGE;
                seed_set[s] = true;
            }
            break;
        }
    }
    if (optind < argc) {
        tb_cli_error("train: unexpected argument '%s'", argv[optind]);
        return TB_EXIT_USAGE;
    }
    tb_train_config_seed_all(&cfg, seed);
    for (int s = 0; s < TB_STREAM_COUNT; s++)
        if (seed_set[s]) cfg.seeds[s] = seed_one[s];
    progress_state ps = {isatty(STDERR_FILENO) != 0};
    if (!quiet) {
        cfg.progress = show_progress;
        cfg.progress_user = &ps;
    }
    if (!quiet && !json)
        fprintf(stderr, "training %s with %s%s\n", cfg.workload, cfg.algorithm,
                ps.tty ? "" : " (progress is shown on a terminal only)");
    tb_train_result res;
    tb_status st = tb_train(&cfg, &res, &err);
    if (json) {
        print_json(&cfg, &res, st, &err);
    } else if (st == TB_OK) {
        printf("%s with %s: %lld steps, %lld examples in %.1f s of training (%.0f examples/s)\n",
               cfg.workload, cfg.algorithm, (long long)res.steps, (long long)res.examples,
               res.train_time_s, res.examples_per_s);
        printf("validation: accuracy %.4f (error %.4f), loss %.4f\n", res.validation.accuracy,
               res.validation.error_rate, res.validation.loss);
        printf("test:       accuracy %.4f (error %.4f), loss %.4f\n", res.test.accuracy,
               res.test.error_rate, res.test.loss);
        printf("backend:    %s\n", res.backend);
    }
    if (st != TB_OK) tb_cli_error("%s", err.message);
    return tb_cli_exit_code(st);
}
