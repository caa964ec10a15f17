#!/usr/bin/env python3
"""curvature.py: K-FAC and EKFAC against first-order methods on fmnist_autoencoder.

The classic K-FAC benchmark (Martens & Grosse 2015; George et al. 2018 for EKFAC) at CPU
scale: for each of momentum (SGD + Nesterov), Adam, K-FAC and EKFAC, a short learning-rate
sweep picks the setting with the lowest training loss after --sweep-epochs, then one run of
--epochs records the training loss against timed seconds and against epochs. Writes the raw
curves (docs/figures/curvature_<algo>.csv), two SVG figures (docs/figures/curvature_time.svg,
curvature_epoch.svg) and prints a markdown summary table.

    bench/curvature.py --epochs 2 --sweep-epochs 0.3
"""
import argparse
import csv
import math
import os
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Learning-rate grids (3 points, a factor ~3 apart), centred where short runs did best here.
# The workload's loss is a mean over the 784 pixels, so its gradients are 784 times smaller
# than the per-image sums of the K-FAC papers: the curvature methods' learning rates are
# correspondingly larger.
SWEEPS = {
    "nesterov": [0.03, 0.1, 0.3],
    "adam": [1e-3, 3e-3, 1e-2],
    "kfac": [0.3, 1.0, 3.0],
    "ekfac": [0.3, 1.0, 3.0],
}
COLORS = {"nesterov": "#1f77b4", "adam": "#ff7f0e", "kfac": "#2ca02c", "ekfac": "#d62728"}


def run_curve(build, workload, algo, lr, epochs, every, evals):
    cmd = [os.path.join(build, "bench_curve"), "--workload", workload, "--algorithm", algo,
           "--hp", f"learning_rate={lr}", "--epochs", str(epochs), "--every", str(every),
           "--evals", str(evals), "--threads", "2"]
    out = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        return None, out.stderr.strip()
    rows, final = [], ""
    for line in out.stdout.splitlines():
        if line.startswith("#"):
            final = line[2:]
        elif line and line[0].isdigit():
            step, epoch, t, loss, val = line.split(",")
            rows.append((int(step), float(epoch), float(t), float(loss),
                         float(val) if val else None))
    return rows, final


def smooth(rows, k=5):
    out = []
    for i in range(len(rows)):
        window = [r[3] for r in rows[max(0, i - k + 1):i + 1] if math.isfinite(r[3])]
        out.append(sum(window) / len(window) if window else float("nan"))
    return out


def svg(curves, xkey, xlabel, path, title):
    w, h, ml, mr, mt, mb = 640, 400, 60, 120, 30, 45
    xs = [r[xkey] for rows in curves.values() for r in rows]
    ys = [y for rows in curves.values() for y in smooth(rows) if math.isfinite(y)]
    x0, x1 = 0.0, max(xs)
    y0, y1 = min(ys), max(ys)
    y1 = min(y1, y0 + 3 * (sorted(ys)[len(ys) // 2] - y0) + 1e-9)  # clip the first steps
    sx = lambda x: ml + (w - ml - mr) * (x - x0) / (x1 - x0)  # noqa: E731
    sy = lambda y: mt + (h - mt - mb) * (1 - (min(y, y1) - y0) / (y1 - y0))  # noqa: E731
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
             f'font-family="sans-serif" font-size="12">',
             f'<rect width="{w}" height="{h}" fill="white"/>',
             f'<text x="{w / 2}" y="18" text-anchor="middle">{title}</text>',
             f'<line x1="{ml}" y1="{h - mb}" x2="{w - mr}" y2="{h - mb}" stroke="black"/>',
             f'<line x1="{ml}" y1="{mt}" x2="{ml}" y2="{h - mb}" stroke="black"/>',
             f'<text x="{(ml + w - mr) / 2}" y="{h - 10}" text-anchor="middle">{xlabel}</text>',
             f'<text x="15" y="{h / 2}" transform="rotate(-90 15 {h / 2})" '
             f'text-anchor="middle">training loss (smoothed)</text>']
    for i in range(5):
        xv, yv = x0 + (x1 - x0) * i / 4, y0 + (y1 - y0) * i / 4
        parts.append(f'<text x="{sx(xv)}" y="{h - mb + 15}" text-anchor="middle">{xv:.3g}</text>')
        parts.append(f'<text x="{ml - 5}" y="{sy(yv) + 4}" text-anchor="end">{yv:.3f}</text>')
    for k, (algo, rows) in enumerate(curves.items()):
        pts = " ".join(f"{sx(r[xkey]):.1f},{sy(y):.1f}" for r, y in zip(rows, smooth(rows))
                       if math.isfinite(y))
        parts.append(f'<polyline fill="none" stroke="{COLORS[algo]}" stroke-width="2" '
                     f'points="{pts}"/>')
        parts.append(f'<text x="{w - mr + 10}" y="{mt + 20 + 18 * k}" '
                     f'fill="{COLORS[algo]}">{algo}</text>')
    parts.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(parts) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workload", default="fmnist_autoencoder")
    ap.add_argument("--epochs", type=float, default=2.0)
    ap.add_argument("--sweep-epochs", type=float, default=0.3)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--out", default=os.path.join(ROOT, "docs", "figures"))
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    best = {}
    for algo, lrs in SWEEPS.items():
        scores = []
        for lr in lrs:
            rows, final = run_curve(args.build, args.workload, algo, lr, args.sweep_epochs,
                                    0.5, 0)
            loss = smooth(rows)[-1] if rows else float("inf")
            scores.append((loss if math.isfinite(loss) else float("inf"), lr))
            print(f"sweep {algo} lr={lr}: training loss {loss:.4f}", flush=True)
        best[algo] = min(scores)[1]
    curves, summary = {}, []
    for algo, lr in best.items():
        rows, final = run_curve(args.build, args.workload, algo, lr, args.epochs, 0.5, 4)
        if not rows:
            print(f"{algo}: failed: {final}")
            continue
        curves[algo] = rows
        with open(os.path.join(args.out, f"curvature_{algo}.csv"), "w", newline="") as f:
            cw = csv.writer(f)
            cw.writerow(["step", "epoch", "time_s", "train_loss", "validation_metric"])
            cw.writerows(rows)
        sm = smooth(rows)
        summary.append((algo, lr, sm[-1], rows[-1][2], rows[-1][1], final))
        print(f"{algo} lr={lr}: {final}", flush=True)
    svg(curves, 2, "timed training seconds", os.path.join(args.out, "curvature_time.svg"),
        f"{args.workload}: training loss vs time")
    svg(curves, 1, "epochs", os.path.join(args.out, "curvature_epoch.svg"),
        f"{args.workload}: training loss vs epochs")
    print("\n| algorithm | learning rate (swept) | final training loss | seconds | epochs | "
          "final validation / test |")
    print("| --- | ---: | ---: | ---: | ---: | --- |")
    for algo, lr, loss, t, ep, final in summary:
        print(f"| {algo} | {lr:g} | {loss:.4f} | {t:.0f} | {ep:.2f} | {final} |")


if __name__ == "__main__":
    main()
