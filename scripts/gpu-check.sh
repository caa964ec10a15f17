#!/bin/sh
# gpu-check.sh: the one prepared check for a machine with an NVIDIA GPU and the CUDA toolkit.
# Builds trainbench with the CUDA backend required (-DTB_CUDA=ON) in build-cuda/, prints the
# GPU, runs the cross-backend test (every kernel and both optimizers, CPU against CUDA), then
# trains fmnist_mlp on the GPU and on the CPU for the same number of steps and prints their
# throughput (examples/s) from the JSON results. Exits non-zero if any part fails.
#   scripts/gpu-check.sh [STEPS]      (default 300 steps; about a minute on a recent GPU)
# Environment: CUDA_ARCH overrides the CUDA architectures (default: the CMake file's 90 + PTX),
# JOBS the build parallelism (default: all cores).
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
steps=${1:-300}
jobs=${JOBS:-$(nproc)}
if [ -z "${OPENBLAS_CORETYPE:-}" ]; then
    flags=$(grep -m1 '^flags' /proc/cpuinfo || true)
    case "$flags" in
        *avx512f*avx512dq*avx512bw*avx512vl*) export OPENBLAS_CORETYPE=SkylakeX ;;
        *avx2*) export OPENBLAS_CORETYPE=Haswell ;;
    esac
fi
command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version \
    --format=csv,noheader || echo "nvidia-smi not found"

echo "== build (TB_CUDA=ON)"
arch=""
[ -n "${CUDA_ARCH:-}" ] && arch="-DCMAKE_CUDA_ARCHITECTURES=$CUDA_ARCH"
cmake -S . -B build-cuda -DCMAKE_BUILD_TYPE=Release -DTB_CUDA=ON $arch > build-cuda.log
cmake --build build-cuda -j "$jobs" >> build-cuda.log 2>&1 || { tail -40 build-cuda.log; exit 1; }

echo "== cross-backend test (CPU against CUDA)"
# run directly (not through ctest) so a skip (exit 77: no usable GPU) fails this script
build-cuda/test_cuda_backend

echo "== train fmnist_mlp, $steps steps (cuda fp32, cuda bf16 products, cpu)"
for run in cuda:fp32 cuda:bf16 cpu:fp32; do
    dev=${run%%:*}
    prec=${run#*:}
    out=build-cuda/train-$dev-$prec.json
    build-cuda/trainbench train --device "$dev" --precision "$prec" --steps "$steps" --evals 1 \
        --json -q > "$out"
    /usr/bin/python3 - "$out" "$dev $prec" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print(f"{sys.argv[2]:10s} {r['examples_per_s']:10.1f} examples/s  train {r['train_time_s']:.2f} s"
      f"  final loss {r['final_train_loss']:.4f}  test accuracy {r['test']['accuracy']:.4f}"
      f"  [{r['backend']}]")
PY
done
echo "gpu-check: done"
