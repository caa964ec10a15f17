#!/usr/bin/env python3
"""python_step.py: the step time of AdamW as a Python submission against the built-in adamw.

Runs one `trainbench bench` (self-tuning ruleset: every submission at its defaults, lr 1e-3,
weight decay 0.01) of the built-in adamw, examples/adamw_numpy.py and, when the embedded
interpreter imports torch, examples/adamw_torch.py on each base workload at 2 threads, a
budget of BUDGET timed seconds per trial; the bench interleaves the submissions of each
workload. Each trial evaluates every WINDOW steps (evals are untimed), so its accumulated
submission time is known at every WINDOW-th step; prints, per workload and submission, the
median and the fastest of those windows in ms per step and their ratios to the built-in's.
On a busy machine the fastest window is the one least slowed by others, the closest to the
machine's own speed. Not a test: run it by hand, on a quiet machine, and quote the ratios.

    python3 bench/python_step.py --build build --budget 10
    PYTHONPATH=/path/to/venv/lib/python3.11/site-packages python3 bench/python_step.py

Only Python's standard library is needed here (the submissions run in trainbench's own
embedded interpreter).
"""
import argparse
import json
import os
import subprocess
import tempfile

WORKLOADS = ["fmnist_mlp", "fmnist_cnn", "fmnist_autoencoder", "kjv_transformer",
             "wordnet_sparse"]
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--budget", type=float, default=10.0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--window", type=int, default=5, help="steps per window (default 5)")
    ap.add_argument("--rounds", type=int, default=3,
                    help="trials per submission and workload (studies; the bench runs them "
                         "in rounds, one of each submission per round, the order reversed "
                         "every other round; default 3)")
    ap.add_argument("--no-torch", action="store_true", help="leave the torch adapter out")
    ap.add_argument("-s", "--submission", action="append", default=[],
                    help="another submission file beside them, e.g. a variant of an example "
                         "under another SUBMISSION_NAME (repeatable)")
    ap.add_argument("-w", "--workload", action="append", help="repeatable (default: the five)")
    args = ap.parse_args()
    binary = os.path.join(args.build, "trainbench")
    subs = ["adamw", os.path.join(ROOT, "examples", "adamw_numpy.py")]
    if not args.no_torch:
        subs.append(os.path.join(ROOT, "examples", "adamw_torch.py"))
    subs += [os.path.abspath(s) for s in args.submission]
    workloads = args.workload or WORKLOADS
    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "step.db")
        cmd = [binary, "bench", "--db", db, "--name", "step", "--ruleset", "self",
               "--studies", str(args.rounds), "--budget", str(args.budget), "--eval-every-steps",
               str(args.window), "--eval-examples", "100", "--calibration-s", "-1",
               "-t", str(args.threads), "-q"]
        for s in subs:
            cmd += ["-s", s]
        for w in workloads:
            cmd += ["-w", w]
        subprocess.run(cmd, stdout=subprocess.DEVNULL, check=False)
        out = subprocess.run([binary, "export", "--db", db, "--format", "jsonl"],
                             capture_output=True, text=True, check=True).stdout
    trials = [json.loads(line) for line in out.splitlines() if line.strip()]
    print("windows of %d steps; trials of %g s, %d per submission and workload"
          % (args.window, args.budget, args.rounds))
    print("%-18s %-14s %6s %11s %7s %11s %7s %6s" % ("workload", "submission", "steps",
                                                   "median ms", "ratio", "fastest ms",
                                                   "ratio", "load"))
    for w in workloads:
        rows = {}
        for t in trials:
            if t["workload"] == w:
                rows.setdefault(t["submission"], []).append(t)
        stats = {name: windows(ts) for name, ts in rows.items()}
        base = stats.get("adamw")
        others = sorted(n for n in rows if n not in ("adamw", "adamw_numpy", "adamw_torch"))
        for name in ["adamw", "adamw_numpy", "adamw_torch"] + others:
            ts = rows.get(name)
            if not ts:
                continue
            if not stats.get(name):
                print("%-18s %-14s failed or no window: %s" % (w, name, ts[0]["reason"][:80]))
                continue
            med, fast = stats[name]
            r_med = "%.2fx" % (med / base[0]) if base else "-"
            r_fast = "%.2fx" % (fast / base[1]) if base else "-"
            load = sum(t.get("load_avg") or 0.0 for t in ts) / len(ts)
            print("%-18s %-14s %6d %11.2f %7s %11.2f %7s %6.1f" % (
                w, name, sum(t["steps"] for t in ts), med, r_med, fast, r_fast, load))


def windows(trials):
    """The median and the fastest ms per step over the windows between evals of the finished
    trials (each trial's first window, which holds init_optimizer_state and the first steps'
    warm-up, left out); None without a window."""
    per = []
    for t in trials:
        if t["status"] != "done":
            continue
        evals = [(e["global_step"], e["accumulated_submission_time"]) for e in t["evals"]]
        per += [1e3 * (b[1] - a[1]) / (b[0] - a[0])
                for a, b in zip(evals, evals[1:]) if b[0] > a[0]]
    if not per:
        return None
    per.sort()
    return per[len(per) // 2], per[0]


if __name__ == "__main__":
    main()
