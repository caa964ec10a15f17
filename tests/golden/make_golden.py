#!/usr/bin/python3
"""make_golden.py: writes the PyTorch reference fixtures that tests/test_golden*.c compare with.

Run with Debian's python3-torch:  /usr/bin/python3 tests/golden/make_golden.py
It rewrites tests/golden/<case>.bin (one file per case) deterministically (torch.manual_seed).

Inputs are drawn as float32; references are computed in float64 from those float32 inputs and
stored rounded to float32, so the fixtures carry (nearly) exact answers and the C test's
tolerance only has to absorb trainbench's own float32 error.

Gradient cases use the scalar loss L = sum(y * dy) with a fixed random dy (stored as "dy"), so
the stored gradients ("dx", "dw", ...) are the back-propagation of dy. Loss cases and the two
small models store the loss value ("loss") and the gradients of that loss (seed 1).

File format (all little-endian):
    magic    8 bytes  b"TBGOLD01"
    count    uint32   number of tensors
    then `count` tensors, each:
        name_len uint32, name (name_len bytes of ASCII, no terminator)
        dtype    uint32   0 = float32, 1 = int32
        ndim     uint32   0 (a scalar) to 6
        shape    int64[ndim]
        data     numel * 4 bytes, row-major (C order)
Scalar settings of a case (stride, smoothing, eps, ...) are stored as 0-d tensors too.
"""

import math
import os
import struct

import torch
import torch.nn.functional as F

OUT_DIR = os.path.dirname(os.path.abspath(__file__))
MAGIC = b"TBGOLD01"
DT = torch.float64  # reference precision


def write_case(name, tensors):
    """tensors: list of (name, tensor); float tensors are stored as float32, integer as int32."""
    path = os.path.join(OUT_DIR, name + ".bin")
    with open(path, "wb") as f:
        f.write(MAGIC)
        f.write(struct.pack("<I", len(tensors)))
        for tname, t in tensors:
            t = torch.as_tensor(t).detach()
            if t.dtype in (torch.int32, torch.int64):
                code, data = 1, t.to(torch.int32)
            else:
                code, data = 0, t.to(torch.float32)
            data = data.contiguous()
            raw = tname.encode("ascii")
            f.write(struct.pack("<I", len(raw)))
            f.write(raw)
            f.write(struct.pack("<II", code, data.dim()))
            f.write(struct.pack("<%dq" % data.dim(), *data.shape))
            f.write(data.numpy().astype("<f4" if code == 0 else "<i4").tobytes())
    return os.path.getsize(path)


def rand(*shape, lo=-1.0, hi=1.0):
    """float32 uniform values, returned as a float64 tensor holding exactly those values."""
    return (torch.rand(*shape, dtype=torch.float32) * (hi - lo) + lo).to(DT)


def leaf(t):
    return t.clone().requires_grad_(True)


def scalar(v, integer=False):
    return torch.tensor(v, dtype=torch.int32 if integer else torch.float32)


def dot_backward(y, leaves):
    """Backward of L = sum(y * dy) for a fixed random dy; returns dy and the leaves' grads."""
    dy = rand(*y.shape)
    (y * dy).sum().backward()
    return dy, [v.grad for v in leaves]


# ---- dense ops ------------------------------------------------------------------------------


def case_linear():
    x, w, b = leaf(rand(2, 3, 10)), leaf(rand(7, 10)), leaf(rand(7))
    y = F.linear(x, w, b)
    dy, (dx, dw, db) = dot_backward(y, [x, w, b])
    return [("x", x), ("w", w), ("b", b), ("dy", dy), ("y", y), ("dx", dx), ("dw", dw),
            ("db", db)]


def case_matmul(trans_b):
    a = leaf(rand(2, 3, 4, 5))
    b = leaf(rand(2, 3, 6, 5) if trans_b else rand(2, 3, 5, 6))
    y = a @ (b.transpose(-1, -2) if trans_b else b)
    dy, (da, db) = dot_backward(y, [a, b])
    return [("a", a), ("b", b), ("dy", dy), ("y", y), ("da", da), ("db", db)]


ACTIVATIONS = {
    "relu": torch.relu,
    "gelu": lambda x: F.gelu(x),  # exact erf form
    "silu": F.silu,
    "tanh": torch.tanh,
    "sigmoid": torch.sigmoid,
}


def case_activation(fn):
    x = leaf(rand(4, 50, lo=-4.0, hi=4.0))
    y = fn(x)
    dy, (dx,) = dot_backward(y, [x])
    return [("x", x), ("dy", dy), ("y", y), ("dx", dx)]


# ---- losses ---------------------------------------------------------------------------------


def case_xent(smoothing):
    logits = leaf(rand(8, 5, lo=-3.0, hi=3.0))
    labels = torch.randint(0, 5, (8,))
    loss = F.cross_entropy(logits, labels, label_smoothing=smoothing)
    loss.backward()
    return [("logits", logits), ("labels", labels), ("smoothing", scalar(smoothing)),
            ("loss", loss), ("dlogits", logits.grad)]


def case_mse():
    pred, target = leaf(rand(5, 6)), leaf(rand(5, 6))
    loss = F.mse_loss(pred, target)
    loss.backward()
    return [("pred", pred), ("target", target), ("loss", loss), ("dpred", pred.grad),
            ("dtarget", target.grad)]


def case_bce():
    logits = leaf(rand(5, 6, lo=-4.0, hi=4.0))
    target = rand(5, 6, lo=0.0, hi=1.0)
    loss = F.binary_cross_entropy_with_logits(logits, target)
    loss.backward()
    return [("logits", logits), ("target", target), ("loss", loss), ("dlogits", logits.grad)]


# ---- convolution, pooling, normalisation ----------------------------------------------------


def case_conv2d():
    x, w, b = leaf(rand(2, 3, 9, 9)), leaf(rand(4, 3, 3, 3)), leaf(rand(4))
    y = F.conv2d(x, w, b, stride=2, padding=1)
    dy, (dx, dw, db) = dot_backward(y, [x, w, b])
    return [("x", x), ("w", w), ("b", b), ("stride", scalar(2, True)), ("pad", scalar(1, True)),
            ("dy", dy), ("y", y), ("dx", dx), ("dw", dw), ("db", db)]


def case_pool(kind):
    x = leaf(rand(2, 3, 8, 8))
    k, s, p = 3, 2, 1
    if kind == "max":
        y = F.max_pool2d(x, k, s, p)
    else:
        y = F.avg_pool2d(x, k, s, p, count_include_pad=True)
    dy, (dx,) = dot_backward(y, [x])
    return [("x", x), ("kernel", scalar(k, True)), ("stride", scalar(s, True)),
            ("pad", scalar(p, True)), ("dy", dy), ("y", y), ("dx", dx)]


def case_global_avgpool():
    x = leaf(rand(2, 3, 5, 5))
    y = x.mean(dim=(2, 3))
    dy, (dx,) = dot_backward(y, [x])
    return [("x", x), ("dy", dy), ("y", y), ("dx", dx)]


def case_batchnorm(shape, training):
    c = shape[1]
    x = leaf(rand(*shape, lo=-2.0, hi=3.0))
    gamma, beta = leaf(rand(c, lo=0.5, hi=1.5)), leaf(rand(c))
    rm0, rv0 = rand(c), rand(c, lo=0.5, hi=2.0)
    rm, rv = rm0.clone(), rv0.clone()
    momentum, eps = 0.1, 1e-5
    y = F.batch_norm(x, rm, rv, gamma, beta, training=training, momentum=momentum, eps=eps)
    dy, (dx, dgamma, dbeta) = dot_backward(y, [x, gamma, beta])
    return [("x", x), ("gamma", gamma), ("beta", beta), ("running_mean", rm0),
            ("running_var", rv0), ("momentum", scalar(momentum)), ("eps", scalar(eps)),
            ("dy", dy), ("y", y), ("dx", dx), ("dgamma", dgamma), ("dbeta", dbeta),
            ("new_running_mean", rm), ("new_running_var", rv)]


def case_layernorm():
    x = leaf(rand(2, 3, 16, lo=-2.0, hi=3.0))
    gamma, beta = leaf(rand(16, lo=0.5, hi=1.5)), leaf(rand(16))
    eps = 1e-5
    y = F.layer_norm(x, (16,), gamma, beta, eps)
    dy, (dx, dgamma, dbeta) = dot_backward(y, [x, gamma, beta])
    return [("x", x), ("gamma", gamma), ("beta", beta), ("eps", scalar(eps)), ("dy", dy),
            ("y", y), ("dx", dx), ("dgamma", dgamma), ("dbeta", dbeta)]


# ---- embedding and attention ----------------------------------------------------------------


def case_embedding():
    table = leaf(rand(10, 6))
    idx = torch.tensor([[1, 4, 4, 9, 0], [7, 1, 3, 1, 2]])  # repeats: gradients accumulate
    y = F.embedding(idx, table)
    dy, (dtable,) = dot_backward(y, [table])
    return [("table", table), ("idx", idx), ("dy", dy), ("y", y), ("dtable", dtable)]


def attention_ref(qkv, heads):
    """qkv [B,T,3C]: q, k, v side by side; head h uses columns h*hd..(h+1)*hd of each."""
    b, t, c3 = qkv.shape
    c = c3 // 3
    hd = c // heads
    q, k, v = qkv.split(c, dim=2)
    q, k, v = (z.view(b, t, heads, hd).transpose(1, 2) for z in (q, k, v))  # [B,h,T,hd]
    att = (q @ k.transpose(-1, -2)) / math.sqrt(hd)
    mask = torch.ones(t, t, dtype=torch.bool).tril()
    att = att.masked_fill(~mask, float("-inf")).softmax(dim=-1)
    y = att @ v  # [B,h,T,hd]
    return y.transpose(1, 2).contiguous().view(b, t, c)


def case_attention():
    heads = 2
    qkv = leaf(rand(2, 5, 3 * 8, lo=-2.0, hi=2.0))
    y = attention_ref(qkv, heads)
    dy, (dqkv,) = dot_backward(y, [qkv])
    return [("qkv", qkv), ("heads", scalar(heads, True)), ("dy", dy), ("y", y), ("dqkv", dqkv)]


# ---- small models ---------------------------------------------------------------------------


def torch_default_init(out_f, fan_in, *shape):
    bound = 1.0 / math.sqrt(fan_in)
    return leaf(rand(out_f, *shape, lo=-bound, hi=bound))


def case_mlp():
    """20-32-32-5 MLP, gelu, no dropout, softmax cross-entropy with label smoothing 0.1."""
    sizes = [20, 32, 32, 5]
    params = []
    for i in range(3):
        params.append(("fc%d.weight" % (i + 1), torch_default_init(sizes[i + 1], sizes[i],
                                                                   sizes[i])))
        params.append(("fc%d.bias" % (i + 1), torch_default_init(sizes[i + 1], sizes[i])))
    x = rand(16, 20, lo=-2.0, hi=2.0)
    labels = torch.randint(0, 5, (16,))
    smoothing = 0.1
    h = x
    for i in range(3):
        h = F.linear(h, params[2 * i][1], params[2 * i + 1][1])
        if i < 2:
            h = F.gelu(h)
    loss = F.cross_entropy(h, labels, label_smoothing=smoothing)
    loss.backward()
    out = [("x", x), ("labels", labels), ("smoothing", scalar(smoothing)), ("loss", loss)]
    out += params
    out += [("grad." + n, p.grad) for n, p in params]
    return out


def case_convnet():
    """conv(3->6, k3 s1 p1) - batchnorm (training) - relu - maxpool(2, 2) - flatten - linear(96->5),
    softmax cross-entropy with label smoothing 0.05."""
    params = [
        ("conv.weight", torch_default_init(6, 27, 3, 3, 3)),
        ("conv.bias", torch_default_init(6, 27)),
        ("bn.weight", leaf(rand(6, lo=0.5, hi=1.5))),
        ("bn.bias", leaf(rand(6, lo=-0.5, hi=0.5))),
        ("fc.weight", torch_default_init(5, 96, 96)),
        ("fc.bias", torch_default_init(5, 96)),
    ]
    p = dict(params)
    x = rand(4, 3, 8, 8)
    labels = torch.randint(0, 5, (4,))
    smoothing, momentum, eps = 0.05, 0.1, 1e-5
    rm, rv = torch.zeros(6, dtype=DT), torch.ones(6, dtype=DT)
    h = F.conv2d(x, p["conv.weight"], p["conv.bias"], stride=1, padding=1)
    h = F.batch_norm(h, rm, rv, p["bn.weight"], p["bn.bias"], training=True, momentum=momentum,
                     eps=eps)
    h = F.max_pool2d(F.relu(h), 2, 2)
    h = F.linear(h.reshape(4, 96), p["fc.weight"], p["fc.bias"])
    loss = F.cross_entropy(h, labels, label_smoothing=smoothing)
    loss.backward()
    out = [("x", x), ("labels", labels), ("smoothing", scalar(smoothing)),
           ("momentum", scalar(momentum)), ("eps", scalar(eps)), ("loss", loss),
           ("new_running_mean", rm), ("new_running_var", rv)]
    out += params
    out += [("grad." + n, q.grad) for n, q in params]
    return out


def main():
    torch.manual_seed(20240601)
    cases = [
        ("linear", case_linear),
        ("matmul", lambda: case_matmul(False)),
        ("matmul_tb", lambda: case_matmul(True)),
    ]
    cases += [("act_" + n, (lambda f: lambda: case_activation(f))(f))
              for n, f in ACTIVATIONS.items()]
    cases += [
        ("xent_s0", lambda: case_xent(0.0)),
        ("xent_s01", lambda: case_xent(0.1)),
        ("mse", case_mse),
        ("bce", case_bce),
        ("conv2d", case_conv2d),
        ("maxpool", lambda: case_pool("max")),
        ("avgpool", lambda: case_pool("avg")),
        ("global_avgpool", case_global_avgpool),
        ("batchnorm_train", lambda: case_batchnorm((4, 3, 5, 5), True)),
        ("batchnorm_train_2d", lambda: case_batchnorm((8, 6), True)),
        ("batchnorm_eval", lambda: case_batchnorm((4, 3, 5, 5), False)),
        ("layernorm", case_layernorm),
        ("embedding", case_embedding),
        ("attention", case_attention),
        ("mlp", case_mlp),
        ("convnet", case_convnet),
    ]
    total = 0
    for name, fn in cases:
        total += write_case(name, fn())
    print("wrote %d cases, %d bytes, into %s" % (len(cases), total, OUT_DIR))


if __name__ == "__main__":
    main()
