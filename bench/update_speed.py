#!/usr/bin/env python3
"""update_speed.py: trainbench's update step against its PyTorch reference, side by side.

    python bench/update_speed.py --algorithm muon --threads 2 --rounds 3 --steps 5 [--build build]

Alternates build/bench_update and bench/torch_update.py (the same shapes, threads, steps and
warm-up) --rounds times, so that a busy machine slows both alike, and prints each round's
milliseconds per update and the ratio of the medians (trainbench / torch; below 1: trainbench
is faster). Run it with the interpreter that has torch (and pytorch-optimizer for soap).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def run(cmd):
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])["ms_per_update"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--algorithm", required=True)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    a = ap.parse_args()
    common = ["--algorithm", a.algorithm, "--threads", str(a.threads), "--steps", str(a.steps),
              "--warmup", str(a.warmup)]
    tb, pt = [], []
    for r in range(a.rounds):
        tb.append(run([os.path.join(a.build, "bench_update")] + common))
        pt.append(run([sys.executable, os.path.join(HERE, "torch_update.py")] + common))
        print("round %d: trainbench %.1f ms, torch %.1f ms" % (r + 1, tb[-1], pt[-1]))
    ratio = statistics.median(tb) / statistics.median(pt)
    print(json.dumps({"algorithm": a.algorithm, "threads": a.threads,
                      "trainbench_ms": statistics.median(tb), "torch_ms": statistics.median(pt),
                      "ratio": round(ratio, 3)}))


if __name__ == "__main__":
    main()
