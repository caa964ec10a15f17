"""golden_traj.py: the small model and schedule shared by the trajectory fixtures of the
matrix optimizers (make_muon_golden.py, make_sophia_golden.py, make_soap_golden.py,
make_kron_golden.py).

The model is an MLP 6-10-5-3 with tanh (weights w1 [10, 6], w2 [5, 10], w3 [3, 5], biases b1,
b2, b3; other widths on request), torch.nn.Linear's layout, softmax cross-entropy (or, given float targets, the mean squared error) on a fixed batch of
16 points, in
float64 from float32 start values. A trajectory of STEPS steps records, per step t = 1..STEPS,
the schedule's factor f.<t>, every gradient g.<name>.<t> (taken at the parameters before step
t) and every parameter <name>.<t> after it; the C tests replay the gradients, so the
trajectories cannot drift apart through the model. The learning rate is scaled by a linear
warmup over 4 steps and a cosine decay to step STEPS + 4 (never 0).
"""

import math

import torch

DT = torch.float64
STEPS = 24
WARMUP = 4
NAMES = ["w1", "b1", "w2", "b2", "w3", "b3"]
SIZES = (6, 10, 5, 3)  # the layer widths, input first


def shapes(sizes=SIZES):
    """Every parameter's shape for the layer widths `sizes`."""
    out = {}
    for i in range(3):
        out["w%d" % (i + 1)] = (sizes[i + 1], sizes[i])
        out["b%d" % (i + 1)] = (sizes[i + 1],)
    return out


def f32(*shape):
    return (torch.rand(*shape, dtype=torch.float32) * 2 - 1).to(DT)


def factor(t):
    """The schedule's factor at step t (from 1)."""
    if t <= WARMUP:
        return t / WARMUP
    p = (t - WARMUP) / (STEPS + 4 - WARMUP)
    return 0.5 * (1 + math.cos(math.pi * p))


def start(seed, sizes=SIZES):
    """Start values (scaled like torch's default init), the batch and the labels."""
    torch.manual_seed(seed)
    params = {}
    for n, shape in shapes(sizes).items():
        fan_in = sizes[int(n[1]) - 1]
        params[n] = (f32(*shape) / math.sqrt(fan_in)).requires_grad_(True)
    x = f32(16, sizes[0])
    y = torch.randint(0, sizes[3], (16,))
    return params, x, y


def regression_targets(sizes=SIZES):
    """Targets for a mean-squared-error loss (after start(), from the same generator)."""
    return f32(16, sizes[3])


def loss_fn(params, x, y):
    h = torch.tanh(x @ params["w1"].T + params["b1"])
    h = torch.tanh(h @ params["w2"].T + params["b2"])
    out = h @ params["w3"].T + params["b3"]
    if y.dtype.is_floating_point:  # regression targets: mean squared error
        return torch.nn.functional.mse_loss(out, y)
    return torch.nn.functional.cross_entropy(out, y)


def trajectory(params, x, y, make_opts, base_lrs, before_step=None):
    """Runs STEPS steps of the optimizers make_opts(params) returns (a list), each group's lr
    scaled by factor(t) from base_lrs (one list per optimizer, one lr per group).
    before_step(t, opts), if given, runs after the backward pass, before the step (it may pass
    extra arguments by returning a dict of step() keyword arguments per optimizer).
    Returns the tensors to record, with the start values as <name>.0."""
    opts = make_opts(params)
    out = [("steps", torch.tensor(float(STEPS)))]
    out += [(n + ".0", params[n].detach().clone()) for n in NAMES]
    for t in range(1, STEPS + 1):
        f = factor(t)
        for opt, lrs in zip(opts, base_lrs):
            for group, lr in zip(opt.param_groups, lrs):
                group["lr"] = lr * f
        for n in NAMES:
            params[n].grad = None
        loss = loss_fn(params, x, y)
        loss.backward(create_graph=before_step is not None)
        out.append(("f.%d" % t, torch.tensor(f)))
        out += [("g.%s.%d" % (n, t), params[n].grad.detach().clone()) for n in NAMES]
        kwargs = before_step(t, opts) if before_step else [{} for _ in opts]
        for opt, kw in zip(opts, kwargs):
            opt.step(**kw)
        out += [("%s.%d" % (n, t), params[n].detach().clone()) for n in NAMES]
    return out


def hparams(hps):
    return [("hp." + k, torch.tensor(float(v))) for k, v in hps.items()]
