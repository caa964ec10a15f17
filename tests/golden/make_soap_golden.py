#!/usr/bin/env python3
"""make_soap_golden.py: pytorch-optimizer's SOAP trajectories that tests/test_optim_matrix.c
compares trainbench's soap with (golden_traj.py's trajectory, 24 steps).

Run with pytorch-optimizer installed:  python tests/golden/make_soap_golden.py
It rewrites tests/golden/optim_soap*.bin deterministically.

The model is golden_traj.py's MLP with widths 6-6-6-6 and a mean-squared-error loss against
random targets: every weight is square and every gradient of full rank, so that every Kronecker
factor is of full rank from step 1 and its eigenvectors are unique up to sign, which SOAP's
update does not see. A factor with a null space has no unique eigenbasis there, and SOAP then
divides rounding noise by rounding noise along it (the rotated gradient and sqrt(v) are both
0 but for rounding): a [10, 6] weight's 10 x 10 G G^T at step 1, a softmax output layer's
factors (its gradient's rows sum to 0 over the classes), a bias's rank-one factor with
precondition_1d. Two implementations then differ legitimately, so these are left out. Weights and biases sit in two groups, the biases
without weight decay, as trainbench decays weights only.
"""

import sys
from importlib.metadata import version

import torch
from pytorch_optimizer import SOAP

import golden_traj as gt
from make_golden import write_case

SIZES = (6, 6, 6, 6)

CASES = [
    ("soap", {"learning_rate": 0.01, "beta1": 0.9, "beta2": 0.95, "shampoo_beta": -1,
              "weight_decay": 0.05, "precondition_frequency": 4, "precondition_1d": 0,
              "correct_bias": 1, "normalize_gradient": 0, "epsilon": 1e-8}),
    ("soap_norm", {"learning_rate": 0.005, "beta1": 0.95, "beta2": 0.99, "shampoo_beta": 0.9,
                 "weight_decay": 0.01, "precondition_frequency": 3, "precondition_1d": 0,
                 "correct_bias": 0, "normalize_gradient": 1, "epsilon": 1e-8}),
]


def run(hps):
    params, x, _ = gt.start(17, SIZES)
    y = gt.regression_targets(SIZES)
    sb = hps["shampoo_beta"]

    def make(p):
        return [SOAP(
            [{"params": [p["w1"], p["w2"], p["w3"]], "weight_decay": hps["weight_decay"]},
             {"params": [p["b1"], p["b2"], p["b3"]], "weight_decay": 0.0}],
            lr=hps["learning_rate"], betas=(hps["beta1"], hps["beta2"]),
            shampoo_beta=None if sb == -1 else sb,
            precondition_frequency=hps["precondition_frequency"],
            precondition_1d=bool(hps["precondition_1d"]),
            correct_bias=bool(hps["correct_bias"]),
            normalize_gradient=bool(hps["normalize_gradient"]), eps=hps["epsilon"])]

    return gt.trajectory(params, x, y, make, [[hps["learning_rate"]] * 2])


def main():
    print("torch", torch.__version__, "pytorch-optimizer", version("pytorch_optimizer"),
          file=sys.stderr)
    for case, hps in CASES:
        size = write_case("optim_" + case, run(hps) + gt.hparams(hps))
        print("optim_%s: %d bytes" % (case, size))


if __name__ == "__main__":
    main()
