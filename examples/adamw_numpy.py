"""adamw_numpy.py: AdamW (Loshchilov & Hutter) as a Python submission, in numpy.

    trainbench bench --preset quick -s adamw -s examples/adamw_numpy.py --name numpy

The update is the built-in adamw's, operation for operation in float32 (the bias-corrected
moments, decay w *= 1 - lr * wd on weights and embeddings only), over the flat buffers: one
numpy call per operation for the whole model, in place, with no allocation per step.
docs/SUBMISSIONS.md ("Python submissions") describes the functions and their arguments.
"""

import numpy as np

import trainbench

SUBMISSION_NAME = "adamw_numpy"
# the built-in adamw's default search space (search_spaces/adamw.json), AlgoPerf's format
TUNING_SEARCH_SPACE = {
    "learning_rate": {"min": 3e-4, "max": 3e-3, "scaling": "log"},
    "beta1": {"feasible_points": [0.9]},
    "beta2": {"feasible_points": [0.999]},
    "epsilon": {"feasible_points": [1e-8]},
    "weight_decay": {"min": 1e-4, "max": 1e-1, "scaling": "log"},
}


def get_batch_size(workload_name):
    return None  # the workload's default batch size


def init_optimizer_state(workload, model_params, model_state, hyperparameters, rng):
    hp = hyperparameters
    lr = getattr(hp, "learning_rate", 1e-3)
    wd = getattr(hp, "weight_decay", 0.01)
    flat = model_params.flat
    # the factor each value is multiplied by before the step: 1 - lr wd where it decays
    decay = np.ones_like(flat)
    if wd != 0.0:
        for name, kind, start, stop in model_params.flat_types:
            if kind in trainbench.DECAYED:
                decay[start:stop] = 1.0 - lr * wd
    return {
        "lr": lr,
        "beta1": getattr(hp, "beta1", 0.9),
        "beta2": getattr(hp, "beta2", 0.999),
        "epsilon": getattr(hp, "epsilon", 1e-8),
        "decay": decay,
        "m": np.zeros_like(flat),
        "v": np.zeros_like(flat),
        "tmp": np.empty_like(flat),
        "step": np.empty_like(flat),
        "t": 0,
    }


def update_params(workload, current_param_container, current_params_types, model_state,
                  hyperparameters, batch, loss_type, optimizer_state, eval_results,
                  global_step, rng):
    s = optimizer_state
    workload.loss_and_grad(batch)  # forward, loss, backward: the gradients in flat_grads
    w, g = current_param_container.flat, current_param_container.flat_grads
    m, v, tmp, step = s["m"], s["v"], s["tmp"], s["step"]
    b1, b2 = s["beta1"], s["beta2"]
    s["t"] += 1
    c_m = s["lr"] / (1.0 - b1 ** s["t"])
    inv_bc2 = 1.0 / (1.0 - b2 ** s["t"])
    m *= b1                                   # m = b1 m + (1 - b1) g
    np.multiply(g, 1.0 - b1, out=tmp)
    m += tmp
    v *= b2                                   # v = b2 v + (1 - b2) g g
    np.multiply(g, 1.0 - b2, out=tmp)
    tmp *= g
    v += tmp
    np.multiply(v, inv_bc2, out=tmp)          # sqrt(v / bc2) + eps
    np.sqrt(tmp, out=tmp)
    tmp += s["epsilon"]
    np.multiply(m, c_m, out=step)             # lr / bc1 m / (sqrt(v / bc2) + eps)
    step /= tmp
    w *= s["decay"]                           # w = w (1 - lr wd) - step
    w -= step
    return optimizer_state, current_param_container, model_state
