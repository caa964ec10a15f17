#!/usr/bin/env python3
"""make_optim_elem_golden.py: writes the reference trajectories that tests/test_optim_elem.c
compares trainbench's element-wise optimizers of 2024-2025 with.

Run with the PyPI packages (not Debian's torch 1.13, which made the older fixtures):
    /path/to/venv/bin/python tests/golden/make_optim_elem_golden.py
made with torch 2.15.0, schedulefree 1.4.1, lion-pytorch 0.2.5, pytorch_optimizer 4.1.0 and
prodigyopt 1.1.2 (the script prints the versions it ran with). It rewrites
tests/golden/optim_elem_<case>.bin deterministically, in the format of make_golden.py.

The model: y = tanh(x W^T + b) with W [3, 4] (a weight: decayed) and b [3] (a bias: not
decayed, in a second parameter group with weight_decay 0, as trainbench exempts biases; MARS
splits by dimension itself and gets one group), loss = mean((y - t)^2) on 8 fixed examples.
Each of STEPS steps takes the gradient at the reference's current parameters, sets every
group's lr to learning_rate times the schedule's factor f_t (warmup over 5 steps, then cosine
to 0.1 of the peak at the last step), and steps. Parameters are float64 holding the float32
start values, and every hyperparameter is rounded to float32 before the reference gets it (the
file stores float32), so the stored trajectory is the reference's nearly exactly. Each file:
    w0, b0                 initial values
    f.<t>                  the schedule's factor at step t (0-d)
    gw.<t>, gb.<t>         the gradient at step t (t = 1..STEPS)
    w.<t>, b.<t>           the parameters after step t
    wx.<t>, bx.<t>         Schedule-Free only, at t in EVAL_AT: the evaluation point x
    hp.<name>              every hyperparameter the case sets (0-d), by trainbench name
"""

import math
import os
import sys

import numpy as np
import torch

from make_golden import write_case

OUT_DIR = os.path.dirname(os.path.abspath(__file__))
DT = torch.float64
STEPS = 25
WARMUP = 5
EVAL_AT = (10, 25)


def f32(*shape):
    return (torch.rand(*shape, dtype=torch.float32) * 2 - 1).to(DT)


def factor(t):
    if t <= WARMUP:
        return t / WARMUP
    p = (t - WARMUP) / (STEPS - WARMUP)
    return 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * p))


def r32(x):
    return float(np.float32(x))


def groups(w, b, wd):
    return [{"params": [w], "weight_decay": wd}, {"params": [b], "weight_decay": 0.0}]


def make_cases():
    import lion_pytorch
    import prodigyopt
    import pytorch_optimizer as po
    import schedulefree as sf

    return [
        # (case, trainbench algorithm, trainbench hyperparameters, reference factory from
        #  (w, b, hp); Schedule-Free cases record x at EVAL_AT)
        ("sfadamw", "schedule_free_adamw",
         {"learning_rate": 0.02, "beta1": 0.9, "beta2": 0.99, "epsilon": 1e-6,
          "weight_decay": 0.05, "warmup_steps": 3, "r": 0.5, "weight_lr_power": 2.0},
         lambda w, b, h: sf.AdamWScheduleFree(
             groups(w, b, h["weight_decay"]), lr=h["learning_rate"],
             betas=(h["beta1"], h["beta2"]), eps=h["epsilon"], warmup_steps=3, r=h["r"],
             weight_lr_power=h["weight_lr_power"])),
        ("sfsgd", "schedule_free_sgd",
         {"learning_rate": 0.5, "momentum": 0.8, "weight_decay": 0.02, "warmup_steps": 4,
          "r": 0.0, "weight_lr_power": 1.0},
         lambda w, b, h: sf.SGDScheduleFree(
             groups(w, b, h["weight_decay"]), lr=h["learning_rate"], momentum=h["momentum"],
             warmup_steps=4, r=h["r"], weight_lr_power=h["weight_lr_power"])),
        ("lion", "lion",
         {"learning_rate": 0.01, "beta1": 0.9, "beta2": 0.99, "weight_decay": 0.5},
         lambda w, b, h: lion_pytorch.Lion(
             groups(w, b, h["weight_decay"]), lr=h["learning_rate"],
             betas=(h["beta1"], h["beta2"]))),
        ("adopt", "adopt",
         {"learning_rate": 0.01, "beta1": 0.9, "beta2": 0.999, "epsilon": 1e-6,
          "weight_decay": 0.05},
         lambda w, b, h: po.ADOPT(
             groups(w, b, h["weight_decay"]), lr=h["learning_rate"],
             betas=(h["beta1"], h["beta2"]), eps=h["epsilon"])),
        ("adopt_decoupled", "adopt",
         {"learning_rate": 0.01, "beta1": 0.8, "beta2": 0.99, "epsilon": 1e-6,
          "weight_decay": 0.1, "weight_decouple": 1},
         lambda w, b, h: po.ADOPT(
             groups(w, b, h["weight_decay"]), lr=h["learning_rate"],
             betas=(h["beta1"], h["beta2"]), eps=h["epsilon"], weight_decouple=True)),
        ("ademamix", "ademamix",
         {"learning_rate": 0.01, "beta1": 0.9, "beta2": 0.99, "beta3": 0.999, "alpha": 4.0,
          "t_alpha_beta3": 10, "epsilon": 1e-6, "weight_decay": 0.1, "weight_decouple": 1},
         lambda w, b, h: po.AdEMAMix(
             groups(w, b, h["weight_decay"]), lr=h["learning_rate"],
             betas=(h["beta1"], h["beta2"], h["beta3"]), alpha=h["alpha"], t_alpha_beta3=10,
             eps=h["epsilon"], weight_decouple=True)),
        ("ademamix_l2", "ademamix",
         {"learning_rate": 0.01, "beta1": 0.9, "beta2": 0.999, "beta3": 0.9999,
          "alpha": 5.0, "epsilon": 1e-8, "weight_decay": 0.05},
         lambda w, b, h: po.AdEMAMix(
             groups(w, b, h["weight_decay"]), lr=h["learning_rate"],
             betas=(h["beta1"], h["beta2"], h["beta3"]), alpha=h["alpha"],
             eps=h["epsilon"])),
        # d0 1e-3, not the default 1e-6: at 1e-6 the first steps move the parameters (about
        # 0.5) by about 1e-6, whose difference p0 - p keeps 4 digits in float32, and the
        # reference itself run in float32 ends 4e-3 from its float64 run after 25 steps
        ("prodigy", "prodigy",
         {"learning_rate": 1.0, "weight_decay": 0.01, "d0": 1e-3},
         lambda w, b, h: prodigyopt.Prodigy(
             groups(w, b, h["weight_decay"]), lr=h["learning_rate"], d0=h["d0"])),
        ("prodigy_options", "prodigy",
         {"learning_rate": 2.0, "beta1": 0.8, "beta2": 0.99, "beta3": 0.95, "epsilon": 1e-6,
          "weight_decay": 0.05, "decouple": 0, "use_bias_correction": 1,
          "safeguard_warmup": 1, "d0": 1e-3, "d_coef": 2.0, "growth_rate": 1.5},
         lambda w, b, h: prodigyopt.Prodigy(
             groups(w, b, h["weight_decay"]), lr=h["learning_rate"],
             betas=(h["beta1"], h["beta2"]), beta3=h["beta3"], eps=h["epsilon"],
             decouple=False, use_bias_correction=True, safeguard_warmup=True, d0=h["d0"],
             d_coef=h["d_coef"], growth_rate=h["growth_rate"])),
        ("mars", "mars",
         {"learning_rate": 0.01, "beta1": 0.95, "beta2": 0.99, "gamma": 0.025,
          "epsilon": 1e-8, "weight_decay": 0.1, "lr_1d": 0.005, "beta1_1d": 0.9,
          "beta2_1d": 0.95, "weight_decay_1d": 0.1},
         lambda w, b, h: po.MARS(
             [w, b], lr=h["learning_rate"], betas=(h["beta1"], h["beta2"]),
             gamma=h["gamma"], eps=h["epsilon"], weight_decay=h["weight_decay"],
             lr_1d=h["lr_1d"], betas_1d=(h["beta1_1d"], h["beta2_1d"]),
             weight_decay_1d=h["weight_decay_1d"])),
    ]


def trajectory(make_opt, hp, w0, b0, x, target, schedule_free):
    w = w0.clone().requires_grad_(True)
    b = b0.clone().requires_grad_(True)
    opt = make_opt(w, b, hp)
    base = [g["lr"] for g in opt.param_groups]
    if schedule_free:
        opt.train()
    out = []
    for t in range(1, STEPS + 1):
        w.grad = None
        b.grad = None
        loss = ((torch.tanh(x @ w.T + b) - target) ** 2).mean()
        loss.backward()
        grads = (w.grad.detach().clone(), b.grad.detach().clone())
        for g, lr in zip(opt.param_groups, base):
            g["lr"] = lr * factor(t)
        opt.step()
        rec = {"gw": grads[0], "gb": grads[1], "w": w.detach().clone(),
               "b": b.detach().clone(), "loss": loss.item()}
        if schedule_free and t in EVAL_AT:
            opt.eval()
            rec["wx"], rec["bx"] = w.detach().clone(), b.detach().clone()
            opt.train()
            # the reference's round trip y -> x -> y rounds; trainbench restores y exactly:
            # continue from the recorded y so that both follow the same trajectory
            with torch.no_grad():
                w.copy_(rec["w"])
                b.copy_(rec["b"])
        out.append(rec)
    return out


def main():
    import importlib.metadata as md
    print("torch %s, schedulefree %s, lion-pytorch %s, pytorch_optimizer %s, prodigyopt %s"
          % (torch.__version__, md.version("schedulefree"), md.version("lion-pytorch"),
             md.version("pytorch_optimizer"), md.version("prodigyopt")))
    torch.manual_seed(11)
    w0, b0 = f32(3, 4) * 0.5, f32(3) * 0.5
    x, target = f32(8, 4), f32(8, 3) * 0.8
    for case, algorithm, hps, make_opt in make_cases():
        hp = {k: r32(v) for k, v in hps.items()}
        sched_free = algorithm.startswith("schedule_free")
        traj = trajectory(make_opt, hp, w0, b0, x, target, sched_free)
        tensors = [("w0", w0), ("b0", b0)]
        for t, rec in enumerate(traj, 1):
            tensors.append(("f.%d" % t, torch.tensor(factor(t))))
            for key in ("gw", "gb", "w", "b", "wx", "bx"):
                if key in rec:
                    tensors.append(("%s.%d" % (key, t), rec[key]))
        tensors += [("hp." + k, torch.tensor(v)) for k, v in hp.items()]
        size = write_case("optim_elem_" + case, tensors)
        print("optim_elem_%s (%s): %d bytes, loss %.4f -> %.4f"
              % (case, algorithm, size, traj[0]["loss"], traj[-1]["loss"]))


if __name__ == "__main__":
    sys.exit(main())
