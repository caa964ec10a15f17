#!/usr/bin/env python3
"""make_sophia_golden.py: pytorch-optimizer's SophiaH trajectories that
tests/test_optim_matrix.c compares trainbench's sophia with (the model and schedule of
golden_traj.py, 24 steps).

Run with pytorch-optimizer installed:  python tests/golden/make_sophia_golden.py
It rewrites tests/golden/optim_sophia*.bin deterministically.

SophiaH draws its Hutchinson probes inside step(); to make them reproducible the script draws
them itself (torch.manual_seed, float32 values), forms each estimate z * (H z) with autograd
exactly as SophiaH's compute_hutchinson_hessian does (the mean over num_samples probes), and
hands it to step(hessian=...) on the steps SophiaH would estimate ((t - 1) % update_period ==
0). The probes are recorded as z.<sample>.<name>.<t>; the C test uses them in place of its own
draws, and computes H z by central differences of its own gradients (src/diag/hvp.c), so the
comparison covers the Hessian-vector products too. Weights and biases sit in two groups, the
biases without weight decay, as trainbench decays weights only.
"""

import sys

from importlib.metadata import version

import torch
from pytorch_optimizer import SophiaH

import golden_traj as gt
from make_golden import write_case

CASES = [
    ("sophia", {"learning_rate": 0.1, "beta1": 0.9, "beta2": 0.95, "weight_decay": 0.1,
                "weight_decouple": 1, "p": 0.05, "update_period": 3, "num_samples": 2,
                "hessian_distribution": 0, "epsilon": 1e-12}),
    ("sophia_l2", {"learning_rate": 0.05, "beta1": 0.96, "beta2": 0.99, "weight_decay": 0.01,
                   "weight_decouple": 0, "p": 0.1, "update_period": 5, "num_samples": 1,
                   "hessian_distribution": 1, "epsilon": 1e-12}),
]

ORDER = ["w1", "w2", "w3", "b1", "b2", "b3"]  # the optimizer's group order


def run(hps):
    params, x, y = gt.start(13)
    torch.manual_seed(5)
    k, samples = hps["update_period"], hps["num_samples"]
    rademacher = hps["hessian_distribution"] == 1
    probes = []

    def make(p):
        return [SophiaH(
            [{"params": [p[n] for n in ORDER[:3]], "weight_decay": hps["weight_decay"]},
             {"params": [p[n] for n in ORDER[3:]], "weight_decay": 0.0}],
            lr=hps["learning_rate"], betas=(hps["beta1"], hps["beta2"]),
            weight_decouple=bool(hps["weight_decouple"]), p=hps["p"], update_period=k,
            num_samples=samples, eps=hps["epsilon"])]

    def before_step(t, opts):
        grads = [params[n].grad for n in ORDER]
        for n in ORDER:  # step() must not see the graph of the gradients
            params[n].grad = params[n].grad.detach()
        if (t - 1) % k != 0:
            return [{}]
        est = [torch.zeros_like(params[n]) for n in ORDER]
        for j in range(samples):
            if rademacher:
                zs = [(torch.randint(0, 2, params[n].shape) * 2 - 1).to(gt.DT) for n in ORDER]
            else:
                zs = [torch.randn(params[n].shape, dtype=torch.float32).to(gt.DT) for n in ORDER]
            hzs = torch.autograd.grad(grads, [params[n] for n in ORDER], grad_outputs=zs,
                                      retain_graph=True)
            for e, z, hz in zip(est, zs, hzs):
                e.add_(hz * z / samples)
            probes.extend(("z.%d.%s.%d" % (j, n, t), z) for n, z in zip(ORDER, zs))
        return [{"hessian": est}]

    rec = gt.trajectory(params, x, y, make, [[hps["learning_rate"]] * 2], before_step)
    data = [("x", x), ("y", y.to(torch.int32))]
    return rec + probes + data


def main():
    print("torch", torch.__version__, "pytorch-optimizer", version("pytorch_optimizer"),
          file=sys.stderr)
    for case, hps in CASES:
        size = write_case("optim_" + case, run(hps) + gt.hparams(hps))
        print("optim_%s: %d bytes" % (case, size))


if __name__ == "__main__":
    main()
