#!/usr/bin/env python3
"""make_muon_golden.py: the torch.optim.Muon trajectories that tests/test_optim_matrix.c
compares trainbench's muon with (the model and schedule of golden_traj.py, 24 steps).

Run with torch >= 2.9 (torch.optim.Muon):  python tests/golden/make_muon_golden.py
It rewrites tests/golden/optim_muon*.bin deterministically.

The common Muon recipe, as trainbench routes it: torch.optim.Muon for the hidden 2-D weights
w1 [10, 6] (taller than wide: torch's transposed branch) and w2 [5, 10]; torch.optim.AdamW for
the output layer w3 (weight decay) and the biases (a group with weight_decay 0).

torch's Newton-Schulz iteration runs in bfloat16 (_zeropower_via_newtonschulz casts its input).
The fixture is made with that cast turned into float64 (the iteration is otherwise torch's own
code), so that it holds the algorithm's trajectory, not bfloat16's rounding; the script prints
how far torch's bfloat16 trajectory is from it.
"""

import sys

import torch
import torch.optim._muon as muon_mod

import golden_traj as gt
from make_golden import write_case


class _Float64Torch:
    """torch, with bfloat16 read as float64 (inside torch.optim._muon only)."""

    def __getattr__(self, name):
        return torch.float64 if name == "bfloat16" else getattr(torch, name)


CASES = [
    # (case, trainbench hyperparameters, torch Muon keyword arguments)
    ("muon", {"learning_rate": 0.02, "weight_decay": 0.1, "momentum": 0.95, "nesterov": 1,
              "adjust_lr_fn": 0, "adamw_learning_rate": 0.01, "adamw_beta1": 0.9,
              "adamw_beta2": 0.95, "adamw_epsilon": 1e-8, "adamw_weight_decay": 0.05},
     {"momentum": 0.95, "nesterov": True, "weight_decay": 0.1, "adjust_lr_fn": "original"}),
    ("muon_rms", {"learning_rate": 0.01, "weight_decay": 0.2, "momentum": 0.9, "nesterov": 0,
                  "adjust_lr_fn": 1, "ns_steps": 3, "adamw_learning_rate": 0.01,
                  "adamw_beta1": 0.9, "adamw_beta2": 0.95, "adamw_epsilon": 1e-8,
                  "adamw_weight_decay": 0.05},
     {"momentum": 0.9, "nesterov": False, "weight_decay": 0.2, "adjust_lr_fn": "match_rms_adamw",
      "ns_steps": 3}),
]


def run(hps, kw, float64):
    params, x, y = gt.start(11)
    lr, alr = hps["learning_rate"], hps["adamw_learning_rate"]

    def make(p):
        muon = torch.optim.Muon([p["w1"], p["w2"]], lr=lr, **kw)
        adamw = torch.optim.AdamW(
            [{"params": [p["w3"]], "weight_decay": hps["adamw_weight_decay"]},
             {"params": [p["b1"], p["b2"], p["b3"]], "weight_decay": 0.0}],
            lr=alr, betas=(hps["adamw_beta1"], hps["adamw_beta2"]), eps=hps["adamw_epsilon"])
        return [muon, adamw]

    saved = muon_mod.torch
    if float64:
        muon_mod.torch = _Float64Torch()
    try:
        return gt.trajectory(params, x, y, make, [[lr], [alr, alr]])
    finally:
        muon_mod.torch = saved


def main():
    print("torch", torch.__version__, file=sys.stderr)
    for case, hps, kw in CASES:
        rec = run(hps, kw, True)
        size = write_case("optim_" + case, rec + gt.hparams(hps))
        bf16 = dict(run(hps, kw, False))
        diff = max((bf16[n] - v).abs().max().item() for n, v in rec if n[0] in "wb")
        print("optim_%s: %d bytes; torch's bfloat16 iteration is %.3g away" % (case, size, diff))


if __name__ == "__main__":
    main()
