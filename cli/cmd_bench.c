/* cmd_bench.c: `trainbench bench`: plan and run a time-to-result benchmark into a results
 * store (resuming it when run again), then print its score table. */
#include "cli.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char bench_usage[] =
    "usage: trainbench bench [options]\n"
    "\n"
    "Plans and runs a time-to-result benchmark (AlgoPerf's rules): submissions x workloads x\n"
    "studies x trials, each trial in its own process, every eval written to a SQLite results\n"
    "store. Running the same command again resumes: finished trials are reused, interrupted\n"
    "ones rerun from their start. Ends with the score table (see `trainbench score`).\n"
    "Under mpirun or srun, rank 0 owns the store and hands the trials to the other ranks\n"
    "(docs/DISTRIBUTED.md).\n"
    "\n"
    "options:\n"
    "      --db FILE             results store (default results.db; created if missing; a\n"
    "                            file: not \"\" nor :memory:)\n"
    "      --preset NAME         quick (default): 2 studies x 1 trial, 15 s budgets, quick\n"
    "                            targets, evals every 1 s on subsets (train 1000, validation\n"
    "                            and test 2000 examples); full: 5 x 5 with the workloads' own\n"
    "                            targets, budgets and eval periods, whole splits\n"
    "      --name NAME           benchmark name in the store (default: the preset's name)\n"
    "  -s, --submission SPEC     an optimizer name (built-in baseline, e.g. sgd, adamw), a\n"
    "                            path to a submission library (.so) or a Python submission\n"
    "                            (.py, AlgoPerf's functions; docs/SUBMISSIONS.md), or a\n"
    "                            preset (`trainbench algorithms` lists them, e.g.\n"
    "                            nadamw_self_tuning);\n"
    "                            repeatable (default: sgd and adamw); a library that\n"
    "                            crashes while loading is skipped and reported, the\n"
    "                            others run\n"
    "  -w, --workload ID         repeatable (default: every base workload; --variants adds\n"
    "                            their held-out variants)\n"
    "      --ruleset NAME        external (tuned from the search space; default) or self\n"
    "                            (no hyperparameters, 1.5x the budget)\n"
    "      --studies N           studies per submission and workload\n"
    "      --trials N            trials per study (external tuning)\n"
    "      --budget SECONDS      accumulated submission time per trial (overrides the\n"
    "                            workload's max runtime)\n"
    "      --eval-period SECONDS submission seconds between evals\n"
    "      --eval-every-steps N  evaluate after every N steps instead (the period off): the\n"
    "                            evals, and so the steps to target, fall at the same steps\n"
    "                            however fast the machine runs; for score --time steps or\n"
    "                            reference (default: the eval period, AlgoPerf's)\n"
    "      --eval-examples N     evaluate on N examples of each split, spread evenly over\n"
    "                            it (the train subset, validation and test); a validation\n"
    "                            subset at the target is confirmed on the whole split,\n"
    "                            and that evaluation is recorded and decides\n"
    "      --full-targets        the workloads' real targets even with --preset quick\n"
    "      --variants[=all]      also the held-out variants of every base workload, two\n"
    "                            each, as AlgoPerf's (15 workloads); =all: every variant,\n"
    "                            the studies' dropout and target ones too (with the\n"
    "                            default workloads only; with -w name the variants);\n"
    "                            score with --variant-rule\n"
    "      --run-to-budget       do not stop a trial at the target\n"
    "      --sampler NAME        how external tuning picks trial points: halton (default;\n"
    "                            every point planned up front, AlgoPerf's quasi-random\n"
    "                            search) or gp (Bayesian optimisation: a study's first\n"
    "                            --gp-initial points from the same Halton sequence, then\n"
    "                            each next one the point of largest expected improvement\n"
    "                            under a Gaussian process fitted to the study's finished\n"
    "                            trials; a study's trials run in turn, and a failed trial\n"
    "                            counts as the worst finished one; see docs/TUNING.md)\n"
    "      --gp-initial N        gp: Halton points per study before the first BO point\n"
    "                            (default 3, or 1 with a prior)\n"
    "      --prior-from-store    gp: pre-train the GP (mean, kernel, noise; HyperBO) on this\n"
    "                            submission's finished trials of the other workloads in the\n"
    "                            store when the benchmark is planned, and use it as the prior\n"
    "                            of every study (kept in the store for resumed runs)\n"
    "      --prior-workload ID   gp: pre-train on this workload's trials only (repeatable;\n"
    "                            implies --prior-from-store)\n"
    "      --seed N              seeds every trial's sources of variation (default 0)\n"
    TB_CLI_THREADS_HELP
    "      --jobs K              run K trials at once, each in its own process, the cores\n"
    "                            shared out (--threads: cores / K unless given); the store\n"
    "                            records each trial's jobs. Trials side by side are slower:\n"
    "                            scored times should come from --jobs 1 or --cpus\n"
    "      --cpus LIST           pin the trials to these CPUs (\"0-3,6\"), each job to an\n"
    "                            equal share of them (recorded with each trial)\n"
    "      --shard I/N           run shard I (from 0) of N only: the whole benchmark is\n"
    "                            planned, this run's share of its trials run (a job\n"
    "                            array's task, each into a store of its own); join the\n"
    "                            stores with `trainbench merge`\n"
    "      --worker-timeout S    under mpirun: a rank holding a trial that sends nothing\n"
    "                            for S seconds is lost and its trial re-queued, once\n"
    "                            (default 120)\n"
    "      --ranks-per-trial R   each trial data-parallel over R ranks (train --dist's\n"
    "                            gradient average; started as mpirun -np R, so mpirun on\n"
    "                            PATH), R at most the cores; each rank gets cores / (jobs x\n"
    "                            R) threads; built-in submissions, cpu only (default 1)\n"
    TB_CLI_DEVICE_HELP
    "      --hang-timeout SECONDS\n"
    "                            a trial whose process completes no step (nor eval) for\n"
    "                            this long is hung: killed and failed (default 300; a\n"
    "                            slow trial that makes progress is never killed)\n"
    "      --setup-timeout SECONDS\n"
    "                            the same for a trial's set-up (reading the data, building\n"
    "                            the model), which beats once it is done (default 1800, and\n"
    "                            at least the hang timeout)\n"
    "      --timeout SECONDS     an absolute wall-clock limit of one trial's process\n"
    "                            (default none); a trial past it is killed and failed;\n"
    "                            not below the budget (x1.5 self-tuning)\n"
    "      --calibration-s S     seconds of each calibration window, which times the\n"
    "                            workload's reference step (sgd at its batch size) for\n"
    "                            `score --time reference` (default 2; below 0: none)\n"
    "      --calibrate-every K   a workload's window is taken before its first trial run\n"
    "                            and again once K trials have run since (default 8)\n"
    "      --search-spaces DIR   where the built-ins' <name>.json search spaces are\n"
    "                            (default: search_spaces/ in " TB_CLI_SHARE_HELP ")\n"
    "      --space FILE          the search space of the one submission (-s) instead, e.g.\n"
    "                            an AlgoPerf baseline's tuning_search_space.json unedited\n"
    "                            (its names: docs/TUNING.md); a list of points runs\n"
    "                            min(points, --trials) trials per study, in file order\n"
    TB_CLI_DATA_HELP
    "      --json                print the score table as JSON on stdout\n"
    "  -q, --quiet               no line per trial\n"
    "  -h, --help                this help\n"
    "\n"
    "examples:\n"
    "  trainbench bench --preset quick --db results.db\n"
    "  trainbench bench --preset quick -s sgd -s build/submission_example.so --name mine\n"
    "  trainbench bench --preset quick -s adamw -s examples/adamw_numpy.py --name numpy\n"
    "  trainbench bench -w fmnist_mlp -s adamw --studies 1 --trials 8 --sampler gp --name bo\n"
    "  trainbench bench -w fmnist_mlp -s nadamw --trials 5 --name algoperf \\\n"
    "      --space tests/algoperf/prize_qualification_baselines/external_tuning/"
    "tuning_search_space.json\n"
    "  trainbench bench --ruleset self -s nadamw_self_tuning --name self\n";

enum {
    OPT_DB = 1000, OPT_PRESET, OPT_NAME, OPT_RULESET, OPT_STUDIES, OPT_TRIALS, OPT_BUDGET,
    OPT_EVAL_PERIOD, OPT_FULL_TARGETS, OPT_VARIANTS, OPT_RUN_TO_BUDGET, OPT_SEED,
    OPT_TIMEOUT, OPT_HANG, OPT_SETUP, OPT_EVAL_STEPS, OPT_CALIBRATION_S, OPT_CALIBRATE_EVERY,
    OPT_SPACES, OPT_JSON, OPT_SAMPLER, OPT_GP_INITIAL, OPT_PRIOR,
    OPT_PRIOR_WORKLOAD, OPT_SPACE, OPT_JOBS, OPT_CPUS, OPT_WORKER_TIMEOUT,
    OPT_SHARD,
    OPT_RANKS_PER_TRIAL,
};

static void show_trial(void *user, const tb_bench_event *e)
{
    (void)user;
    const tb_trial_record *t = e->trial;
    char hp[256] = "";
    int n = 0;
    for (int i = 0; i < t->hparams.count && n < (int)sizeof hp - 40; i++)
        n += snprintf(hp + n, sizeof hp - (size_t)n, "%s%s=%.3g", i ? " " : "",
                      t->hparams.names[i], t->hparams.values[i]);
    char what[700];
    if (t->status == TB_TRIAL_FAILED)
        snprintf(what, sizeof what, "FAILED: %s", t->reason);
    else if (t->reached)
        snprintf(what, sizeof what, "target reached in %.1f s (%lld steps)", t->time_to_target,
                 (long long)t->steps);
    else
        snprintf(what, sizeof what, "missed the target in %.1f s (%lld steps)",
                 t->submission_time, (long long)t->steps);
    fprintf(stderr, "[%d/%d] %s %s study %d trial %d%s: %s  {%s}\n", e->index, e->total,
            t->submission, t->workload, t->study, t->trial, e->reused ? " (done before)" : "",
            what, hp);
}

/* A --timeout below a trial's budget would kill every trial before its budget is spent. */
static int check_timeout(const tb_bench_spec *spec, double timeout)
{
    double factor = spec->ruleset == TB_RULESET_SELF ? TB_SELF_TUNING_BUDGET_FACTOR : 1.0;
    int n = spec->workloads ? spec->n_workloads : tb_bench_workload_count();
    for (int i = 0; i < n; i++) {
        tb_bench_workload bw;
        bool found = spec->workloads ? tb_bench_workload_find(spec->workloads[i], &bw)
                                     : tb_bench_workload_at(i, &bw);
        if (!found) continue; /* an unknown workload: the benchmark names it */
        if (!spec->workloads && !tb_bench_workload_default(&bw, spec->variants)) continue;
        double budget = (spec->budget_s > 0 ? spec->budget_s : bw.max_runtime_s) * factor;
        if (timeout < budget) {
            tb_cli_error("--timeout: %g s is below the budget of a %s trial (%g s of submission "
                         "time); every trial would be killed before its budget: give more "
                         "than the budget, with room for evals, or leave it out (the default: "
                         "no wall-clock limit, a trial is killed when it hangs)", timeout,
                         bw.workload, budget);
            return TB_EXIT_USAGE;
        }
    }
    return TB_EXIT_OK;
}

int tb_cli_bench(int argc, char **argv)
{
    tb_bench_spec spec = tb_bench_spec_default();
    tb_error err = {0};
    const char *db = "results.db", *preset = "quick", *name = NULL;
    const char *subs[64], *wls[64], *prior_wls[64];
    int n_subs = 0, n_wls = 0, n_prior_wls = 0;
    tb_bench_sampler sampler = TB_SAMPLER_HALTON;
    long gp_initial = 0;
    bool prior = false;
    bool json = false, quiet = false, full_targets = false;
    tb_bench_variants variants = TB_BENCH_VARIANTS_NONE;
    /* values given on the command line override the preset's */
    long studies = -1, trials = -1;
    int threads = 0;
    long jobs = 1;
    double worker_timeout = 0;
    const char *cpus = NULL;
    int64_t eval_examples = -1;
    double budget = -1, eval_period = -1, timeout = 0, hang = 0;
    bool run_to_budget = false;
    uint64_t seed = 0;
    tb_ruleset ruleset = TB_RULESET_EXTERNAL;
    char spaces_dir[4096];
    const char *spaces = tb_cli_share_path("search_spaces", spaces_dir, sizeof spaces_dir);
    const char *space_file = NULL;
    tb_cli_data data = {0};
    struct option opts[] = {
        {"db", required_argument, 0, OPT_DB},
        {"preset", required_argument, 0, OPT_PRESET},
        {"name", required_argument, 0, OPT_NAME},
        {"submission", required_argument, 0, 's'},
        {"workload", required_argument, 0, 'w'},
        {"ruleset", required_argument, 0, OPT_RULESET},
        {"studies", required_argument, 0, OPT_STUDIES},
        {"trials", required_argument, 0, OPT_TRIALS},
        {"budget", required_argument, 0, OPT_BUDGET},
        {"eval-period", required_argument, 0, OPT_EVAL_PERIOD},
        {"eval-examples", required_argument, 0, TB_OPT_EVAL_EXAMPLES},
        {"full-targets", no_argument, 0, OPT_FULL_TARGETS},
        {"variants", optional_argument, 0, OPT_VARIANTS},
        {"run-to-budget", no_argument, 0, OPT_RUN_TO_BUDGET},
        {"sampler", required_argument, 0, OPT_SAMPLER},
        {"gp-initial", required_argument, 0, OPT_GP_INITIAL},
        {"prior-from-store", no_argument, 0, OPT_PRIOR},
        {"prior-workload", required_argument, 0, OPT_PRIOR_WORKLOAD},
        {"seed", required_argument, 0, OPT_SEED},
        {"threads", required_argument, 0, 't'},
        {"jobs", required_argument, 0, OPT_JOBS},
        {"cpus", required_argument, 0, OPT_CPUS},
        {"worker-timeout", required_argument, 0, OPT_WORKER_TIMEOUT},
        {"shard", required_argument, 0, OPT_SHARD},
        {"ranks-per-trial", required_argument, 0, OPT_RANKS_PER_TRIAL},
        {"device", required_argument, 0, TB_OPT_DEVICE},
        {"timeout", required_argument, 0, OPT_TIMEOUT},
        {"hang-timeout", required_argument, 0, OPT_HANG},
        {"setup-timeout", required_argument, 0, OPT_SETUP},
        {"eval-every-steps", required_argument, 0, OPT_EVAL_STEPS},
        {"calibration-s", required_argument, 0, OPT_CALIBRATION_S},
        {"calibrate-every", required_argument, 0, OPT_CALIBRATE_EVERY},
        {"search-spaces", required_argument, 0, OPT_SPACES},
        {"space", required_argument, 0, OPT_SPACE},
        TB_CLI_DATA_OPTIONS,
        {"json", no_argument, 0, OPT_JSON},
        {"quiet", no_argument, 0, 'q'},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":s:w:t:qh", opts, NULL)) != -1) {
        if (tb_cli_data_option(c, &data)) continue;
        switch (c) {
        case OPT_DB:
            if (!tb_cli_check_db(optarg)) return TB_EXIT_USAGE;
            db = optarg;
            break;
        case OPT_PRESET: preset = optarg; break;
        case OPT_NAME: name = optarg; break;
        case 's':
            if (n_subs == 64) return tb_cli_error("too many submissions"), TB_EXIT_USAGE;
            subs[n_subs++] = optarg;
            break;
        case 'w':
            if (n_wls == 64) return tb_cli_error("too many workloads"), TB_EXIT_USAGE;
            wls[n_wls++] = optarg;
            break;
        case OPT_RULESET:
            if (tb_ruleset_parse(optarg, &ruleset, &err) != TB_OK)
                return tb_cli_error("--ruleset: %s", err.message), TB_EXIT_USAGE;
            break;
        case OPT_STUDIES:
            if (!tb_cli_parse_int("--studies", optarg, 1, 1000, &studies)) return TB_EXIT_USAGE;
            break;
        case OPT_TRIALS:
            if (!tb_cli_parse_int("--trials", optarg, 1, 1000, &trials)) return TB_EXIT_USAGE;
            break;
        case OPT_BUDGET:
            if (!tb_cli_parse_double("--budget", optarg, &budget)) return TB_EXIT_USAGE;
            if (budget <= 0) return tb_cli_error("--budget: must be positive"), TB_EXIT_USAGE;
            break;
        case OPT_EVAL_PERIOD:
            if (!tb_cli_parse_double("--eval-period", optarg, &eval_period)) return TB_EXIT_USAGE;
            if (eval_period <= 0)
                return tb_cli_error("--eval-period: must be positive"), TB_EXIT_USAGE;
            break;
        case TB_OPT_EVAL_EXAMPLES:
            if (!tb_cli_parse_eval_examples(optarg, &eval_examples)) return TB_EXIT_USAGE;
            break;
        case OPT_FULL_TARGETS: full_targets = true; break;
        case OPT_VARIANTS:
            if (!optarg || strcmp(optarg, "held-out") == 0) {
                variants = TB_BENCH_VARIANTS_HELD_OUT;
            } else if (strcmp(optarg, "all") == 0) {
                variants = TB_BENCH_VARIANTS_ALL;
            } else {
                tb_cli_error("--variants=%s: give --variants (the held-out variants) or "
                             "--variants=all (every variant)", optarg);
                return TB_EXIT_USAGE;
            }
            break;
        case OPT_RUN_TO_BUDGET: run_to_budget = true; break;
        case OPT_SAMPLER:
            if (tb_bench_sampler_parse(optarg, &sampler, &err) != TB_OK)
                return tb_cli_error("--sampler: %s", err.message), TB_EXIT_USAGE;
            break;
        case OPT_GP_INITIAL:
            if (!tb_cli_parse_int("--gp-initial", optarg, 1, 1000, &gp_initial))
                return TB_EXIT_USAGE;
            break;
        case OPT_PRIOR: prior = true; break;
        case OPT_PRIOR_WORKLOAD:
            if (n_prior_wls == 64) return tb_cli_error("too many prior workloads"), TB_EXIT_USAGE;
            prior_wls[n_prior_wls++] = optarg;
            prior = true;
            break;
        case OPT_SEED:
            if (!tb_cli_parse_u64("--seed", optarg, &seed)) return TB_EXIT_USAGE;
            break;
        case 't':
            if (!tb_cli_parse_threads(optarg, &threads)) return TB_EXIT_USAGE;
            break;
        case TB_OPT_DEVICE:
            if (!tb_cli_parse_device(optarg, &spec.trial.device)) return TB_EXIT_USAGE;
            break;
        case OPT_JOBS:
            if (!tb_cli_parse_int("--jobs", optarg, 0, TB_BENCH_CPUS_MAX, &jobs))
                return TB_EXIT_USAGE;
            if (jobs < 1)
                return tb_cli_error("--jobs: 0 jobs run no trial: give 1 (the default) to %d",
                                    TB_BENCH_CPUS_MAX), TB_EXIT_USAGE;
            break;
        case OPT_CPUS: cpus = optarg; break;
        case OPT_SHARD:
            if (tb_bench_shard_parse(optarg, &spec.shard, &spec.shards, &err) != TB_OK)
                return tb_cli_error("--shard: %s", err.message), TB_EXIT_USAGE;
            break;
        case OPT_RANKS_PER_TRIAL:
            if (!tb_cli_parse_ranks_per_trial(optarg, &spec.trial.ranks_per_trial))
                return TB_EXIT_USAGE;
            break;
        case OPT_WORKER_TIMEOUT:
            if (!tb_cli_parse_double("--worker-timeout", optarg, &worker_timeout))
                return TB_EXIT_USAGE;
            if (!(worker_timeout > 0))
                return tb_cli_error("--worker-timeout: must be positive (leave it out for the "
                                    "default, 120 s)"), TB_EXIT_USAGE;
            break;
        case OPT_TIMEOUT:
            if (!tb_cli_parse_double("--timeout", optarg, &timeout)) return TB_EXIT_USAGE;
            if (timeout <= 0)
                return tb_cli_error("--timeout: must be positive (leave it out for the default, "
                                    "no wall-clock limit)"), TB_EXIT_USAGE;
            break;
        case OPT_HANG:
            if (!tb_cli_parse_double("--hang-timeout", optarg, &hang)) return TB_EXIT_USAGE;
            if (hang <= 0)
                return tb_cli_error("--hang-timeout: must be positive (leave it out for the "
                                    "default, %g s)", TB_TRIAL_HANG_DEFAULT_S), TB_EXIT_USAGE;
            break;
        case OPT_SETUP:
            if (!tb_cli_parse_double("--setup-timeout", optarg, &spec.trial.setup_s))
                return TB_EXIT_USAGE;
            if (spec.trial.setup_s <= 0)
                return tb_cli_error("--setup-timeout: must be positive (leave it out for the "
                                    "default, %g s)", TB_TRIAL_SETUP_DEFAULT_S), TB_EXIT_USAGE;
            break;
        case OPT_EVAL_STEPS: {
            long every = 0;
            if (!tb_cli_parse_int("--eval-every-steps", optarg, 1, 1000000000L, &every))
                return TB_EXIT_USAGE;
            spec.trial.eval_every_steps = every;
            break;
        }
        case OPT_CALIBRATION_S:
            if (!tb_cli_parse_double("--calibration-s", optarg, &spec.calibration_s))
                return TB_EXIT_USAGE;
            if (spec.calibration_s == 0 || spec.calibration_s > 3600)
                return tb_cli_error("--calibration-s: a window's seconds, in (0, 3600], or "
                                    "below 0 for no windows (got %s)", optarg), TB_EXIT_USAGE;
            break;
        case OPT_CALIBRATE_EVERY: {
            long k;
            if (!tb_cli_parse_int("--calibrate-every", optarg, 1, 100000, &k))
                return TB_EXIT_USAGE;
            spec.calibrate_every = (int)k;
            break;
        }
        case OPT_SPACES: spaces = optarg; break;
        case OPT_SPACE: space_file = optarg; break;
        case OPT_JSON: json = true; break;
        case 'q': quiet = true; break;
        case 'h': fputs(bench_usage, stdout); return TB_EXIT_OK;
        default: return tb_cli_option_error("bench", c, argv);
        }
    }
    if (variants && optind < argc &&
        (strcmp(argv[optind], "all") == 0 || strcmp(argv[optind], "held-out") == 0)) {
        tb_cli_error("bench: unexpected argument '%s' (give --variants=%s, "
                     "with '=')", argv[optind], argv[optind]);
        return TB_EXIT_USAGE;
    }
    if (tb_cli_no_arguments("bench", argc, argv) != TB_EXIT_OK) return TB_EXIT_USAGE;
    if (!tb_cli_data_finish("bench", &data)) return TB_EXIT_USAGE;
    if (variants && n_wls > 0) {
        char named[512] = "";
        for (int i = 0; i < tb_bench_workload_count(); i++) {
            tb_bench_workload bw;
            if (!tb_bench_workload_at(i, &bw) || !bw.variant_of) continue;
            for (int j = 0; j < n_wls; j++)
                if (strcmp(bw.variant_of, wls[j]) == 0) {
                    strncat(named, named[0] ? ", " : "", sizeof named - strlen(named) - 1);
                    strncat(named, bw.workload, sizeof named - strlen(named) - 1);
                }
        }
        tb_cli_error("--variants adds variants to the default workloads only; with "
                     "-w, name the variants to run as workloads (%s%s; see `trainbench "
                     "workloads`)", named[0] ? "here: " : "the workloads named have none",
                     named);
        return TB_EXIT_USAGE;
    }
    if (sampler != TB_SAMPLER_GP && (gp_initial > 0 || prior)) {
        tb_cli_error("%s is a setting of the gp sampler: add --sampler gp",
                     gp_initial > 0 ? "--gp-initial" : "a prior (--prior-from-store, "
                                                       "--prior-workload)");
        return TB_EXIT_USAGE;
    }
    if (sampler == TB_SAMPLER_GP && ruleset == TB_RULESET_SELF) {
        tb_cli_error("--sampler gp tunes from search spaces: not with --ruleset self");
        return TB_EXIT_USAGE;
    }
    if (space_file && n_subs != 1) {
        tb_cli_error("--space gives one submission's search space: name that submission with "
                     "one -s (got %d)", n_subs);
        return TB_EXIT_USAGE;
    }
    if (space_file && ruleset == TB_RULESET_SELF) {
        tb_cli_error("--space is a search space, for external tuning: not with --ruleset self");
        return TB_EXIT_USAGE;
    }
    if (tb_bench_preset(preset, &spec, &err) != TB_OK) {
        tb_cli_error("--preset: %s", err.message);
        return TB_EXIT_USAGE;
    }
    static const char *default_subs[] = {"sgd", "adamw"};
    spec.name = name ? name : preset;
    spec.submissions = n_subs ? subs : default_subs;
    spec.n_submissions = n_subs ? n_subs : 2;
    spec.workloads = n_wls ? wls : NULL;
    spec.n_workloads = n_wls;
    spec.ruleset = ruleset;
    if (studies > 0) spec.studies = (int)studies;
    if (trials > 0) spec.trials = (int)trials;
    if (budget > 0) spec.budget_s = budget;
    if (eval_period > 0) spec.eval_period_s = eval_period;
    if (eval_examples > 0) {
        spec.trial.eval_validation_examples = eval_examples;
        spec.trial.eval_test_examples = eval_examples;
        spec.trial.eval_train_examples = eval_examples;
    }
    if (full_targets) spec.quick_targets = false;
    spec.variants = variants;
    spec.run_to_budget = run_to_budget;
    spec.seed = seed;
    spec.sampler = sampler;
    spec.gp_initial = (int)gp_initial;
    spec.gp_prior = prior;
    spec.prior_workloads = n_prior_wls ? prior_wls : NULL;
    spec.n_prior_workloads = n_prior_wls;
    spec.search_space_dir = spaces;
    spec.search_space_file = space_file;
    spec.trial.threads = threads;
    spec.trial.timeout_s = timeout;
    spec.trial.hang_s = hang;
    spec.trial.data_dir = data.data_dir;
    spec.trial.cache_dir = data.cache_dir;
    if (timeout > 0 && check_timeout(&spec, timeout) != TB_EXIT_OK) return TB_EXIT_USAGE;
    spec.worker_timeout_s = worker_timeout;
    if (tb_dist_launched()) /* the ranks are the jobs: their layout gives the threads */
        return tb_cli_bench_ranks(db, &spec, jobs, cpus, quiet ? NULL : show_trial, json);
    if (tb_cli_bench_jobs(jobs, cpus, &spec) != TB_EXIT_OK) return TB_EXIT_USAGE;
    threads = spec.trial.threads;

    char busy[400];
    if (tb_machine_busy(threads * (int)jobs, busy, sizeof busy))
        fprintf(stderr, "warning: %s; times measured now will be slower and noisier, and "
                        "trials likely flagged contended (see `trainbench score`)\n", busy);
    tb_bench_summary sum;
    tb_status st = tb_bench_run(db, &spec, quiet ? NULL : show_trial, NULL, &sum, &err);
    if (st != TB_OK) {
        tb_cli_error("%s", err.message);
        return tb_cli_exit_code(st);
    }
    for (const char *line = sum.notes; *line;) { /* one "note:" per line */
        const char *end = strchr(line, '\n');
        int len = end ? (int)(end - line) : (int)strlen(line);
        fprintf(stderr, "note: %.*s\n", len, line);
        line += len + (end ? 1 : 0);
    }
    fprintf(stderr, "%d trials: %d run now, %d reused from %s, %d failed\n", sum.planned,
            sum.ran, sum.reused, db, sum.failed);
    if (sum.skipped)
        fprintf(stderr, "%d submission%s skipped, not scored: %s\n", sum.skipped,
                sum.skipped > 1 ? "s" : "", sum.skipped_reasons);
    fputc('\n', stderr);
    return tb_cli_print_scores(db, spec.name, NULL, false, TB_TIME_WALL, json);
}
