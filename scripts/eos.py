#!/usr/bin/python3
"""eos.py: the adaptive edge of stability (Cohen et al. 2022, "Adaptive Gradient Methods at the
Edge of Stability", arXiv 2207.14484), checked with `trainbench train`.

Full-batch Adam (beta1 = 0.9, no weight decay, constant step size eta) at several step sizes:
its preconditioned sharpness lambda_1(P^-1 H) should rise to its stability threshold 38/eta
and hover there; full-batch gradient descent (sgd with momentum 0) at several step sizes: its
sharpness lambda_1(H) at 2/eta. Each run is `trainbench train --full-batch N
--sharpness-every K --json` (the Hessian of the loss on the run's own N examples,
docs/CURVATURE.md); per run this prints the median, over the measurements in the last
--tail fraction of its steps, of the ratio of the sharpness (preconditioned for Adam) to the
threshold, with its range, and writes the curve (every measurement of every run) to
OUT/eos.csv and the summary to OUT/eos_summary.csv. A ratio near 1 at every step size is the
paper's finding; its runs are far longer (thousands of steps) on CIFAR-10 subsets.

usage: scripts/eos.py [--workload W] [--full-batch N] [--steps S] [--every K] [--iters I]
                      [--adam LR,LR,...] [--gd LR,LR,...] [--tail F] [--scale X]
                      [--threads T] [--binary PATH] [--out DIR]
"""
import argparse, csv, json, os, statistics, subprocess, sys, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def parse_args():
    a = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    a.add_argument("--workload", default="fmnist_mlp_tanh",
                   help="a smooth model: central differences across ReLU kinks mislead")
    a.add_argument("--full-batch", type=int, default=256, help="training examples")
    a.add_argument("--steps", type=int, default=600)
    a.add_argument("--every", type=int, default=30, help="steps between measurements")
    a.add_argument("--iters", type=int, default=10, help="Lanczos steps per quantity")
    a.add_argument("--adam", default="1e-4,3e-4,1e-3", help="Adam's step sizes")
    a.add_argument("--gd", default="0.03,0.1", help="gradient descent's step sizes")
    a.add_argument("--tail", type=float, default=0.5,
                   help="the last part of training the median ratio is taken over")
    a.add_argument("--scale", type=float, default=1.0,
                   help="multiply --steps and --every (at least 1 step) by this")
    a.add_argument("--threads", type=int, default=1)
    a.add_argument("--binary", default=os.path.join(ROOT, "build", "trainbench"))
    a.add_argument("--out", default="eos-out")
    args = a.parse_args()
    args.steps = max(1, round(args.steps * args.scale))
    args.every = max(1, round(args.every * args.scale))
    if not 0 < args.tail <= 1:
        a.error("--tail must be in (0, 1]")
    return args


def run(args, algo, lr):
    cmd = [args.binary, "train", "-w", args.workload, "--full-batch", str(args.full_batch),
           "--steps", str(args.steps), "--schedule", "constant", "--lr", repr(lr),
           "--hp", "weight_decay=0", "--sharpness-every", str(args.every),
           "--sharpness-iters", str(args.iters), "--evals", "0", "--eval-examples", "1000",
           "-t", str(args.threads), "--json"]
    if algo == "adam":
        cmd[4:4] = ["-a", "adam", "--hp", "beta1=0.9"]
    else:
        cmd[4:4] = ["-a", "sgd", "--hp", "momentum=0", "--hp", "nesterov=0"]
    env = dict(os.environ, OPENBLAS_CORETYPE=os.environ.get("OPENBLAS_CORETYPE", "Haswell"))
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if p.returncode != 0 and not p.stdout.strip():
        sys.exit("eos.py: %s failed (exit %d): %s" % (" ".join(cmd), p.returncode,
                                                       p.stderr.strip()[-500:]))
    return json.loads(p.stdout)


def ratio(algo, m):
    value = m.get("preconditioned_max") if algo == "adam" else m.get("lambda_max")
    t = m.get("threshold")
    return value / t if value is not None and t else float("nan")


def main():
    args = parse_args()
    os.makedirs(args.out, exist_ok=True)
    runs = [("adam", float(x)) for x in args.adam.split(",") if x] + \
           [("gd", float(x)) for x in args.gd.split(",") if x]
    curve, summary = [], []
    print("edge of stability: %s, full batch of %d, %d steps, a measurement every %d "
          "(%d Lanczos steps); median over the last %.0f%% of the steps" %
          (args.workload, args.full_batch, args.steps, args.every, args.iters, 100 * args.tail))
    print("%-5s %9s %11s %8s %8s %15s %10s %7s" % ("algo", "eta", "threshold", "n", "median",
                                                    "range", "loss", "seconds"))
    for algo, lr in runs:
        start = time.time()
        r = run(args, algo, lr)
        ms = r.get("sharpness", {}).get("measurements", [])
        for m in ms:
            curve.append([algo, lr, m["step"], m.get("lambda_max"), m.get("preconditioned_max"),
                          m.get("threshold"), ratio(algo, m)])
        tail = [ratio(algo, m) for m in ms if m["step"] > (1 - args.tail) * args.steps]
        tail = [q for q in tail if q == q]
        med = statistics.median(tail) if tail else float("nan")
        lo, hi = (min(tail), max(tail)) if tail else (float("nan"), float("nan"))
        thr = ms[-1]["threshold"] if ms else float("nan")
        loss = r.get("final_train_loss", float("nan"))
        status = "diverged" if r.get("diverged") else "done"
        summary.append([algo, lr, thr, len(tail), med, lo, hi, loss, status])
        print("%-5s %9.3g %11.5g %8d %8.3f %7.3f-%-7.3f %10.4g %7.0f%s" %
              (algo, lr, thr, len(tail), med, lo, hi, loss, time.time() - start,
               "" if status == "done" else "  " + status))
    with open(os.path.join(args.out, "eos.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["algorithm", "eta", "step", "lambda_max", "preconditioned_max",
                    "threshold", "ratio"])
        w.writerows(curve)
    with open(os.path.join(args.out, "eos_summary.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["algorithm", "eta", "threshold", "n_tail", "median_ratio", "min_ratio",
                    "max_ratio", "final_train_loss", "status"])
        w.writerows(summary)
    print("ratio: lambda_1(P^-1 H) / (38/eta) for Adam, lambda_1(H) / (2/eta) for gradient "
          "descent; the curve is %s" % os.path.join(args.out, "eos.csv"))


if __name__ == "__main__":
    main()
