#!/usr/bin/env python3
"""make_kron_golden.py: kron-torch's Kron trajectories that tests/test_optim_matrix.c compares
trainbench's psgd_kron with (golden_traj.py's MLP 6-10-5-3 and schedule, 24 steps).

Run with kron-torch installed:  python tests/golden/make_kron_golden.py
It rewrites tests/golden/optim_kron*.bin deterministically.

Kron draws its whitening probe V with torch.randn_like inside the step and decides whether to
balance its factors with its own random.Random(42); both are recorded so that the C test
replays them: torch.randn_like is replaced, during each step, by float32 standard normals from
a seeded generator (cast to float64, so the fixture's float32 copy is exact), stored as
v.<name>.<t>, and the balance draw is read from a copy of the optimizer's generator before each
step, stored as bal.<t> (1 at step 20 with Random(42)). The update probability is 1 (every step
fits the preconditioner). torch.compile is disabled (TORCHDYNAMO_DISABLE): the functions run
eagerly, with the same arithmetic. The preconditioner is float64 (precond_dtype) as the model;
the reference's triangular solves still run in float32.
"""

import os

os.environ["TORCHDYNAMO_DISABLE"] = "1"

import random  # noqa: E402
import sys  # noqa: E402
from importlib.metadata import version  # noqa: E402

import torch  # noqa: E402
from kron_torch import Kron  # noqa: E402

import golden_traj as gt  # noqa: E402
from make_golden import write_case  # noqa: E402

CASES = [
    ("kron", {"learning_rate": 0.01, "b1": 0.9, "weight_decay": 0.05,
              "preconditioner_update_probability": 1, "max_size_triangular": 8192,
              "min_ndim_triangular": 2, "memory_save_mode": 0,
              "momentum_into_precond_update": 1, "precond_lr": 0.1,
              "precond_init_scale": 1.0}),
    ("kron_diag", {"learning_rate": 0.005, "b1": 0.95, "weight_decay": 0.0,
                   "preconditioner_update_probability": 1, "max_size_triangular": 6,
                   "min_ndim_triangular": 1, "memory_save_mode": 1,
                   "momentum_into_precond_update": 0, "precond_lr": 0.3,
                   "precond_init_scale": 0.5}),
]
MODES = [None, "smart_one_diag", "one_diag", "all_diag"]


def make(params, hps):
    return Kron([params[n] for n in gt.NAMES], lr=hps["learning_rate"], b1=hps["b1"],
                weight_decay=hps["weight_decay"],
                preconditioner_update_probability=float(
                    hps["preconditioner_update_probability"]),
                max_size_triangular=hps["max_size_triangular"],
                min_ndim_triangular=hps["min_ndim_triangular"],
                memory_save_mode=MODES[hps["memory_save_mode"]],
                momentum_into_precond_update=bool(hps["momentum_into_precond_update"]),
                precond_lr=hps["precond_lr"], precond_init_scale=hps["precond_init_scale"],
                precond_dtype=torch.float64)


def run(hps):
    """golden_traj.trajectory's records, with the probes and balance draws of every step."""
    params, x, y = gt.start(23)
    gen = torch.Generator().manual_seed(5)
    drawn = []

    def randn_like(t):
        v = torch.randn(t.shape, generator=gen, dtype=torch.float32).to(t.dtype)
        drawn.append(v)
        return v

    opt = make(params, hps)
    out = [("steps", torch.tensor(float(gt.STEPS)))]
    out += [(n + ".0", params[n].detach().clone()) for n in gt.NAMES]
    real = torch.randn_like
    torch.randn_like = randn_like
    try:
        for t in range(1, gt.STEPS + 1):
            f = gt.factor(t)
            opt.param_groups[0]["lr"] = hps["learning_rate"] * f
            for n in gt.NAMES:
                params[n].grad = None
            gt.loss_fn(params, x, y).backward()
            out.append(("f.%d" % t, torch.tensor(f)))
            out += [("g.%s.%d" % (n, t), params[n].grad.detach().clone()) for n in gt.NAMES]
            r = random.Random()
            r.setstate(opt.rng.getstate())
            out.append(("bal.%d" % t, torch.tensor(float(r.random() < 0.01))))
            drawn.clear()
            opt.step()
            assert len(drawn) == len(gt.NAMES)
            out += [("v.%s.%d" % (n, t), v) for n, v in zip(gt.NAMES, drawn)]
            out += [("%s.%d" % (n, t), params[n].detach().clone()) for n in gt.NAMES]
    finally:
        torch.randn_like = real
    return out


def main():
    print("torch", torch.__version__, "kron-torch", version("kron-torch"), file=sys.stderr)
    for case, hps in CASES:
        size = write_case("optim_" + case, run(hps) + gt.hparams(hps))
        print("optim_%s: %d bytes" % (case, size))


if __name__ == "__main__":
    main()
