#!/usr/bin/env python3
"""contention.py: the training step beside a competing busy process, side by side in one run.

Starts one busy process (a shell loop pinned to the last core with taskset) and times
build/bench_step at 1 and 2 threads under each OpenMP wait policy and each split of the large
products (the dynamic split, the default, against --static-split, one block per thread), the
configurations alternated round by round so that drift hits them alike. Prints, per workload,
the median ms/step of each configuration over the rounds and the ratio of 2 threads to 1 thread
(below 1: the second thread helps even with its core taken). --idle leaves the busy process out,
for the same table on the machine as it is.

    bench/contention.py                                   # transformer and MLP, 5 rounds
    bench/contention.py --workloads fmnist_cnn --rounds 3 --policies default,short
    bench/contention.py --idle                            # no competing process

The wait policies (environment of each bench_step run): default is libgomp's own (spin about
300000 times, then sleep: GOMP_SPINCOUNT=300000), short spins GOMP_SPINCOUNT=--short-spin times
(2000 by default: the trainbench command's and bench_step's own choice, docs/SPEED.md), passive is
OMP_WAIT_POLICY=passive (sleep at once). Not a test: docs/SPEED.md quotes its output.
"""
import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH_STEP = os.path.join(ROOT, "build", "bench_step")


def policy_env(policy, short_spin):
    env = dict(os.environ)
    for k in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT"):
        env.pop(k, None)
    if policy == "default":
        env["GOMP_SPINCOUNT"] = "300000"
    elif policy == "short":
        env["GOMP_SPINCOUNT"] = str(short_spin)
    elif policy == "passive":
        env["OMP_WAIT_POLICY"] = "passive"
    else:
        raise SystemExit(f"contention.py: unknown policy {policy!r} (default, short, passive)")
    return env


def step_ms(workload, threads, static, env, steps, warmup):
    cmd = [BENCH_STEP, "--workload", workload, "--threads", str(threads), "--steps", str(steps),
           "--warmup", str(warmup)] + (["--static-split"] if static else [])
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed: {out.stderr.strip()[-300:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])["ms_per_step"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workloads", default="kjv_transformer,fmnist_mlp")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--policies", default="default,short,passive")
    ap.add_argument("--short-spin", type=int, default=2000)
    ap.add_argument("--splits", default="dynamic,static")
    ap.add_argument("--idle", action="store_true", help="no competing busy process")
    a = ap.parse_args()
    policies = a.policies.split(",")
    splits = a.splits.split(",")
    configs = [(p, s, t) for p in policies for s in splits for t in (1, 2)]
    busy = None
    if not a.idle:
        core = str(os.cpu_count() - 1)
        busy = subprocess.Popen(["taskset", "-c", core, "sh", "-c", "while :; do :; done"])
    times = {}
    try:
        for r in range(a.rounds):
            for w in a.workloads.split(","):
                order = configs[r % len(configs):] + configs[:r % len(configs)]
                for (p, s, t) in order:
                    ms = step_ms(w, t, s == "static", policy_env(p, a.short_spin), a.steps,
                                 a.warmup)
                    times.setdefault((w, p, s, t), []).append(ms)
            print(f"round {r + 1}/{a.rounds} done", file=sys.stderr)
    finally:
        if busy:
            busy.kill()
            busy.wait()
    with open("/proc/loadavg") as f:
        load = f.read().split()[0]
    print(f"{datetime.datetime.utcnow():%Y-%m-%d %H:%M} UTC, "
          f"{'no competing process' if a.idle else 'one busy process on the last core'}, "
          f"{a.rounds} rounds of {a.steps} steps, load average at the end {load}")
    print("\n| workload | wait policy | split | 1 thread ms | 2 threads ms | 2 / 1 |")
    print("| --- | --- | --- | ---: | ---: | ---: |")
    for w in a.workloads.split(","):
        for p in policies:
            for s in splits:
                one = statistics.median(times[(w, p, s, 1)])
                two = statistics.median(times[(w, p, s, 2)])
                print(f"| {w} | {p} | {s} | {one:.1f} | {two:.1f} | {two / one:.2f} |")


if __name__ == "__main__":
    main()
