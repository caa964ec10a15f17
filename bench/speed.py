#!/usr/bin/env python3
"""speed.py: trainbench vs PyTorch, side by side in one run, on this machine.

For each workload and thread count, alternates trainbench (build/bench_step) and PyTorch
(bench/torch_step.py) runs after warm-up, keeps each side's best of --rounds, and prints a
markdown table: examples/s, ms/step, peak memory, the ratio trainbench/PyTorch, and the GEMM
efficiency of trainbench's step (achieved GEMM FLOP/s over the sgemm ceiling measured in the
same run, in every round, the best measurement counting). PyTorch runs in each of --torch-settings (eager with its default optimizer, eager
with the fused SGD kernel, torch.compile with the fused SGD) and its fastest counts; the table
names it. Each side's best thread setting is reported too. A last table gives the ratio round
by round (PyTorch's fastest setting in a round over trainbench's step in the same round): its
median and range, which the machine's drift between rounds does not bias.

    bench/setup.sh                      # once: a venv with the current PyTorch from PyPI
    bench/speed.py                      # all five workloads, 1 and 2 threads (about 15 min
                                        # on 2 cores); prints the table for docs/SPEED.md
    bench/speed.py --workloads kjv_transformer --threads 2 --rounds 5   # one row, more rounds
    bench/speed.py --device cuda --python python3 --workloads fmnist_mlp,fmnist_cnn,kjv_transformer
                                        # on a GPU: trainbench (eager; --cuda-graph for graphs)
                                        # against PyTorch; no sgemm ceiling there

Each round runs PyTorch once per setting and trainbench once, so PyTorch's figure is the best of
more runs than trainbench's: a bias in PyTorch's favour. A setting that fails (torch.compile
without a C++ compiler, fused SGD on an old PyTorch) is reported and left out. A workload that
trainbench fails on, or that no PyTorch setting runs (bench/torch_step.py has the five base
models, not their variants), is named and left out of the table, with its rows at every thread
count; an interrupted run (Ctrl-C) still prints the workloads measured before; either way the
exit status is 1.
"""
import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH_STEP = os.path.join(ROOT, "build", "bench_step")
TORCH_STEP = os.path.join(ROOT, "bench", "torch_step.py")
VENV_PY = os.path.join(ROOT, "bench", ".venv", "bin", "python")


def run_json(cmd, env=None):
    """The JSON line a bench program prints last; RuntimeError naming the command otherwise."""
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed: {out.stderr.strip()}")
    try:
        return json.loads(out.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        raise RuntimeError(f"{' '.join(cmd)} printed no JSON result: {out.stdout.strip()[-200:]!r}")


def cpu_model():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor()


WORKLOADS = "fmnist_mlp,fmnist_cnn,fmnist_autoencoder,kjv_transformer,wordnet_sparse"


def positive_ints(text):
    try:
        values = [int(v) for v in text.split(",") if v]
    except ValueError:
        values = []
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"expected positive integers, comma-separated, got {text!r}")
    return values


def at_least(low):
    def parse(text):
        try:
            v = int(text)
        except ValueError:
            v = low - 1
        if v < low:
            raise argparse.ArgumentTypeError(f"expected an integer of at least {low}, got {text!r}")
        return v
    return parse


def measure_workload(wl, threads, settings, args, env, measure_ceiling):
    """Alternating rounds of trainbench and each PyTorch setting on one workload at each
    thread count: each side's best run per thread count, keyed (side, threads), every
    setting's best ms/step, keyed (wl, threads), and each round's ratio (PyTorch's fastest
    setting in the round over trainbench's step in it), keyed (wl, threads). A PyTorch setting
    that fails is skipped for the workload; RuntimeError when trainbench fails or no setting
    runs."""
    best, seen, failed = {}, {}, {}  # failed: PyTorch settings that failed here, and why
    paired = {}
    for t in threads:
        for _ in range(args.rounds):
            measure_ceiling(t)
            common = ["--workload", wl, "--threads", str(t), "--steps", str(args.steps),
                      "--warmup", str(args.warmup), "--device", args.device]
            graph = ["--cuda-graph"] if args.cuda_graph else []
            runs = [("trainbench", run_json([BENCH_STEP] + common + graph, env))]
            for setting in settings:
                if setting in failed:
                    continue
                try:
                    runs.append(("pytorch", run_json([args.python, TORCH_STEP] + common
                                                     + ["--setting", setting], env)))
                except RuntimeError as e:  # e.g. no compiler for torch.compile
                    failed[setting] = str(e).splitlines()[-1][:200]
                    print(f"speed.py: PyTorch setting {setting} failed on {wl}, skipped for "
                          f"it: {failed[setting]}", file=sys.stderr)
                    continue
                print(f"speed.py: {wl}, {t} thread(s): trainbench "
                      f"{runs[0][1]['ms_per_step']:.2f} ms, PyTorch {setting} "
                      f"{runs[-1][1]['ms_per_step']:.2f} ms", file=sys.stderr)
            if len(runs) == 1:  # e.g. a variant PyTorch has no model for
                raise RuntimeError(f"every PyTorch setting failed: {failed}")
            paired.setdefault((wl, t), []).append(
                min(r["ms_per_step"] for _, r in runs[1:]) / runs[0][1]["ms_per_step"])
            for side, r in runs:
                name = "trainbench" if side == "trainbench" else r.get("setting", "eager")
                times = seen.setdefault((wl, t), {})
                times[name] = min(times.get(name, float("inf")), r["ms_per_step"])
                if (side, t) not in best or r["examples_per_s"] > best[(side, t)]["examples_per_s"]:
                    best[(side, t)] = r
    return best, seen, paired


def print_paired(paired, rounds):
    """The round-by-round ratios: both sides of a round ran minutes apart at most, so drift
    of the shared machine between rounds cancels in each ratio, where the best-of-rounds
    ratio above can pair one side's lucky round with the other's unlucky one."""
    print()
    print(f"Round by round: PyTorch's fastest setting in the round / trainbench's step in the "
          f"same round ({rounds} rounds):")
    print()
    print("| workload | threads | median ratio | lowest | highest |")
    print("| --- | --- | ---: | ---: | ---: |")
    for (wl, t), ratios in paired.items():
        print(f"| {wl} | {t} | {statistics.median(ratios):.2f}x | {min(ratios):.2f}x | "
              f"{max(ratios):.2f}x |")


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workloads", default=WORKLOADS,
                    help="comma-separated workload ids (default: the five base workloads; "
                         "bench/torch_step.py has their PyTorch models, not the variants)")
    ap.add_argument("--threads", type=positive_ints, default=[1, 2],
                    help="thread counts, comma-separated, each side run at each (default: 1,2)")
    ap.add_argument("--rounds", type=at_least(1), default=3,
                    help="alternating rounds per workload and thread count; each side's best "
                         "round counts (default: 3)")
    ap.add_argument("--steps", type=at_least(1), default=60,
                    help="timed training steps per run (default: 60)")
    ap.add_argument("--warmup", type=at_least(1), default=10,
                    help="untimed steps before them (default: 10)")
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"],
                    help="where both sides train (cuda: one thread count, no sgemm ceiling)")
    ap.add_argument("--cuda-graph", action="store_true",
                    help="trainbench replays each step from a CUDA graph (cuda only)")
    ap.add_argument("--torch-settings", default="eager,fused,compile",
                    help="PyTorch settings to try, comma-separated (bench/torch_step.py "
                         "--setting); the fastest counts (default: all three)")
    ap.add_argument("--python", default=VENV_PY if os.path.exists(VENV_PY) else sys.executable,
                    help="the Python with PyTorch and NumPy (default: bench/.venv's, made by "
                         "bench/setup.sh, else this one)")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"), help="trainbench build dir")
    args = ap.parse_args()
    global BENCH_STEP
    BENCH_STEP = os.path.join(args.build, "bench_step")
    env = dict(os.environ)
    settings = [s for s in args.torch_settings.split(",") if s]
    unknown = [s for s in settings if s not in ("eager", "fused", "compile")]
    if not settings or unknown:
        sys.exit(f"speed.py: --torch-settings takes eager, fused and compile, comma-separated "
                 f"(got {args.torch_settings!r})")
    if args.cuda_graph and args.device != "cuda":
        sys.exit("speed.py: --cuda-graph needs --device cuda")
    if not os.access(BENCH_STEP, os.X_OK):
        sys.exit(f"speed.py: {BENCH_STEP} not found: build it first (scripts/build.sh)")
    probe = subprocess.run([args.python, "-c", "import numpy, torch; print(torch.__version__)"],
                           capture_output=True, text=True, check=False)
    if probe.returncode != 0:
        sys.exit(f"speed.py: {args.python} cannot import PyTorch and NumPy: run bench/setup.sh "
                 f"(the current PyTorch from PyPI into bench/.venv) or pass --python")
    gpu = args.device == "cuda"
    threads = [1] if gpu else sorted(set(args.threads))
    # the sgemm ceiling: measured again in every round, the best counts (a single measurement
    # on a busy virtualised machine can come out a third low)
    ceiling, ceiling_runs = {}, 0

    def measure_ceiling(t):
        nonlocal ceiling_runs
        if gpu:
            return
        g = run_json([BENCH_STEP, "--sgemm", "2048", "--threads", str(t)], env)["gflops"]
        ceiling[t] = max(ceiling.get(t, 0.0), g)
        ceiling_runs += 1

    try:
        for t in threads:
            measure_ceiling(t)
    except KeyboardInterrupt:
        sys.exit("speed.py: interrupted before anything was measured")
    rows = []
    per_setting = {}  # (workload, threads) -> {"trainbench" or PyTorch setting: best ms/step}
    paired = {}  # (workload, threads) -> each round's ratio
    left_out, stopped = {}, None  # workload -> why; why the bench stopped early
    for wl in args.workloads.split(","):
        try:
            best, seen, pairs = measure_workload(wl, threads, settings, args, env,
                                                 measure_ceiling)
        except RuntimeError as e:  # an unknown workload, a failed step, no PyTorch model
            left_out[wl] = str(e)
            print(f"speed.py: {wl} left out: {e}", file=sys.stderr)
            continue
        except KeyboardInterrupt:
            stopped = f"interrupted during {wl}"
            break
        per_setting.update(seen)
        paired.update(pairs)
        for t in threads:
            tb, pt = best[("trainbench", t)], best[("pytorch", t)]
            rows.append((wl, t, tb, pt, tb["gemm_gflops"] if not gpu else None))
        tb_best = max(threads, key=lambda t: best[("trainbench", t)]["examples_per_s"])
        pt_best = max(threads, key=lambda t: best[("pytorch", t)]["examples_per_s"])
        rows.append((wl, f"best ({tb_best} vs {pt_best})", best[("trainbench", tb_best)],
                     best[("pytorch", pt_best)], None))
    if not rows:
        sys.exit("speed.py: nothing measured: "
                 + "; ".join(([stopped] if stopped else [])
                             + [f"{w}: {e}" for w, e in left_out.items()]))
    torch_version = rows[0][3].get("torch", "?")
    if gpu:
        print(f"Measured {datetime.date.today()} on {rows[0][2].get('backend', '?')}"
              f"; PyTorch {torch_version} on cuda; trainbench "
              f"{'CUDA graph' if args.cuda_graph else 'eager'}; peak MB is GPU memory for "
              f"PyTorch, host resident memory for trainbench")
    else:
        print(f"Measured {datetime.date.today()} on {cpu_model()}, {os.cpu_count()} cores; "
              f"PyTorch {torch_version}; sgemm ceiling (OpenBLAS, n=2048, best of "
              f"{ceiling_runs // len(threads)} runs through the bench): "
              + ", ".join(f"{ceiling[t]:.0f} GFLOP/s on {t} thread{'s' if t > 1 else ''}"
                          for t in threads))
    print()
    print("| workload | threads | trainbench ex/s | PyTorch ex/s | PyTorch setting | ratio "
          "| trainbench ms/step | PyTorch ms/step | trainbench peak MB | PyTorch peak MB "
          "| GEMM efficiency |")
    print("| --- | --- | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for wl, t, tb, pt, eff in rows:
        print(f"| {wl} | {t} | {tb['examples_per_s']:.0f} | {pt['examples_per_s']:.0f} | "
              f"{pt.get('setting', 'eager')} | "
              f"{tb['examples_per_s'] / pt['examples_per_s']:.2f}x | {tb['ms_per_step']:.2f} | "
              f"{pt['ms_per_step']:.2f} | {tb['peak_rss_mb']:.0f} | {pt['peak_rss_mb']:.0f} | "
              # the step's GEMM FLOP/s over the best ceiling of the whole run
              + (f"{100 * eff / ceiling[t]:.0f}%" if eff is not None else "") + " |")
    print()
    print(f"Each PyTorch setting's best ms/step (of {args.rounds} rounds), and the ratios against "
          f"eager PyTorch and against its fastest setting:")
    print()
    print("| workload | threads | trainbench | " + " | ".join(f"PyTorch {s}" for s in settings)
          + " | ratio vs eager | ratio vs fastest |")
    print("| --- | --- | ---: | " + " | ".join("---:" for _ in settings) + " | ---: | ---: |")
    for (wl, t), seen in per_setting.items():
        tb = seen["trainbench"]
        torch_ms = {s: seen[s] for s in settings if s in seen}
        cells = [f"{torch_ms[s]:.2f}" if s in torch_ms else "failed" for s in settings]
        vs_eager = f"{torch_ms['eager'] / tb:.2f}x" if "eager" in torch_ms else ""
        print(f"| {wl} | {t} | {tb:.2f} | " + " | ".join(cells)
              + f" | {vs_eager} | {min(torch_ms.values()) / tb:.2f}x |")
    print_paired(paired, args.rounds)
    # what was measured is printed above; say what is missing, and fail
    if stopped or left_out:
        for wl, why in left_out.items():
            print(f"speed.py: {wl} is not in the table: {why}", file=sys.stderr)
        if stopped:
            print(f"speed.py: stopped early ({stopped}): the table has the workloads measured "
                  f"before", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
