#!/usr/bin/env python3
"""torch_step.py: the PyTorch side of bench/speed.py.

Trains the same model as a trainbench workload, on the same Fashion-MNIST data, with the same
batch size and optimizer, and prints one JSON line like bench_step does:
examples/s, ms/step, peak resident memory. Run with the bench's own venv (bench/setup.sh).

    python torch_step.py --workload fmnist_mlp --threads 2 --steps 200 --warmup 20
"""
import argparse
import gzip
import json
import resource
import struct
import time

import numpy as np
import torch
import torch.nn as nn

FMNIST = "/usr/share/datasets/fashion-mnist"


def load_fmnist():
    with gzip.open(f"{FMNIST}/train-images-idx3-ubyte.gz", "rb") as f:
        _, n, h, w = struct.unpack(">IIII", f.read(16))
        x = np.frombuffer(f.read(), dtype=np.uint8).reshape(n, 1, h, w)
    with gzip.open(f"{FMNIST}/train-labels-idx1-ubyte.gz", "rb") as f:
        f.read(8)
        y = np.frombuffer(f.read(), dtype=np.uint8)
    return torch.from_numpy(x.astype(np.float32) / 255.0), torch.from_numpy(y.astype(np.int64))


def fmnist_mlp():
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 1024), nn.ReLU(), nn.Linear(1024, 1024),
                         nn.ReLU(), nn.Linear(1024, 10))


MODELS = {"fmnist_mlp": (fmnist_mlp, 128, "xent")}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--workload", default="fmnist_mlp")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--batch-size", type=int, default=0)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    build, batch, loss_kind = MODELS[args.workload]
    batch = args.batch_size or batch
    model = build()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, nesterov=True)
    loss_fn = nn.CrossEntropyLoss()
    x_all, y_all = load_fmnist()
    n = x_all.shape[0]
    perm = torch.randperm(n)
    pos = 0
    t0 = None
    for i in range(args.warmup + args.steps):
        if i == args.warmup:
            t0 = time.perf_counter()
        if pos + batch > n:
            perm = torch.randperm(n)
            pos = 0
        idx = perm[pos:pos + batch]
        pos += batch
        xb, yb = x_all[idx], y_all[idx]
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(xb), yb)
        loss.backward()
        opt.step()
    dt = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    print(json.dumps({"workload": args.workload, "threads": args.threads, "batch_size": batch,
                      "steps": args.steps, "examples_per_s": round(args.steps * batch / dt, 1),
                      "ms_per_step": round(1e3 * dt / args.steps, 3),
                      "peak_rss_mb": round(peak, 1), "torch": torch.__version__}))


if __name__ == "__main__":
    main()
