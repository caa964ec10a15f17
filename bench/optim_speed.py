#!/usr/bin/env python3
"""optim_speed.py: each element-wise optimizer's update step, trainbench against its reference
implementation, on the parameter shapes of fmnist_mlp (784-1024-1024-10: 1.86 M float32
values) at the same number of threads. The update alone: trainbench's tb_optimizer_step
(bench_optim, which includes its finiteness check of the gradients) against the reference's
optimizer.step() with the gradients already in place (torch.set_num_threads).

    /path/to/venv/bin/python bench/optim_speed.py --threads 2 --steps 200 [--bench build/bench_optim]

Needs torch, schedulefree, lion-pytorch, pytorch_optimizer and prodigyopt. Prints one line per
algorithm: the fastest and the mean step of each side in ms, and the ratio reference /
trainbench of the fastest (> 1: trainbench is faster; on a loaded machine the fastest step is
the one least disturbed, the mean mostly measures the load), then the load average.
"""
import argparse
import json
import os
import subprocess
import time

import torch

SHAPES = [(1024, 784), (1024,), (1024, 1024), (1024,), (10, 1024), (10,)]


def references():
    import lion_pytorch
    import prodigyopt
    import pytorch_optimizer as po
    import schedulefree as sf
    # (trainbench algorithm, factory of the reference with the same defaults)
    return [
        ("schedule_free_adamw", lambda ps: sf.AdamWScheduleFree(ps)),
        ("schedule_free_sgd", lambda ps: sf.SGDScheduleFree(ps)),
        ("lion", lambda ps: lion_pytorch.Lion(ps)),
        ("adopt", lambda ps: po.ADOPT(ps)),
        ("ademamix", lambda ps: po.AdEMAMix(ps)),
        ("prodigy", lambda ps: prodigyopt.Prodigy(ps)),
        ("mars", lambda ps: po.MARS(ps)),
        ("adamw", lambda ps: torch.optim.AdamW(ps)),
    ]


def torch_ms(make, steps, warmup):
    gen = torch.Generator().manual_seed(1)
    params = []
    for shape in SHAPES:
        p = torch.nn.Parameter(torch.rand(shape, generator=gen) * 0.02 - 0.01)
        p.grad = torch.rand(shape, generator=gen) * 0.02 - 0.01
        params.append(p)
    opt = make(params)
    if hasattr(opt, "train"):
        opt.train()
    total, best = 0.0, float("inf")
    for s in range(warmup + steps):
        t0 = time.perf_counter()
        opt.step()
        dt = time.perf_counter() - t0
        if s >= warmup:
            total += dt
            best = min(best, dt)
    return 1e3 * best, 1e3 * total / steps


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--bench", default=os.path.join(os.path.dirname(__file__), "..", "build",
                                                    "bench_optim"))
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    env = dict(os.environ, OMP_NUM_THREADS=str(a.threads))
    print("torch %s, %d threads, %d steps after %d warm-up" % (torch.__version__, a.threads,
                                                               a.steps, a.warmup))
    print("load average before: %.2f %.2f %.2f" % os.getloadavg())
    print("%-20s %21s %21s %7s" % ("algorithm", "trainbench best/mean", "reference best/mean",
                                  "ratio"))
    for name, make in references():
        out = subprocess.run([a.bench, "--algorithm", name, "--threads", str(a.threads),
                              "--steps", str(a.steps), "--warmup", str(a.warmup)],
                             check=True, capture_output=True, text=True, env=env).stdout
        tb = json.loads(out)
        ref_best, ref_mean = torch_ms(make, a.steps, a.warmup)
        print("%-20s %9.3f / %7.3f ms %9.3f / %7.3f ms %6.2fx"
              % (name, tb["best_ms"], tb["ms_per_step"], ref_best, ref_mean,
                 ref_best / tb["best_ms"]))
    print("load average after: %.2f %.2f %.2f" % os.getloadavg())


if __name__ == "__main__":
    main()
