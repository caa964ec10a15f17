#!/usr/bin/python3
"""make_adam_precision_golden.py: writes the torch.optim.Adam references that
tests/test_optim_precision.c compares trainbench's Adam with where float32 rounding of
1 - beta2 used to show: beta2 = 0.999999 and 0.99999.

Run with any interpreter that has torch (Debian's python3-torch, or a venv with PyTorch from
PyPI):  python3 tests/golden/make_adam_precision_golden.py
It rewrites tests/golden/optim_adam_b2_<digits>.bin deterministically, in the format of
make_golden.py / tests/golden.h.

One weight "w" of 12 elements (0.5 - 0.07 i, in float32), 5 steps of Adam (lr 1e-3, beta1 0.9,
eps 1e-8, no weight decay) with the gradients 0.3 sin(1.7 i + 0.9 t) + 0.05 i (float32),
computed in float64 from those float32 values. Each file holds:
    w0                the initial values
    g.<t>             the gradient of step t (t = 1..5)
    dw.<t>            the change w - w0 after step t (float64 difference, stored as float32:
                      the change is about 1e-3 per step, so storing it keeps 7 digits of it,
                      where storing w (about 0.5) would keep 4)
The hyperparameters are not stored (the format keeps float32, and beta2 = 0.999999 is
0.99999899 in float32): the test sets the same values as above.
"""

import math
import os

import torch

from make_golden import write_case

DT = torch.float64
N = 12
STEPS = 5
CASES = [("optim_adam_b2_999999", 0.999999), ("optim_adam_b2_99999", 0.99999)]


def f32(values):
    return torch.tensor(values, dtype=torch.float32).to(DT)


def main():
    w0 = f32([0.5 - 0.07 * i for i in range(N)])
    grads = [f32([0.3 * math.sin(1.7 * i + 0.9 * t) + 0.05 * i for i in range(N)])
             for t in range(1, STEPS + 1)]
    for name, beta2 in CASES:
        w = w0.clone().requires_grad_(True)
        opt = torch.optim.Adam([w], lr=1e-3, betas=(0.9, beta2), eps=1e-8, weight_decay=0)
        tensors = [("w0", w0)]
        for t, g in enumerate(grads, start=1):
            w.grad = g.clone()
            opt.step()
            tensors += [("g.%d" % t, g), ("dw.%d" % t, w.detach() - w0)]
        size = write_case(name, tensors)
        print("%s: %d bytes (torch %s)" % (name, size, torch.__version__))


if __name__ == "__main__":
    main()
