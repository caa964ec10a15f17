#!/bin/sh
# test.sh: builds and runs the whole test suite twice: an optimised build, then an
# AddressSanitizer + UndefinedBehaviorSanitizer build. Warnings are errors in both.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
# OpenBLAS 0.3.21 falls back to slow generic kernels on CPUs it does not know; choose the
# kernel family from the CPU flags unless the caller did (the trainbench command does the same).
if [ -z "${OPENBLAS_CORETYPE:-}" ]; then
    flags=$(grep -m1 '^flags' /proc/cpuinfo || true)
    case "$flags" in
        *avx512f*avx512dq*avx512bw*avx512vl*) export OPENBLAS_CORETYPE=SkylakeX ;;
        *avx2*) export OPENBLAS_CORETYPE=Haswell ;;
    esac
fi
# Two tests run at once (ctest -j 2) on as many cores, and those that link the library start
# OpenMP teams of their own: at libgomp's default spin (300000 rounds) a waiting thread holds
# its core against the other test's threads (test_ops_attention took 49 s beside another test,
# 1 s alone). Spin briefly, then sleep, as the trainbench command does (docs/SPEED.md), unless
# the caller chose a wait policy.
if [ -z "${OMP_WAIT_POLICY:-}" ] && [ -z "${GOMP_SPINCOUNT:-}" ]; then
    export GOMP_SPINCOUNT=2000
fi
echo "== release build"
scripts/build.sh build
(cd build && ctest --output-on-failure -j 2)
echo "== sanitizer build (address, undefined)"
scripts/build.sh build-asan -DTB_SANITIZE=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
(cd build-asan && ctest --output-on-failure -j 2)
