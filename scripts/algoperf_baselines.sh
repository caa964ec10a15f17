#!/bin/sh
# algoperf_baselines.sh: AlgoPerf's external-tuning baselines (Dahl et al. 2023, "Benchmarking
# Neural Network Training Algorithms") on the five base workloads, then on the held-out
# variants: `trainbench bench` with the built-in baselines AdamW, NAdamW, Nesterov and
# heavy-ball momentum (each tuned from its search space in search_spaces/), AlgoPerf's study
# size (3 studies x 5 trials) by default, scored by `trainbench score`: time to target per
# workload, the performance profile and the benchmark score (docs/TIME_TO_RESULT.md). The
# claim is that the baselines differ by non-trivial gaps, and that some are brittle: reached on
# a base workload, missed (or far slower) on its held-out variant (--variant-rule).
#
# usage: scripts/algoperf_baselines.sh DB [bench options...]
#   e.g. scripts/algoperf_baselines.sh algoperf.db --preset full           # the real targets
#        scripts/algoperf_baselines.sh small.db --studies 3 --trials 1 --budget 4 -t 1
# Options after DB go to bench (they override the preset, quick by default as bench's, and
# the 3 x 5 study size); the benchmark is named baselines, so a rerun with the same options
# resumes and reuses every finished trial, and other options need another DB. One benchmark
# runs the base workloads and their held-out variants; it is scored twice: every workload
# counted alike, then by AlgoPerf's variant rule. With -w, the workloads named (name a base
# and its variants, e.g. -w fmnist_mlp -w fmnist_mlp_tanh -w fmnist_mlp_narrow).
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${TRAINBENCH:-$root/build/trainbench}
if [ $# -lt 1 ]; then
    echo "usage: scripts/algoperf_baselines.sh DB [bench options...]" >&2
    exit 2
fi
db=$1
shift
export OPENBLAS_CORETYPE="${OPENBLAS_CORETYPE:-Haswell}"
variants=--variants # every base workload and its variants, unless -w names workloads
for a in "$@"; do
    case $a in -w | --workload | --workload=*) variants= ;; esac
done
"$bin" bench --db "$db" --name baselines -s adamw -s nadamw -s nesterov -s momentum \
    --studies 3 --trials 5 $variants "$@"
echo
echo "== every workload, the held-out variants counted as workloads"
"$bin" score --db "$db" --name baselines
echo
echo "== AlgoPerf's variant rule: a base workload counts only if its held-out variant is also"
echo "   reached within 4x of the fastest variant time"
"$bin" score --db "$db" --name baselines --variant-rule
