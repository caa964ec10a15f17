#!/bin/bash
# test_slurm.sh BUILD_DIR: the Slurm scripts (scripts/slurm/) against a real single-node Slurm
# that this script starts: munged, slurmctld and slurmd of Debian's packages, as root, with a
# throw-away slurm.conf (this host the one node, plugins that need neither systemd nor
# cgroups), every file (key, sockets, pid files, state, spool, logs) in a temporary directory
# and ports found free, so that two runs do not meet; the daemons are stopped on every exit.
# Then: a small benchmark submitted with sbatch over an allocation of 2 tasks (rank 0
# coordinates, rank 1 runs the trials, launched by srun --mpi=pmix) finishes and `score`
# scores it; a job array of 2 shards, then their merge as a job depending on the array,
# likewise. Exits 77 (skipped, with the reason) where Slurm cannot run: not root, the packages
# missing, or the daemons not starting.
set -u
build=$(cd "${1:?usage: test_slurm.sh BUILD_DIR}" && pwd)
src=$(cd "$(dirname "$0")/.." && pwd)
tb=$build/trainbench
skip() { echo "test_slurm: skipped: $*"; exit 77; }
fail() { echo "test_slurm: FAILED: $*"; show_logs; exit 1; }

[ "$(id -u)" -eq 0 ] || skip "not root (the test starts slurmctld, slurmd and munged itself)"
for cmd in munged slurmctld slurmd sbatch srun sinfo scontrol; do
    command -v "$cmd" >/dev/null 2>&1 || PATH=$PATH:/usr/sbin command -v "$cmd" >/dev/null 2>&1 ||
        skip "$cmd is not installed (Debian: slurmctld slurmd slurm-client munge; scripts/setup.sh)"
done
export PATH=$PATH:/usr/sbin
[ -x "$tb" ] || fail "no trainbench binary in $build"
srun --mpi=list 2>&1 | grep -q pmix || true # (needs a configuration; checked once running)

tmp=$(mktemp -d /tmp/tb_test_slurm.XXXXXX) || fail "cannot make a temporary directory"
chmod 755 "$tmp"
pids=()
show_logs() {
    for f in "$tmp"/*.log "$tmp"/*.out; do
        [ -f "$f" ] && { echo "---- $f"; tail -n 30 "$f"; }
    done
}
stop() {
    # the daemons, by the pids this script started (newest first), then what is left
    local i
    for ((i = ${#pids[@]} - 1; i >= 0; i--)); do kill "${pids[i]}" 2>/dev/null; done
    for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
        for _ in $(seq 50); do kill -0 "${pids[i]}" 2>/dev/null || break; sleep 0.1; done
        kill -9 "${pids[i]}" 2>/dev/null
    done
    rm -rf "$tmp"
}
trap stop EXIT
trap 'exit 1' INT TERM

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
ctld_port=$(free_port) && slurmd_port=$(free_port) || skip "cannot find free ports"
[ "$ctld_port" != "$slurmd_port" ] || slurmd_port=$(free_port)
node=$(hostname -s)
cpus=$(getconf _NPROCESSORS_ONLN) # (not nproc, which counts OMP_NUM_THREADS)
[ "$cpus" -ge 2 ] || skip "this machine has $cpus CPU: the allocation needs 2 tasks"
mkdir -p "$tmp/state" "$tmp/spool" "$tmp/munge" "$tmp/jobs"
chmod 755 "$tmp/munge" # its socket must be reachable; the key itself is 0400

# munge: a key of its own, its socket in the temporary directory
head -c 1024 /dev/urandom >"$tmp/munge/munge.key" && chmod 400 "$tmp/munge/munge.key"
munged --force --key-file="$tmp/munge/munge.key" --socket="$tmp/munge/munge.sock" \
    --pid-file="$tmp/munge/munged.pid" --log-file="$tmp/munged.log" \
    --seed-file="$tmp/munge/munged.seed" -F >"$tmp/munged.stdout.log" 2>&1 &
pids+=($!)
for _ in $(seq 50); do [ -S "$tmp/munge/munge.sock" ] && break; sleep 0.1; done
[ -S "$tmp/munge/munge.sock" ] || skip "munged did not start: $(tail -n 3 "$tmp/munged.log" 2>/dev/null)"

export SLURM_CONF=$tmp/slurm.conf
cat >"$SLURM_CONF" <<EOF
ClusterName=tbtest
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$tmp/munge/munge.sock
StateSaveLocation=$tmp/state
SlurmdSpoolDir=$tmp/spool
SlurmctldPidFile=$tmp/slurmctld.pid
SlurmdPidFile=$tmp/slurmd.pid
SlurmctldLogFile=$tmp/slurmctld.log
SlurmdLogFile=$tmp/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/builtin
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
ReturnToService=2
SlurmdTimeout=60
InactiveLimit=0
KillWait=5
NodeName=$node NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN
PartitionName=test Nodes=$node Default=YES MaxTime=INFINITE State=UP
EOF

slurmctld -D -i -f "$SLURM_CONF" >"$tmp/slurmctld.stdout.log" 2>&1 &
pids+=($!)
slurmd -D -f "$SLURM_CONF" -N "$node" >"$tmp/slurmd.stdout.log" 2>&1 &
pids+=($!)
up=""
for _ in $(seq 300); do
    state=$(sinfo -h -n "$node" -o %T 2>/dev/null | head -n 1)
    case "$state" in idle*) up=1; break ;; esac
    kill -0 "${pids[1]}" 2>/dev/null && kill -0 "${pids[2]}" 2>/dev/null || break
    sleep 0.1
done
[ -n "$up" ] || { show_logs; skip "the Slurm daemons did not bring node $node up (state '${state:-none}')"; }
srun --mpi=list 2>&1 | grep -q pmix || skip "Slurm has no pmix MPI plugin"
echo "test_slurm: slurmctld on port $ctld_port, slurmd on $slurmd_port, node $node idle ($cpus CPUs)"

export OMP_NUM_THREADS=1 OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-Haswell}
export TRAINBENCH=$tb
# a small benchmark: 2 submissions x 1 workload x 2 studies, 1 s budgets, evals by steps
Q="--preset quick -w fmnist_mlp -s sgd -s adamw --budget 1 --eval-every-steps 20 \
--calibration-s -1 --search-spaces $src/search_spaces"
cd "$tmp/jobs" || fail "cd"
# a job that never starts or never ends fails the test, well before ctest's limit
wait_s=${TB_SLURM_WAIT_S:-240}
# wait_job ID: waits for job ID (every task, if an array) to end; true if every task completed.
# It polls scontrol 4 times a second: `sbatch --wait` polls at growing intervals, and returned
# 30 s after a 10 s job ended (the test took 57 s with it, 27 without).
wait_job() {
    local states="" ended='JobState=(COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL|OUT_OF_MEMORY'
    ended+='|BOOT_FAIL|DEADLINE|PREEMPTED)$'
    for _ in $(seq $((wait_s * 4))); do
        states=$(scontrol -o show job "$1" 2>/dev/null | grep -o 'JobState=[A-Z_]*' | sort -u)
        # every task in a state that has ended
        [ -n "$states" ] && ! grep -qvE "$ended" <<<"$states" && break
        sleep 0.25
    done
    [ "$states" = "JobState=COMPLETED" ] && return 0
    echo "test_slurm: job $1 ended as: ${states:-unknown (not found)}"
    return 1
}

# (a) over an allocation: srun of the MPI job, rank 0 the coordinator
# shellcheck disable=SC2086
jid=$(sbatch --parsable -n 2 -o "$tmp/alloc.out" "$src/scripts/slurm/bench.sbatch" --db "$tmp/alloc.db" \
    $Q 2>"$tmp/sbatch.log") || fail "sbatch of bench.sbatch: $(cat "$tmp/sbatch.log")"
wait_job "$jid" || fail "the job of bench.sbatch did not complete"
grep -q "4 trials: 4 run now (on 1 worker rank), 0 reused" "$tmp/alloc.out" ||
    fail "the allocation's benchmark did not run its 4 trials"
ran_on=$(python3 - "$tmp/alloc.db" <<'EOF'
import sqlite3, sys, json
rows = sqlite3.connect(sys.argv[1]).execute(
    "SELECT status, machine FROM trials WHERE benchmark = 'quick'").fetchall()
ranks = {json.loads(m).get("rank") for s, m in rows if s in ("done", "failed")}
print(len(rows), sorted(r for r in ranks if r is not None))
EOF
)
[ "$ran_on" = "4 [1]" ] || fail "the allocation's trials: '$ran_on' (want 4 trials, run on rank 1)"
"$tb" score --db "$tmp/alloc.db" >"$tmp/score_alloc.log" 2>&1 ||
    fail "score of the allocation's store: $(cat "$tmp/score_alloc.log")"
grep -q "^adamw" "$tmp/score_alloc.log" && grep -q "^sgd" "$tmp/score_alloc.log" ||
    fail "score of the allocation's store lacks a submission: $(cat "$tmp/score_alloc.log")"
echo "test_slurm: bench.sbatch over 2 tasks: 4 trials run on rank 1, scored"

# (b) a job array of 2 shards into stores of their own, then their merge after the array
# shellcheck disable=SC2086
jid=$(sbatch --parsable --array=0-1 -o "$tmp/shard-%a.out" "$src/scripts/slurm/bench-array.sbatch" \
    --out "$tmp/shards" $Q 2>"$tmp/sbatch.log") || fail "sbatch of bench-array.sbatch: $(cat "$tmp/sbatch.log")"
mid=$(sbatch --parsable --dependency=afterok:"$jid" -o "$tmp/merge.out" \
    --wrap "$tb merge --db $tmp/merged.db $tmp/shards/shard-0.db $tmp/shards/shard-1.db" \
    2>"$tmp/sbatch.log") || fail "sbatch of the merge job: $(cat "$tmp/sbatch.log")"
wait_job "$jid" || fail "the job array of bench-array.sbatch did not complete"
wait_job "$mid" || fail "the merge job did not complete"
for i in 0 1; do
    grep -q "shard $i/2: 2 of the 4 planned trials" "$tmp/shard-$i.out" ||
        fail "array task $i did not run its share"
done
grep -q "2 finished trials merged" "$tmp/merge.out" || fail "the merge job merged nothing"
done_n=$(python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute(\"SELECT count(*) FROM trials WHERE status IN ('done','failed')\").fetchone()[0])" "$tmp/merged.db")
[ "$done_n" = 4 ] || fail "the merged store has $done_n finished trials, not 4"
"$tb" score --db "$tmp/merged.db" >"$tmp/score_merged.log" 2>&1 ||
    fail "score of the merged store: $(cat "$tmp/score_merged.log")"
grep -q "^adamw" "$tmp/score_merged.log" && grep -q "^sgd" "$tmp/score_merged.log" ||
    fail "score of the merged store lacks a submission: $(cat "$tmp/score_merged.log")"
# the same array again resumes from the shards' stores: nothing runs twice
jid=$(sbatch --parsable --array=0-1 -o "$tmp/again-%a.out" \
    "$src/scripts/slurm/bench-array.sbatch" --out "$tmp/shards" $Q 2>"$tmp/sbatch.log") ||
    fail "sbatch of bench-array.sbatch again: $(cat "$tmp/sbatch.log")"
wait_job "$jid" || fail "bench-array.sbatch run again did not complete"
grep -q "2 trials: 0 run now, 2 reused" "$tmp/again-0.out" ||
    fail "array task 0 run again did not reuse its trials"
echo "test_slurm: bench-array.sbatch of 2 shards, merged by a dependent job: 4 trials, scored; run again, reused"
echo "test_slurm: passed"
