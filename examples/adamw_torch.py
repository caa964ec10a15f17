"""adamw_torch.py: torch.optim.AdamW as a Python submission, unchanged, through the adapter.

    trainbench bench --preset quick -s adamw -s examples/adamw_torch.py --name torch

trainbench.torch_optimizer makes the optimizer on torch tensors that share the engine's
buffers (torch.from_numpy: no copy), each with its gradient as .grad; weight decay on weights
and embeddings only, as the built-in optimizers do. Any torch.optim optimizer (or a
third-party one taking parameter groups) goes the same way. It needs torch importable by the
interpreter trainbench embeds (Debian's python3-torch, or a virtual environment's
site-packages on PYTHONPATH: docs/SUBMISSIONS.md).
"""

import torch

import trainbench

SUBMISSION_NAME = "adamw_torch"
TUNING_SEARCH_SPACE = {
    "learning_rate": {"min": 3e-4, "max": 3e-3, "scaling": "log"},
    "beta1": {"feasible_points": [0.9]},
    "beta2": {"feasible_points": [0.999]},
    "epsilon": {"feasible_points": [1e-8]},
    "weight_decay": {"min": 1e-4, "max": 1e-1, "scaling": "log"},
}


def get_batch_size(workload_name):
    return None  # the workload's default batch size


def adamw(params, **options):
    """torch.optim.AdamW in its fused form (one kernel per tensor, no temporaries; on the CPU
    since torch 2.4), else its foreach form (an older torch)."""
    try:
        return trainbench.torch_optimizer(torch.optim.AdamW, params, fused=True, **options)
    except (RuntimeError, TypeError):
        return trainbench.torch_optimizer(torch.optim.AdamW, params, foreach=True, **options)


def init_optimizer_state(workload, model_params, model_state, hyperparameters, rng):
    # torch's threads are the engine's: the same OpenMP runtime, the trial's thread count
    torch.set_num_threads(workload.threads)
    hp = hyperparameters
    return adamw(
        model_params,
        lr=getattr(hp, "learning_rate", 1e-3),
        betas=(getattr(hp, "beta1", 0.9), getattr(hp, "beta2", 0.999)),
        eps=getattr(hp, "epsilon", 1e-8),
        weight_decay=getattr(hp, "weight_decay", 0.01))


def update_params(workload, current_param_container, current_params_types, model_state,
                  hyperparameters, batch, loss_type, optimizer_state, eval_results,
                  global_step, rng):
    workload.loss_and_grad(batch)
    optimizer_state.step()
    return optimizer_state, current_param_container, model_state
