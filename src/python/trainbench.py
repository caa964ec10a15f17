"""trainbench: the module a Python submission sees (embedded in the trainbench library).

The trial's process runs the submission file with this module importable as `trainbench`.
It wraps the engine's flat parameter and gradient buffers as numpy arrays (views: no copy is
ever made), holds the workload's facts and the hyperparameters, and adapts torch.optim
optimizers to the same buffers (torch.from_numpy). docs/SUBMISSIONS.md describes the API.
"""

import traceback as _traceback
import types as _types

# The kinds of parameters (AlgoPerf's ParameterType, as far as the engine distinguishes them):
# the values of Params.types.
WEIGHT = "weight"
BIAS = "bias"
NORM = "norm"
EMBEDDING = "embedding"
_KINDS = (WEIGHT, BIAS, NORM, EMBEDDING)
# The kinds the built-in optimizers apply weight decay to.
DECAYED = (WEIGHT, EMBEDDING)


class Params(dict):
    """The parameters: name -> numpy float32 array, a view of the engine's value buffer.

    Update them in place (w -= ..., np.multiply(w, x, out=w)): the engine reads its own
    buffers, so rebinding a name to a new array changes nothing. Besides the mapping:
      grads      name -> the gradient array of the same shape (a view of the gradient buffer)
      types      name -> its kind (WEIGHT, BIAS, NORM, EMBEDDING)
      flat       every value in one 1-D array (tensors padded to 16 floats; padding stays 0)
      flat_grads every gradient in one 1-D array, laid out as flat
      flat_types (name, kind, start, stop) of each tensor in flat
    """


def _make_params(values, grads, layout):
    import numpy as np
    flat = np.frombuffer(values, dtype=np.float32)
    flat_grads = np.frombuffer(grads, dtype=np.float32)
    params = Params()
    params.grads = {}
    params.types = {}
    params.flat = flat
    params.flat_grads = flat_grads
    params.flat_types = []
    for name, kind, offset, shape in layout:
        n = 1
        for d in shape:
            n *= d
        params[name] = flat[offset:offset + n].reshape(shape)
        params.grads[name] = flat_grads[offset:offset + n].reshape(shape)
        params.types[name] = _KINDS[kind]
        params.flat_types.append((name, _KINDS[kind], offset, offset + n))
    return params


class Batch:
    """A training batch on the engine's tape, valid during the call that received it (or, from
    data_selection's input queue, during that step). `size`: its examples."""
    __slots__ = ("_handle", "_token", "size")

    def __init__(self, handle, token, size):
        self._handle = handle
        self._token = token
        self.size = size

    def __repr__(self):
        return "trainbench.Batch(size=%d)" % self.size


class InputQueue:
    """data_selection's input_queue: next(queue) is the next batch in the workload's order."""
    __slots__ = ("_next",)

    def __init__(self, next_batch):
        self._next = next_batch

    def __iter__(self):
        return self

    def __next__(self):
        return self._next()


class Workload:
    """The workload's facts and its fixed function.

    name, base, metric, lower_is_better, default_batch_size, step_hint, max_runtime_s,
    validation_target, loss (in words), threads (the trial's CPU threads), param_count and
    numel; loss_and_grad(batch): the forward pass, the loss and the backward pass on batch,
    the gradients written to Params.grads; returns the loss (a float)."""

    def __init__(self, facts, loss_and_grad):
        self.__dict__.update(facts)
        self.loss_and_grad = loss_and_grad

    def __repr__(self):
        return "trainbench.Workload(%r)" % self.name


def _hparams(point):
    """The trial's hyperparameters: attributes (hp.learning_rate), as AlgoPerf's namedtuple;
    getattr(hp, name, default) for one the search space may not have."""
    return _types.SimpleNamespace(**point)


def _describe(exc):
    """An exception in one line: its type and message first, then where it was raised (the
    innermost frames), so that a message cut short keeps what matters."""
    head = "".join(_traceback.format_exception_only(type(exc), exc)).strip().replace("\n", " ")
    frames = _traceback.extract_tb(exc.__traceback__)[-3:]
    where = "; ".join("%s:%d in %s" % (f.filename, f.lineno, f.name) for f in reversed(frames))
    return head + (" (at " + where + ")" if where else "")


def _check_bindings(source, path):
    """The names a submission file binds at its top level (functions, assignments, imports),
    and its SUBMISSION_NAME and TUNING_SEARCH_SPACE literals, without running it."""
    import ast
    import json
    tree = ast.parse(source, filename=path)
    names = set()
    literals = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                if isinstance(t, ast.Name):
                    names.add(t.id)
                    if t.id in ("SUBMISSION_NAME", "TUNING_SEARCH_SPACE") and node.value:
                        try:
                            literals[t.id] = ast.literal_eval(node.value)
                        except ValueError as e:
                            raise ValueError("%s must be a literal (%s)" % (t.id, e))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for a in node.names:
                names.add((a.asname or a.name).split(".")[0])
    name = literals.get("SUBMISSION_NAME")
    if name is not None and not isinstance(name, str):
        raise ValueError("SUBMISSION_NAME must be a string")
    space = literals.get("TUNING_SEARCH_SPACE")
    if space is not None and not isinstance(space, str):
        space = json.dumps(space)
    return sorted(names), name, space


def torch_optimizer(cls, params, no_decay=(BIAS, NORM), **options):
    """A torch.optim optimizer over the engine's buffers: cls (e.g. torch.optim.AdamW) made on
    torch tensors that share the memory of params (torch.from_numpy), each with its gradient
    array as .grad. Parameters whose kind is in no_decay get weight_decay 0 (as the built-in
    optimizers do); the others the weight_decay of options. Call its step() after
    workload.loss_and_grad(batch)."""
    import torch
    decay, plain = [], []
    for name, value in params.items():
        t = torch.from_numpy(value)
        t.grad = torch.from_numpy(params.grads[name])
        (plain if params.types[name] in no_decay else decay).append(t)
    groups = [{"params": decay}]
    if plain:
        groups.append({"params": plain, "weight_decay": 0.0})
    return cls([g for g in groups if g["params"]], **options)
