#!/usr/bin/env python3
"""torch_step.py: the PyTorch side of bench/speed.py.

Trains the same model as a trainbench workload, on the same Fashion-MNIST data, with the same
batch size and optimizer, and prints one JSON line like bench_step does:
examples/s, ms/step, peak resident memory. Run with the bench's own venv (bench/setup.sh).

    python torch_step.py --workload fmnist_mlp --threads 2 --steps 200 --warmup 20
    python torch_step.py --workload fmnist_cnn --device cuda   # eager PyTorch on the GPU
    python torch_step.py --workload kjv_transformer --setting compile   # torch.compile + fused SGD

On cuda the data stays on the host and each batch is copied to the GPU (as trainbench's input
pipeline does), the clock is read after torch.cuda.synchronize(), and peak memory is the
GPU's (torch.cuda.max_memory_allocated).
"""
import argparse
import gzip
import json
import re
import resource
import struct
import subprocess
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


def fmnist_cnn():
    def block(cin, cout):
        return [nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(),
                nn.MaxPool2d(2)]
    return nn.Sequential(*block(1, 16), *block(16, 32), nn.Flatten(), nn.Linear(32 * 7 * 7, 10))


def fmnist_autoencoder():
    widths = [784, 1000, 500, 250, 30, 250, 500, 1000, 784]
    layers = [nn.Flatten()]
    for i in range(8):
        layers.append(nn.Linear(widths[i], widths[i + 1]))
        if i not in (3, 7):  # no activation on the code layer and the output (logits)
            layers.append(nn.Tanh())
    return nn.Sequential(*layers)


class Block(nn.Module):
    def __init__(self, c, heads):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(c), nn.LayerNorm(c)
        self.qkv, self.proj = nn.Linear(c, 3 * c), nn.Linear(c, c)
        self.fc, self.out = nn.Linear(c, 4 * c), nn.Linear(4 * c, c)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        a = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, t, c))
        return x + self.out(nn.functional.gelu(self.fc(self.ln2(x))))


class CharTransformer(nn.Module):
    def __init__(self, vocab=63, c=128, heads=4, blocks=2, context=64):
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, c), nn.Embedding(context, c)
        self.blocks = nn.Sequential(*[Block(c, heads) for _ in range(blocks)])
        self.lnf, self.head = nn.LayerNorm(c), nn.Linear(c, vocab)

    def forward(self, x):
        h = self.tok(x) + self.pos(torch.arange(x.shape[1]))
        return self.head(self.lnf(self.blocks(h)))


class NextWord(nn.Module):
    def __init__(self, vocab, context=3, embed=64, hidden=128):
        super().__init__()
        self.emb = nn.Embedding(vocab, embed)
        self.hidden, self.out = nn.Linear(context * embed, hidden), nn.Linear(hidden, vocab)

    def forward(self, x):
        return self.out(torch.relu(self.hidden(self.emb(x).flatten(1))))


def load_kjv(context=64):
    text = subprocess.run(["bible", "-f", "Gen1:1-Rev22:21"], capture_output=True,
                          check=True).stdout
    chars = sorted(set(text))
    table = np.zeros(256, dtype=np.int64)
    table[np.frombuffer(bytes(chars), dtype=np.uint8)] = np.arange(len(chars))
    ids = torch.from_numpy(table[np.frombuffer(text, dtype=np.uint8)])
    n = (len(ids) - 1) // context
    x = ids[:n * context].view(n, context)
    y = ids[1:n * context + 1].view(n, context)
    return x, y, len(chars)


def load_wordnet(context=3, min_count=3):
    """The same tokenisation as src/data/wordnet_data.c: lower-cased words of [a-z0-9'] from
    each gloss, "</s>" after each gloss, words seen fewer than min_count times are <unk>."""
    words = []
    for part in ("noun", "verb", "adj", "adv"):
        with open(f"/usr/share/wordnet/data.{part}", encoding="latin-1") as f:
            for line in f:
                if line.startswith("  ") or "|" not in line:
                    continue
                words += re.findall(r"[a-z0-9']+", line.split("|", 1)[1].lower()) + ["</s>"]
    counts = {}
    for w in words:
        counts[w] = counts.get(w, 0) + 1
    kept = sorted((w for w, c in counts.items() if c >= min_count and w != "</s>"),
                  key=lambda w: -counts[w])
    vocab = {"</s>": 1, **{w: i + 2 for i, w in enumerate(kept)}}
    ids = torch.tensor([vocab.get(w, 0) for w in words])
    x = torch.stack([ids[i:len(ids) - context + i] for i in range(context)], dim=1)
    return x, ids[context:], len(vocab) + 1


# PyTorch's settings (speed.py keeps the fastest): its defaults, the fused optimizer kernel
# (one pass over each parameter's weights, gradient and momentum instead of a loop of ops), and
# that plus torch.compile of the model (Inductor: fused element-wise code, forward and backward).
SETTINGS = {
    "eager": "eager PyTorch, default optimizer (a loop of ops on the CPU, foreach on CUDA)",
    "fused": "eager PyTorch, SGD(fused=True)",
    "compile": "torch.compile(model) and SGD(fused=True)",
}

MODELS = {
    "fmnist_mlp": (fmnist_mlp, 128, "xent", "fmnist"),
    "fmnist_cnn": (fmnist_cnn, 128, "xent", "fmnist"),
    "fmnist_autoencoder": (fmnist_autoencoder, 128, "bce", "fmnist"),
    "kjv_transformer": (None, 32, "lm", "kjv"),
    "wordnet_sparse": (None, 256, "xent", "wordnet"),
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--workload", default="fmnist_mlp", choices=sorted(MODELS))
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--batch-size", type=int, default=0)
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--setting", default="eager", choices=sorted(SETTINGS),
                    help="; ".join(f"{k}: {v}" for k, v in sorted(SETTINGS.items())))
    args = ap.parse_args()
    dev = torch.device(args.device)
    if args.device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("torch_step.py: --device cuda but torch sees no CUDA device")
    sync = torch.cuda.synchronize if args.device == "cuda" else (lambda: None)
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    build, batch, loss_kind, data = MODELS[args.workload]
    batch = args.batch_size or batch
    if data == "fmnist":
        x_all, y_all = load_fmnist()
        model = build()
    elif data == "kjv":
        x_all, y_all, vocab = load_kjv()
        model = CharTransformer(vocab)
    else:
        x_all, y_all, vocab = load_wordnet()
        model = NextWord(vocab)
    model = model.to(dev)
    fused = {"fused": True} if args.setting in ("fused", "compile") else {}
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, nesterov=True, **fused)
    if args.setting == "compile":
        model = torch.compile(model)  # compiled during the warm-up steps, before the clock
    xent = nn.CrossEntropyLoss()
    if loss_kind == "bce":
        bce = nn.BCEWithLogitsLoss()
        loss_fn = lambda out, xb, yb: bce(out, xb.flatten(1))  # noqa: E731
    elif loss_kind == "lm":
        loss_fn = lambda out, xb, yb: xent(out.flatten(0, 1), yb.flatten())  # noqa: E731
    else:
        loss_fn = lambda out, xb, yb: xent(out, yb)  # noqa: E731
    n = x_all.shape[0]
    perm = torch.randperm(n)
    pos = 0
    t0 = None
    for i in range(args.warmup + args.steps):
        if i == args.warmup:
            sync()
            t0 = time.perf_counter()
        if pos + batch > n:
            perm = torch.randperm(n)
            pos = 0
        idx = perm[pos:pos + batch]
        pos += batch
        xb, yb = x_all[idx].to(dev, non_blocking=True), y_all[idx].to(dev, non_blocking=True)
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(xb), xb, yb)
        loss.backward()
        opt.step()
    sync()
    dt = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    if args.device == "cuda":
        peak = torch.cuda.max_memory_allocated() / 2**20
    print(json.dumps({"workload": args.workload, "threads": args.threads, "batch_size": batch,
                      "steps": args.steps, "examples_per_s": round(args.steps * batch / dt, 1),
                      "ms_per_step": round(1e3 * dt / args.steps, 3),
                      "peak_rss_mb": round(peak, 1), "device": args.device,
                      "setting": args.setting,
                      "torch": torch.__version__}))


if __name__ == "__main__":
    main()
