#!/usr/bin/env python3
"""Writes src/backend/cpu/cpu_gelu_tables.h: the coefficient tables of the CPU backend's GELU.

On [-6, 6], with n = round(2x) and t = x - n/2 in [-1/4, 1/4], the standard normal CDF Phi(x)
and GELU'(x) = Phi(x) + x phi(x) are each a degree-5 polynomial in t per n: the Chebyshev
series of the function on that interval (64-point discrete Chebyshev transform, in double,
from math.erf and math.exp), truncated at degree 5 and written in powers of t. Table d holds
the coefficient of t^d for n at index n & 31 (n in [-12, 12]; the AVX-512 kernel looks them up
with a two-register permute). Pure Python: python3 scripts/gelu_tables.py
"""
import math
import sys

DEG, HALF, NMAX, NODES = 5, 0.25, 12, 64


def phi_cdf(x):
    return 0.5 * (1.0 + math.erf(x / math.sqrt(2.0)))


def gelu_grad(x):
    return phi_cdf(x) + x * math.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi)


def cheb_to_power(c):
    """Coefficients of sum c[j] T_j(u) in powers of u."""
    tk = [[1.0], [0.0, 1.0]]
    for _ in range(2, len(c)):
        a, b = tk[-1], tk[-2]
        nxt = [0.0] + [2.0 * v for v in a]
        for i, v in enumerate(b):
            nxt[i] -= v
        tk.append(nxt)
    out = [0.0] * len(c)
    for j, cj in enumerate(c):
        for i, v in enumerate(tk[j]):
            out[i] += cj * v
    return out


def interval_coefs(f, centre):
    theta = [(2 * k + 1) * math.pi / (2 * NODES) for k in range(NODES)]
    vals = [f(centre + HALF * math.cos(th)) for th in theta]
    c = [2.0 / NODES * sum(v * math.cos(j * th) for v, th in zip(vals, theta))
         for j in range(DEG + 1)]
    c[0] /= 2.0
    power_u = cheb_to_power(c)  # in u = t / HALF
    return [a / HALF ** i for i, a in enumerate(power_u)]


def literal(v):
    s = "%.9g" % v
    if "." not in s and "e" not in s:
        s += ".0"
    return s + "f"


def table(name, f):
    rows = [[0.0] * 32 for _ in range(DEG + 1)]
    for n in range(-NMAX, NMAX + 1):
        for d, a in enumerate(interval_coefs(f, n * 2 * HALF)):
            rows[d][n & 31] = a
    lines = ["static const float %s[%d][32] __attribute__((aligned(64))) = {" % (name, DEG + 1)]
    for row in rows:
        lines.append("    {")
        for i in range(0, 32, 4):
            lines.append("        " + ", ".join(literal(v) for v in row[i:i + 4]) + ",")
        lines.append("    },")
    lines.append("};")
    return "\n".join(lines)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "src/backend/cpu/cpu_gelu_tables.h"
    text = "\n".join([
        "/* cpu_gelu_tables.h: written by scripts/gelu_tables.py (do not edit). For n = round(2x)",
        " * in [-12, 12] and t = x - n/2, Phi(x) and GELU'(x) are sum_d table[d][n & 31] t^d. */",
        "#ifndef TB_CPU_GELU_TABLES_H",
        "#define TB_CPU_GELU_TABLES_H",
        "",
        table("gelu_cdf_coef", phi_cdf),
        "",
        table("gelu_grad_coef", gelu_grad),
        "",
        "#endif",
        ""])
    with open(out, "w") as fh:
        fh.write(text)


if __name__ == "__main__":
    main()
