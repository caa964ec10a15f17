/* test_cli.c: the trainbench command as a user runs it: help, exit codes, messages. */
#include "testutil.h"

#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char out[65536];

/* Runs the binary with args (shell syntax), captures stdout+stderr; returns the exit code. */
static int run(const char *args) { return tb_test_run_cli(args, out, sizeof out); }

static bool has(const char *needle) { return tb_test_output_has(out, needle); }

int main(void)
{
    CHECK(run("--help") == 0 && has("train") && has("exit codes"));
    CHECK(run("") == 2);
    CHECK(run("frobnicate") == 2 && has("unknown command 'frobnicate'"));
    CHECK(run("train --help") == 0 && has("--workload") && has("--seed-init"));
    CHECK(run("train --bogus") == 2 && has("unknown option '--bogus'"));
    CHECK(run("train --lr fast") == 2 && has("--lr: 'fast' is not a number"));
    CHECK(run("train --lr") == 2 && has("needs a value"));
    CHECK(run("train --epochs -1") == 2 && has("--epochs"));
    CHECK(run("train --epochs 1e17 -q") == 2 && has("1e+17 epochs are") &&
          has("give fewer epochs") && !has("no steps"));
    CHECK(run("train --seed-init x") == 2 && has("--seed-init: 'x'"));
    /* a name with a quote stays valid JSON */
    CHECK(run("train -w 'a\"b' --json") == 2 && has("{\"workload\":\"a\\\"b\""));
    CHECK(run("train --hp learning_rate=-1 --steps 5 -q") == 2 && has("learning_rate = -1"));
    CHECK(run("train --algorithm adamax --steps 5 -q") == 2 && has("unknown algorithm"));
    CHECK(run("train --data-dir /nonexistent --steps 5 -q") == 3 &&
          has("the data directory /nonexistent"));
    /* without a GPU (or a CUDA build) a clear message and exit 3; with one, a normal run */
    int rc = run("train --device cuda --steps 5 -q");
    CHECK(rc == 0 || (rc == 3 && (strstr(out, "no CUDA device") ||
                                  strstr(out, "built without cuda support"))));
    CHECK(run("train --help") == 0 && has("--cuda-graph"));
    CHECK(run("train --cuda-graph --steps 5 -q") == 2 && has("--cuda-graph needs --device cuda"));
    rc = run("train --device cuda --cuda-graph --steps 5 -q");
    CHECK(rc == 0 || (rc == 3 && (strstr(out, "no CUDA device") ||
                                  strstr(out, "built without cuda support"))));
    CHECK(run("train --precision fp16 --steps 5 -q") == 2 && has("unknown precision 'fp16'"));
    CHECK(run("train --precision bf16 --steps 5 -q") == 3 && has("fp32 only"));
    CHECK(run("train --steps 10 --threads 2 -q --json --eval-examples 500") == 0 &&
          has("\"status\":\"ok\"") &&
          has("\"seeds\":{\"init\":0") && has("\"test\":{\"accuracy\":"));
    CHECK(run("train --algorithm sgd --lr 1e5 --steps 300 -q") == 4 && has("diverged"));
    /* divergence by the last step's update: exit 4, diverged in valid JSON (no NaN in it) */
    CHECK(run("train -w fmnist_mlp_narrow -a sgd --lr 1e5 --schedule constant --steps 1 "
              "--evals 0 --eval-examples 100 --json -q") == 4 &&
          has("\"status\":\"numeric\"") && has("\"diverged\":true") &&
          has("after the last step") && !has("nan") && !has("inf,"));
    CHECK(run("train -w fmnist_mlp_narrow -a sgd --lr 1e5 --schedule constant --steps 2 "
              "--evals 0 --eval-examples 100 --json -q") == 4 &&
          has("\"diverged\":true") && has("at step 2") && !has("nan"));
    /* a numeric failure inside a step is a divergence: exit 4, and the JSON agrees */
    CHECK(run("train -w fmnist_mlp_narrow -a kfac --hp damping=1e-36 --steps 2 --evals 0 "
              "--eval-examples 100 --json -q") == 4 &&
          has("\"status\":\"numeric\"") && has("\"diverged\":true") &&
          has("the run diverged at step 1: kfac: damping = 1e-36"));
    /* a damping that cannot work in float32 is refused before training: exit 2, named */
    CHECK(run("train --lr 1e-300 --steps 2 -q") == 2 &&
          has("learning_rate = 1e-300 is 0 in float32"));
    CHECK(run("train -a kfac --hp damping=1e-300 --steps 2 -q") == 2 &&
          has("damping = 1e-300 is below float32's smallest normal number"));
    /* the result lists every hyperparameter the run used, given and defaults, and marks the
     * defaults (it listed only the given ones) */
    CHECK(run("train -a adamw --lr 0.01 --steps 1 --evals 0 --eval-examples 100 --json -q") ==
              0 && has("\"hparams\":{\"learning_rate\":0.01") && has(",\"epsilon\":1e-08,") &&
          has("\"default_hparams\":[\"beta1\",\"beta2\",\"epsilon\",\"weight_decay\"]"));
    CHECK(run("train -a sgd --hp nesterov=0 --steps 1 --evals 0 --eval-examples 100 -q") == 0 &&
          has("hparams:    nesterov=0; defaults: learning_rate=0.1, momentum=0.9, "
              "weight_decay=0\n"));
    /* non-finite numbers are written as null: JSON has no NaN */
    CHECK(run("train -a sgd --hp momentum=nan --steps 1 --json -q") == 2 &&
          has("\"hparams\":{\"momentum\":null}"));
    /* the op profile: a table in text, an array in JSON */
    CHECK(run("train --steps 5 --evals 1 --eval-examples 200 -q --profile") == 0 &&
          has("profile:") && has("linear") && has("rest (update, input)"));
    CHECK(run("train --steps 5 --evals 1 --eval-examples 200 -q --json --profile") == 0 &&
          has("\"profile\":[{\"op\":\"") && has("\"calls\":"));
    /* sharpness: its cost in --help; settings that do nothing or cannot be measured refused;
     * every measurement in the JSON, a line on stderr each, a summary in text */
    CHECK(run("train --help") == 0 && has("--sharpness-every N") &&
          has("2K gradient") && has("--sharpness-iters K"));
    CHECK(run("train --sharpness-iters 5 -q") == 2 &&
          has("--sharpness-iters does nothing without --sharpness-every"));
    CHECK(run("train --sharpness-every 0 -q") == 2 && has("--sharpness-every"));
    CHECK(run("train --sharpness-every 5 --sharpness-iters 0 -q") == 2 &&
          has("--sharpness-iters"));
    CHECK(run("train --sharpness-every 5 --sharpness-fd-scale 0 -q") == 2 &&
          has("outside (0, 0.1]"));
    CHECK(run("train -w fmnist_mlp_narrow -a lars --steps 2 --sharpness-every 1 -q") == 2 &&
          has("lars has none"));
    CHECK(run("train -w fmnist_mlp_narrow -a adam --steps 2 -b 16 --evals 0 --eval-examples 100 "
              "--sharpness-every 2 --sharpness-iters 2 --sharpness-batch 16 --json") == 0 &&
          has("\"sharpness\":{\"every\":2,\"batch\":16") && has("\"lambda_max\":") &&
          has("\"preconditioned_max\":") && has("  step 2  sharpness ") && !has("nan"));
    CHECK(run("train -w fmnist_mlp_narrow -a momentum --steps 2 -b 16 --evals 0 "
              "--schedule constant --eval-examples 100 --sharpness-every 1 "
              "--sharpness-iters 2 -q") == 0 &&
          has("sharpness:  2 measurements") && has("stability threshold 38 at lr 0.1"));
    /* studies: configuration errors exit 2 before any training */
    CHECK(run("compare -A adamw -B sgdd -q") == 2 && has("side B: unknown algorithm 'sgdd'"));
    CHECK(run("compare -A adamw -B sgd --hp-b momentun=0.9 -q") == 2 && has("momentun"));
    tb_test_write_text("/tmp/tb_test_cli_space.json",
               "{\"learning_rat\": {\"min\": 0.01, \"max\": 0.1, \"scaling\": \"log\"}}");
    CHECK(run("compare -A adamw -B sgd --search 2 --space-b /tmp/tb_test_cli_space.json -q") == 2 &&
          has("search space of sgd") && has("learning_rat"));
    remove("/tmp/tb_test_cli_space.json");
    /* a search-space file is named in its errors, with the reason; malformed JSON exits 2, as
     * in bench (it said "sgd: malformed JSON at line 1, column 1" and exited 1) */
    tb_test_write_text("/tmp/tb_test_cli_bad.json", "root:x:0:0:root:/root:/bin/bash\n");
    CHECK(run("compare -A adamw -B sgd --search 2 --space-b /tmp/tb_test_cli_bad.json -q") == 2 &&
          has("search space /tmp/tb_test_cli_bad.json (sgd): malformed JSON at line 1"));
    remove("/tmp/tb_test_cli_bad.json");
    CHECK(run("compare -A adamw -B sgd --search 2 --space-b /nonexistent/s.json -q") == 2 &&
          has("cannot open search space /nonexistent/s.json: No such file or directory"));
    CHECK(run("compare -A adamw -B sgd --search 2 --space-b /tmp -q") == 2 &&
          has("search space /tmp: is a directory"));
    CHECK(run("variance --sources init,init -q") == 2 && has("'init' is listed twice"));
    CHECK(run("variance --sources '' -q") == 2 && has("--sources: the list is empty"));
    /* an error rate of a workload that does not classify is refused before any training */
    CHECK(run("variance -w fmnist_autoencoder -m validation_error") == 2 &&
          has("fmnist_autoencoder has no error rate") && !has("[1/"));
    CHECK(run("compare -A sgd -B adamw -w fmnist_autoencoder -m test_error") == 2 &&
          has("fmnist_autoencoder has no error rate") && !has("[1/"));
    /* a share of an "all" std of 0 is undefined, shown as "-" (it printed -nan% and inf%):
     * with this seed both "all" runs misclassify the one example evaluated */
    CHECK(run("variance -w fmnist_mlp --steps 1 -n 2 --sources dropout -q") == 2 &&
          has("source dropout does not vary: fmnist_mlp has no dropout") && !has("[1/"));
    CHECK(run("variance -w fmnist_mlp --steps 1 -n 2 --sources hparam -q") == 2 &&
          has("source hparam does not vary") && has("--search N") && !has("[1/"));
    CHECK(run("variance -w fmnist_mlp --steps 1 -n 2 --sources hparam --search 2 "
              "--space /nonexistent/s.json -q") == 2 && has("/nonexistent/s.json"));
    CHECK(run("variance -w fmnist_mlp --steps 1 -n 2 --sources init -m validation_error "
              "--eval-examples 1 --threads 2 -q -s 3") == 0 &&
          has("(std / all: - where it is undefined") && !has("nan") && !has("inf"));
    CHECK(run("variance -m time_to_target -q") == 2 && has("cannot use time_to_target"));
    CHECK(run("compare --help") == 0 && has("Clopper-Pearson") && !has("Noether"));
    /* a side that diverges loses its pairs; the text says so, the JSON has null, not inf */
    const char *diverging = "compare -A adamw -B sgd --lr-b 1e5 --steps 3 --pairs 2 "
                            "--eval-examples 200 --threads 2 -q";
    CHECK(run(diverging) == 0 && has("2 of 2 runs diverged") && has("wins 2, ties 0, losses 0"));
    char cmd[256];
    snprintf(cmd, sizeof cmd, "%s --json", diverging);
    CHECK(run(cmd) == 0 && has("\"b_values\":[null,null]") && has("\"wins\":2") &&
          has("\"failed_b\":2") && has("\"runs_needed\":49") && !has("inf") && !has("nan"));
    /* --budget: without a length the schedule spans the workload's step hint (2000 steps for
     * fmnist_mlp_narrow), not the billion steps that kept the run in warmup; with one, it */
    CHECK(run("train -w fmnist_mlp_narrow -a sgd --budget --max-time 0.01 --eval-examples 100 "
              "--json -q") == 0 &&
          has("\"schedule\":{\"kind\":\"warmup_cosine\",\"warmup_steps\":100,"
              "\"total_steps\":2000}"));
    CHECK(run("train -w fmnist_mlp_narrow -a sgd --budget --steps 60 --max-time 0.01 "
              "--eval-examples 100 --json -q") == 0 &&
          has("\"warmup_steps\":3,\"total_steps\":60}"));
    CHECK(run("train --help") == 0 && has("the workload's step hint"));
    /* fresh examples are those delivered in batches, not those waiting in the shuffle buffer;
     * a buffer larger than the training set is refused */
    CHECK(run("train --steps 10 --shuffle-buffer 1000 --evals 0 --eval-examples 100 --json -q") ==
              0 && has("\"examples\":1280") && has("\"fresh_examples\":1280"));
    /* a slow upstream stated in step times: the delay measured and reported */
    CHECK(run("train -w fmnist_mlp_narrow --steps 6 --evals 0 --eval-examples 100 -b 32 "
              "--slow-upstream 2x --json -t 1") == 0 && has("slow upstream: 2x the step time") &&
          has("\"upstream_delay_s\":") && !has("\"upstream_delay_s\":0,"));
    CHECK(run("train --steps 10 --shuffle-buffer 100000 -q") == 2 &&
          has("shuffle buffer 100000 exceeds the 55000 training examples"));
    CHECK(run("train --help") == 0 && has("at most the\n") && has("training examples, else"));
    /* values that did nothing, or something else than --help says, are refused */
    const char *refused[][2] = {
        {"train --max-time -1 -q", "--max-time: must be positive"},
        {"train --max-time 0 -q", "--max-time: must be positive"},
        {"train --eval-period -1 -q", "--eval-period: must be positive"},
        {"train --eval-period 0 -q", "--eval-period: must be positive"},
        {"train --echo example --echo-factor 0 -q", "--echo-factor: 0 is outside [1, 1000]"},
        {"train --slow-upstream 0x -q", "--slow-upstream: 0x: the multiple of the step time"},
        {"train --slow-upstream -2x -q", "--slow-upstream: -2x: the multiple"},
        {"train --slow-upstream twox -q", "--slow-upstream: 'two' is not a number"},
        {"train --echo none --echo-factor 3.7 -q", "give --echo example_before_augment"},
        {"train --echo-factor 2 -q", "--echo-factor 2 does nothing without echoing"},
        {"train --prefetch 0 -q", "give 1 to 64, or -1"},
        {"variance --epochs zero -q", "--epochs: 'zero' is not a number"},
        {"compare -A sgd -B adamw --epochs 0 -q", "--epochs: must be positive"},
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++)
        if (!CHECK(run(refused[i][0]) == 2 && has(refused[i][1])))
            fprintf(stderr, "for: trainbench %s\n", refused[i][0]);
    CHECK(run("train --help") == 0 && has("(1 to 64,\n") && has("S > 0; default:\n") &&
          has("then always the final one"));
    /* --evals N: N evaluations during the run, then the final one */
    CHECK(run("train --steps 4 --evals 1 --eval-examples 100 --json -q") == 0 &&
          has("\"evaluations\":2,"));
    CHECK(run("train --steps 4 --evals 0 --eval-examples 100 --json -q") == 0 &&
          has("\"evaluations\":1,"));
    /* without HOME and XDG_CACHE_HOME (or with only a relative one) neither prepare nor train
     * has a cache directory: both exit 2 before any work, unless --cache-dir is given */
    char *home = getenv("HOME"), *xdg = getenv("XDG_CACHE_HOME");
    char saved_home[1024] = "", saved_xdg[1024] = "";
    if (home) snprintf(saved_home, sizeof saved_home, "%s", home);
    if (xdg) snprintf(saved_xdg, sizeof saved_xdg, "%s", xdg);
    unsetenv("HOME");
    setenv("XDG_CACHE_HOME", "relative", 1);
    CHECK(run("prepare fmnist_mlp") == 2 && has("prepare: no cache directory") &&
          has("give --cache-dir DIR"));
    CHECK(run("train --steps 1 -q") == 2 && has("train: no cache directory") &&
          has("give --cache-dir DIR") && !has("validation"));
    CHECK(run("train --steps 1 --evals 0 --eval-examples 100 -q --cache-dir /tmp") == 0);
    if (home) setenv("HOME", saved_home, 1);
    if (xdg) setenv("XDG_CACHE_HOME", saved_xdg, 1);
    else unsetenv("XDG_CACHE_HOME");
    CHECK(run("train --help") == 0 && has("HOME nor XDG_CACHE_HOME the\n") &&
          has("command exits 2 unless given"));
    /* every name is checked before any work: nothing is prepared for a list with a typo */
    char cache[] = "/tmp/tb_cli_prepare_XXXXXX", args[256];
    if (CHECK(mkdtemp(cache) != NULL)) {
        snprintf(args, sizeof args, "prepare --cache-dir %s wordnet_sparse nosuch", cache);
        CHECK(run(args) == 2 && has("unknown workload 'nosuch'") &&
              has("nothing was prepared") && !has("built"));
        snprintf(args, sizeof args, "%s/wordnet-glosses.tbcache", cache);
        CHECK(access(args, F_OK) != 0);
        rmdir(cache);
    }
    CHECK(run("workloads") == 0 && has("fmnist_mlp") && has("dataset-fashion-mnist"));
    /* the Bible needs its text and the program that reads it (docs/WORKLOADS.md) */
    CHECK(has("bits_per_char") && has("  bible-kjv-text bible-kjv\n"));
    /* a workload without accuracy (reconstruction loss) reports neither NaN nor the loss twice */
    CHECK(run("train -w fmnist_autoencoder --steps 2 --evals 1 --eval-examples 100 -q") == 0 &&
          has("validation: loss ") && !has("nan") && !has(", loss"));
    /* an evaluation subset of a bootstrap split: spread over the shuffled split, every class
     * in it (the first 200 of the class-sorted sets were class 0 only: error rate 1) */
    CHECK(run("train -w fmnist_mlp --steps 5 --split bootstrap --seed-split 1 --eval-examples 200 "
              "--json -q") == 0 &&
          has("\"validation\":{\"accuracy\":") && has("\"test\":{\"accuracy\":") &&
          strstr(out, "\"error_rate\":1.000000") == NULL);
    CHECK(run("train --help") == 0 && has("spread evenly over it"));
    /* the target is calibrated on the whole validation split: a 1-example subset at it (the
     * stop was at the first eval, step 4, reached_target true) is confirmed on the whole split
     * first, which 40 steps do not reach */
    CHECK(run("train -w fmnist_mlp --steps 40 --stop-at-target --eval-examples 1 --evals 10 "
              "--json -q") == 0 &&
          has("\"steps\":40,") && has("\"reached_target\":false"));
    CHECK(run("train --help") == 0 && has("a subset at the target is confirmed"));
    CHECK(run("algorithms") == 0 && has("adamw") && has("beta2") && has("nesterov"));
    CHECK(run("version") == 0 && has("trainbench ") && has("(code "));
    CHECK(run("help export") == 0 && has("usage: trainbench export"));
    CHECK(run("help nope") == 2 && has("unknown command 'nope'"));
    CHECK(run("train --seed ' -1'") == 2 && has("' -1' is not a non-negative whole number"));
    return tb_test_finish("test_cli");
}
