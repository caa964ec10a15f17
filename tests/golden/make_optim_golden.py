#!/usr/bin/python3
"""make_optim_golden.py: writes the torch.optim reference trajectories that
tests/test_optim_torch.c compares trainbench's optimizers with.

Run with Debian's python3-torch:  /usr/bin/python3 tests/golden/make_optim_golden.py
It rewrites tests/golden/optim_<case>.bin deterministically (torch.manual_seed), in the format of
make_golden.py / tests/golden.h.

Every case optimizes two tensors, a weight "w" [3, 4] and a bias "b" [4], for 5 steps with a
fixed sequence of gradients. As in trainbench, weight decay applies to the weight only: the bias
sits in a second parameter group with weight_decay 0. Parameters are float64 tensors holding the
float32 initial values, so the stored trajectory is (nearly) exact. Each file holds:
    w0, b0                 initial values
    gw.<t>, gb.<t>         the gradient given at step t (t = 1..5)
    w.<t>, b.<t>           the parameters after step t
    hp.<name>              every trainbench hyperparameter of the case (0-d), by trainbench name
The C test knows which trainbench algorithm each case runs.

torch.optim.NAdam runs with foreach=True: in torch 1.13 the single-tensor path multiplies
mu_product_next by mu_t twice (mu_product * mu * mu_next after mu_product *= mu), which upstream
fixed later (pytorch/pytorch#92699); the multi-tensor path has the intended formula, which is
what trainbench implements. The script prints how far the two paths are apart.
"""

import os

import torch

from make_golden import write_case

OUT_DIR = os.path.dirname(os.path.abspath(__file__))
DT = torch.float64
STEPS = 5


def f32(*shape):
    return (torch.rand(*shape, dtype=torch.float32) * 2 - 1).to(DT)


def trajectory(make_opt, w0, b0, gws, gbs):
    w = w0.clone().requires_grad_(True)
    b = b0.clone().requires_grad_(True)
    opt = make_opt(w, b)
    out = []
    for gw, gb in zip(gws, gbs):
        w.grad = gw.clone()
        b.grad = gb.clone()
        opt.step()
        out.append((w.detach().clone(), b.detach().clone()))
    return out


def groups(w, b, wd):
    return [{"params": [w], "weight_decay": wd}, {"params": [b], "weight_decay": 0.0}]


CASES = [
    # (case, trainbench hyperparameters, torch optimizer factory)
    ("sgd", {"learning_rate": 0.1, "momentum": 0.0, "nesterov": 0, "weight_decay": 0.01},
     lambda w, b: torch.optim.SGD(groups(w, b, 0.01), lr=0.1)),
    ("momentum", {"learning_rate": 0.1, "momentum": 0.9, "weight_decay": 0.01},
     lambda w, b: torch.optim.SGD(groups(w, b, 0.01), lr=0.1, momentum=0.9)),
    ("nesterov", {"learning_rate": 0.1, "momentum": 0.9, "weight_decay": 0.01},
     lambda w, b: torch.optim.SGD(groups(w, b, 0.01), lr=0.1, momentum=0.9, nesterov=True)),
    ("adam", {"learning_rate": 0.01, "beta1": 0.8, "beta2": 0.99, "epsilon": 1e-6,
              "weight_decay": 0.05},
     lambda w, b: torch.optim.Adam(groups(w, b, 0.05), lr=0.01, betas=(0.8, 0.99), eps=1e-6)),
    ("adamw", {"learning_rate": 0.01, "beta1": 0.8, "beta2": 0.99, "epsilon": 1e-6,
               "weight_decay": 0.1},
     lambda w, b: torch.optim.AdamW(groups(w, b, 0.1), lr=0.01, betas=(0.8, 0.99), eps=1e-6)),
    ("nadam", {"learning_rate": 0.01, "beta1": 0.8, "beta2": 0.99, "epsilon": 1e-6,
               "weight_decay": 0.05, "momentum_decay": 0.004},
     lambda w, b: torch.optim.NAdam(groups(w, b, 0.05), lr=0.01, betas=(0.8, 0.99), eps=1e-6,
                                    momentum_decay=0.004, foreach=True)),
    ("rmsprop", {"learning_rate": 0.01, "rho": 0.9, "momentum": 0.5, "epsilon": 1e-6,
                 "weight_decay": 0.02, "torch_style": 1},
     lambda w, b: torch.optim.RMSprop(groups(w, b, 0.02), lr=0.01, alpha=0.9, eps=1e-6,
                                      momentum=0.5)),
    ("adagrad", {"learning_rate": 0.1, "initial_accumulator": 0.1, "epsilon": 1e-10,
                 "weight_decay": 0.02},
     lambda w, b: torch.optim.Adagrad(groups(w, b, 0.02), lr=0.1, initial_accumulator_value=0.1,
                                      eps=1e-10)),
]


def main():
    torch.manual_seed(7)
    w0, b0 = f32(3, 4), f32(4)
    gws = [f32(3, 4) for _ in range(STEPS)]
    gbs = [f32(4) for _ in range(STEPS)]
    for case, hps, make_opt in CASES:
        traj = trajectory(make_opt, w0, b0, gws, gbs)
        tensors = [("w0", w0), ("b0", b0)]
        for t in range(STEPS):
            tensors += [("gw.%d" % (t + 1), gws[t]), ("gb.%d" % (t + 1), gbs[t])]
            tensors += [("w.%d" % (t + 1), traj[t][0]), ("b.%d" % (t + 1), traj[t][1])]
        tensors += [("hp." + k, torch.tensor(float(v))) for k, v in hps.items()]
        size = write_case("optim_" + case, tensors)
        print("optim_%s: %d bytes" % (case, size))
    single = trajectory(lambda w, b: torch.optim.NAdam(
        groups(w, b, 0.05), lr=0.01, betas=(0.8, 0.99), eps=1e-6, momentum_decay=0.004,
        foreach=False), w0, b0, gws, gbs)
    multi = trajectory(CASES[5][2], w0, b0, gws, gbs)
    diff = max((s[0] - m[0]).abs().max().item() for s, m in zip(single, multi))
    print("torch 1.13 NAdam single-tensor vs foreach path: max |diff| of w over %d steps = %.3g"
          % (STEPS, diff))


if __name__ == "__main__":
    main()
