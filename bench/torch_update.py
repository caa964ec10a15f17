#!/usr/bin/env python3
"""torch_update.py: the PyTorch references' update step alone, on fmnist_mlp's parameter
shapes, as JSON: the peer of bench_update.c.

    python bench/torch_update.py --algorithm muon --threads 2 --steps 20 --warmup 3

muon: torch.optim.Muon (lr 1e-3, its defaults) on fc1.weight and fc2.weight and
torch.optim.AdamW (lr 3e-4) on fc3.weight and the biases, as trainbench's muon routes them;
soap: pytorch-optimizer's SOAP at its defaults on every parameter. float32 parameters filled
with uniform values and fixed uniform gradients; --steps timed optimizer steps after --warmup
untimed ones, at torch.set_num_threads(--threads).
"""

import argparse
import json
import time

import torch

SHAPES = [("fc1.weight", (1024, 784)), ("fc1.bias", (1024,)), ("fc2.weight", (1024, 1024)),
          ("fc2.bias", (1024,)), ("fc3.weight", (10, 1024)), ("fc3.bias", (10,))]


def make(algorithm, params):
    if algorithm == "muon":
        mats = [params["fc1.weight"], params["fc2.weight"]]
        rest = [params[n] for n in ("fc3.weight", "fc1.bias", "fc2.bias", "fc3.bias")]
        return [torch.optim.Muon(mats), torch.optim.AdamW(rest, lr=3e-4)]
    if algorithm == "soap":
        from pytorch_optimizer import SOAP
        return [SOAP(list(params.values()))]
    raise SystemExit("torch_update: unknown algorithm " + algorithm)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--algorithm", required=True)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(1)
    params = {}
    for name, shape in SHAPES:
        p = (torch.rand(shape) * 0.06 - 0.03).requires_grad_(True)
        p.grad = torch.rand(shape) * 2e-3 - 1e-3
        params[name] = p
    opts = make(a.algorithm, params)
    for _ in range(a.warmup):
        for o in opts:
            o.step()
    t0 = time.perf_counter()
    for _ in range(a.steps):
        for o in opts:
            o.step()
    dt = time.perf_counter() - t0
    print(json.dumps({"algorithm": a.algorithm, "threads": a.threads, "steps": a.steps,
                      "ms_per_update": round(1e3 * dt / a.steps, 3), "torch": torch.__version__}))


if __name__ == "__main__":
    main()
