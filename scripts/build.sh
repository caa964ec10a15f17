#!/bin/sh
# build.sh: configures and builds trainbench (Release) in build/, or in $1 with extra cmake
# arguments after it: scripts/build.sh build-asan -DTB_SANITIZE=ON
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-build}
[ $# -gt 0 ] && shift
cmake -S "$root" -B "$root/$dir" -DCMAKE_BUILD_TYPE=Release "$@" > /dev/null
cmake --build "$root/$dir" -j "$(nproc)"
