#!/bin/sh
# algoperf_baselines.sh: AlgoPerf's external-tuning baselines (Dahl et al. 2023, "Benchmarking
# Neural Network Training Algorithms") on the five base workloads, then on the held-out
# variants: `trainbench bench` with the built-in baselines AdamW, NAdamW, Nesterov and
# heavy-ball momentum (each tuned from its search space in search_spaces/), 3 studies x 3
# trials by default (AlgoPerf's study size is 3 x 5: give --trials 5; 3 x 3 is 540 trials,
# about 3.3 hours on a shared 2-core machine, 3 x 5 about 5.5: docs/STUDIES.md),
# scored by `trainbench score`: time to target per workload, the performance profile and the
# benchmark score (docs/TIME_TO_RESULT.md). The claim is that the baselines differ by
# non-trivial gaps, and that some are brittle: reached on a base workload, missed (or far
# slower) on its held-out variant (--variant-rule).
#
# usage: scripts/algoperf_baselines.sh [--time BASIS] DB [bench options...]
#   e.g. scripts/algoperf_baselines.sh algoperf.db --preset full           # the real targets
#        scripts/algoperf_baselines.sh small.db --studies 3 --trials 1 --budget 4 -t 1
#        scripts/algoperf_baselines.sh --time reference shared.db --eval-every-steps 20 -t 1
# --time BASIS (before DB) scores in that time basis as well as in wall time: reference or
# steps, the bases that do not move with a shared machine's load (docs/TIME_TO_RESULT.md,
# "Time bases"; with them, place the evals by steps: --eval-every-steps N).
# Options after DB go to bench (they override the preset, quick by default as bench's, and
# the 3 x 3 study size); the benchmark is named baselines, so a rerun with the same options
# resumes and reuses every finished trial, and other options need another DB. One benchmark
# runs the five base workloads and their ten held-out variants; it is scored twice: every
# workload counted alike, then by AlgoPerf's variant rule. With -w, the workloads named (name
# a base and its variants, e.g. -w fmnist_mlp -w fmnist_mlp_tanh -w fmnist_mlp_narrow).
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${TRAINBENCH:-$root/build/trainbench}
usage="usage: scripts/algoperf_baselines.sh [--time wall|reference|steps] DB [bench options...]"
basis=wall
case ${1:-} in
--time)
    [ $# -ge 2 ] || { echo "$usage" >&2; exit 2; }
    basis=$2
    shift 2
    ;;
--time=*)
    basis=${1#--time=}
    shift
    ;;
esac
case $basis in
wall | reference | steps) ;;
*) echo "algoperf_baselines.sh: --time: unknown basis '$basis' (wall, reference or steps)" >&2
   exit 2 ;;
esac
if [ $# -lt 1 ]; then
    echo "$usage" >&2
    exit 2
fi
db=$1
shift
export OPENBLAS_CORETYPE="${OPENBLAS_CORETYPE:-Haswell}"
# the five base workloads and their two held-out variants each (15, bench's --variants set,
# named here so that -w can replace them)
workloads="-w fmnist_mlp -w fmnist_mlp_tanh -w fmnist_mlp_narrow
    -w fmnist_cnn -w fmnist_cnn_silu -w fmnist_cnn_nonorm
    -w fmnist_autoencoder -w fmnist_autoencoder_relu -w fmnist_autoencoder_mse
    -w kjv_transformer -w kjv_transformer_relu -w kjv_transformer_deep
    -w wordnet_sparse -w wordnet_sparse_wide -w wordnet_sparse_tanh"
for a in "$@"; do
    case $a in -w | --workload | --workload=*) workloads= ;; esac
done
# shellcheck disable=SC2086 # $workloads is a list of options
"$bin" bench --db "$db" --name baselines -s adamw -s nadamw -s nesterov -s momentum \
    --studies 3 --trials 3 $workloads "$@"
bases=wall
[ "$basis" = wall ] || bases="wall $basis"
for b in $bases; do
    echo
    echo "== every workload, the held-out variants counted as workloads ($b time)"
    "$bin" score --db "$db" --name baselines --time "$b"
    echo
    echo "== AlgoPerf's variant rule: a base workload counts only if its held-out variant is also"
    echo "   reached within 4x of the fastest variant time ($b time)"
    "$bin" score --db "$db" --name baselines --time "$b" --variant-rule
done
