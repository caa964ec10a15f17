#!/usr/bin/python3
"""calibrate.py: calibrates workload targets and budgets by the AlgoPerf procedure, scaled down.

For each workload: tune each baseline (AdamW; SGD with Nesterov momentum) with a quasi-random
(Halton) search over its learning rate (and AdamW's weight decay), each trial a run of
--search-time timed seconds; rerun the best configuration --reruns times with other seeds;
the validation target is the median over reruns of the best validation metric, the test target
the median final test metric; the budget is --budget-factor x the slowest rerun's time to reach
the target (rounded up to 10 s). Raw results (one row per evaluation) go to
docs/calibration/<workload>.csv, the summary to docs/calibration/summary.csv and a markdown
table to docs/calibration/table.md. Timing figures depend on the machine and its load.

usage: scripts/calibrate.py [--trials N] [--reruns N] [--search-time S] [--threads N]
                            [--binary PATH] [WORKLOAD ...]
"""
import argparse, csv, json, math, os, re, statistics, subprocess, sys, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BASES = ["fmnist_mlp", "fmnist_cnn", "fmnist_autoencoder", "kjv_transformer", "wordnet_sparse"]
LOWER_BETTER = True  # every current metric: error rate, loss, bits per character

def halton(i, base):
    f, r = 1.0, 0.0
    while i > 0:
        f /= base
        r += f * (i % base)
        i //= base
    return r

SPACES = {  # log10 ranges
    "adamw": {"learning_rate": (-4.0, -2.0), "weight_decay": (-5.0, -1.0)},
    "sgd": {"learning_rate": (-2.5, -0.5)},
}

def config(algo, i):
    hp = {}
    for d, (name, (lo, hi)) in enumerate(sorted(SPACES[algo].items())):
        hp[name] = 10 ** (lo + (hi - lo) * halton(i + 1, [2, 3, 5][d]))
    if algo == "sgd":
        hp["momentum"], hp["nesterov"] = 0.9, 1
    return hp

EVAL = re.compile(r"step \d+/\d+\s+([0-9.]+)s\s+validation \S+ ([-0-9.naninf]+)")

def run(args, workload, algo, hp, seed, max_time, eval_period):
    cmd = [args.binary, "train", "-w", workload, "-a", algo, "--json", "-s", str(seed),
           "-t", str(args.threads), "--max-time", str(max_time), "--eval-period",
           str(eval_period), "--steps", "1000000000", "--evals", "0", "--schedule", "constant"]
    if args.cache_dir:
        cmd += ["--cache-dir", args.cache_dir]
    for k, v in hp.items():
        cmd += ["--hp", "%s=%.6g" % (k, v)]
    p = subprocess.run(cmd, capture_output=True, text=True)
    evals = [(float(t), float(m)) for t, m in EVAL.findall(p.stderr)]
    try:
        res = json.loads(p.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        res = {"status": "failed", "error": p.stderr[-300:]}
    if res.get("status") == "ok":
        evals.append((res["train_time_s"], res["validation"]["metric"]))
    return evals, res

def best_of(evals):
    vals = [m for _, m in evals if not math.isnan(m)]
    return min(vals) if vals else float("inf")

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("workloads", nargs="*", default=BASES)
    ap.add_argument("--trials", type=int, default=8, help="search trials per baseline")
    ap.add_argument("--reruns", type=int, default=5, help="reruns of the best configuration")
    ap.add_argument("--search-time", type=float, default=180, help="timed seconds per run")
    ap.add_argument("--budget-factor", type=float, default=1.5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--binary", default=os.path.join(ROOT, "build", "trainbench"))
    ap.add_argument("--cache-dir", default=None)
    ap.add_argument("--out", default=os.path.join(ROOT, "docs", "calibration"))
    ap.add_argument("--variants", action="store_true",
                    help="calibrate the named variants (or all) by rerunning their base's "
                         "calibrated configuration (from summary.csv) --reruns times")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    summary_path = os.path.join(args.out, "summary.csv")
    summary = {}
    if os.path.exists(summary_path):
        with open(summary_path) as f:
            summary = {r["workload"]: r for r in csv.DictReader(f)}
    if args.variants:
        return calibrate_variants(args, summary, summary_path)
    for w in args.workloads:
        period = max(args.search_time / 8, 5)
        rows, trials = [], []
        for algo in SPACES:
            for i in range(args.trials):
                hp = config(algo, i)
                evals, res = run(args, w, algo, hp, 0, args.search_time, period)
                best = best_of(evals)
                trials.append((best, algo, hp))
                for t, m in evals:
                    rows.append(["search", algo, i, 0, json.dumps(hp), t, m, res.get("status")])
                print("%s search %s %d %s best %.4f" % (w, algo, i, hp, best), flush=True)
        best, algo, hp = min(trials, key=lambda x: x[0])
        summary[w] = rerun_and_summarize(args, w, algo, hp, rows, 2 * args.trials)
        write_summary(args, summary, summary_path)

VARIANTS = {"fmnist_mlp": ["fmnist_mlp_tanh", "fmnist_mlp_narrow"],
            "fmnist_cnn": ["fmnist_cnn_silu", "fmnist_cnn_nonorm"],
            "fmnist_autoencoder": ["fmnist_autoencoder_relu", "fmnist_autoencoder_mse"],
            "kjv_transformer": ["kjv_transformer_relu", "kjv_transformer_deep"],
            "wordnet_sparse": ["wordnet_sparse_wide", "wordnet_sparse_tanh"]}


def calibrate_variants(args, summary, summary_path):
    """A held-out variant takes its base's calibrated configuration (as AlgoPerf's variants
    are run with the baselines' settings): rerun it, target = median best, budget as above."""
    wanted = [w for w in args.workloads if w not in BASES] or \
        [v for b in BASES for v in VARIANTS[b]]
    for v in wanted:
        base = next(b for b in BASES if v in VARIANTS[b])
        if base not in summary:
            print("%s: base %s is not calibrated yet" % (v, base), flush=True)
            continue
        algo, hp = summary[base]["algorithm"], json.loads(summary[base]["hparams"])
        summary[v] = rerun_and_summarize(args, v, algo, hp, [], 0)
        write_summary(args, summary, summary_path)


def rerun_and_summarize(args, w, algo, hp, rows, trials):
    """Reruns (algo, hp) on workload w --reruns times with other seeds, writes every evaluation
    (after the search's `rows`) to <out>/<w>.csv and returns w's summary row: the validation
    target (median best over reruns), the test target (median final test metric) and the
    budget (--budget-factor x the slowest rerun's time to the target, rounded up to 10 s)."""
    period = max(args.search_time / 8, 5)
    reruns = []
    for r in range(args.reruns):
        evals, res = run(args, w, algo, hp, 1000 + r, args.search_time, period)
        reruns.append((evals, res))
        for t, m in evals:
            rows.append(["rerun", algo, r, 1000 + r, json.dumps(hp), t, m, res.get("status")])
    target = statistics.median(best_of(e) for e, _ in reruns)
    tests = [res["test"]["metric"] for _, res in reruns if res.get("status") == "ok"]
    test_target = statistics.median(tests) if tests else float("nan")
    ttt = []
    for evals, _ in reruns:
        hit = [t for t, m in evals if m <= target]
        ttt.append(hit[0] if hit else float("inf"))
    finite = [t for t in ttt if math.isfinite(t)]
    budget = math.ceil(args.budget_factor * max(finite) / 10) * 10 if finite else float("nan")
    with open(os.path.join(args.out, w + ".csv"), "w", newline="") as f:
        cw = csv.writer(f)
        cw.writerow(["phase", "algorithm", "trial", "seed", "hparams", "time_s",
                     "validation_metric", "status"])
        cw.writerows(rows)
    row = {"workload": w, "algorithm": algo, "hparams": json.dumps(hp),
           "validation_target": "%.4g" % target, "test_target": "%.4g" % test_target,
           "budget_s": budget, "median_time_to_target_s":
           "%.1f" % statistics.median(ttt) if finite else "inf",
           "reached": "%d/%d" % (len(finite), len(ttt)), "trials": trials,
           "reruns": args.reruns, "search_time_s": args.search_time,
           "date": time.strftime("%Y-%m-%d"), "load": "%.1f" % os.getloadavg()[0]}
    print(w, row, flush=True)
    return row


def write_summary(args, summary, summary_path):
    with open(summary_path, "w", newline="") as f:
        cw = csv.DictWriter(f, fieldnames=list(next(iter(summary.values())).keys()))
        cw.writeheader()
        for k in sorted(summary):
            cw.writerow(summary[k])
    with open(os.path.join(args.out, "table.md"), "w") as f:
        f.write("| workload | baseline | validation target | test target | budget (s) | "
                "median time to target (s) | reached | trials + reruns | load |\n")
        f.write("| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
        for k in sorted(summary):
            s = summary[k]
            f.write("| %s | %s %s | %s | %s | %s | %s | %s | %s + %s | %s |\n" % (
                k, s["algorithm"], s["hparams"], s["validation_target"], s["test_target"],
                s["budget_s"], s["median_time_to_target_s"], s["reached"], s["trials"],
                s["reruns"], s["load"]))


if __name__ == "__main__":
    main()
