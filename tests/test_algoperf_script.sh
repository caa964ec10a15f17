#!/bin/sh
# test_algoperf_script.sh BUILD_DIR: scripts/algoperf_baselines.sh without training. A stand-in
# for trainbench records the commands the script runs: by default one bench of the four
# baselines at 3 studies x 3 trials on AlgoPerf's 15 workloads (each a workload the built
# binary knows, the five bases and two variants of each), then score in wall time with and
# without the variant rule; -w replaces the 15; --time adds that basis's two scores; a bad
# basis or a missing store is refused with exit status 2 before anything runs.
set -eu
build=$(cd "$1" && pwd)
src=$(cd "$(dirname "$0")/.." && pwd)
script="$src/scripts/algoperf_baselines.sh"
tmp=$(mktemp -d /tmp/tb_test_algoperf.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "test_algoperf_script: FAILED: $*" >&2; exit 1; }

# the stand-in: one line per command, its arguments
cat > "$tmp/fake" <<EOF
#!/bin/sh
echo "\$*" >> "$tmp/log"
EOF
chmod +x "$tmp/fake"
run() { : > "$tmp/log"; TRAINBENCH="$tmp/fake" sh "$script" "$@" > "$tmp/out" 2> "$tmp/err"; }

# the default: one bench, then two scores in wall time
run x.db -t 1 || fail "the default run exited $?"
[ "$(wc -l < "$tmp/log")" -eq 3 ] || fail "expected 3 commands, got: $(cat "$tmp/log")"
bench=$(sed -n 1p "$tmp/log")
case $bench in "bench --db x.db --name baselines -s adamw -s nadamw -s nesterov -s momentum "*) ;;
*) fail "bench line: $bench" ;; esac
case $bench in *"--studies 3 --trials 3 "*" -t 1") ;; *) fail "study size or options: $bench" ;; esac
sed -n 2p "$tmp/log" | grep -qx "score --db x.db --name baselines --time wall" ||
    fail "first score: $(sed -n 2p "$tmp/log")"
sed -n 3p "$tmp/log" | grep -qx "score --db x.db --name baselines --time wall --variant-rule" ||
    fail "second score: $(sed -n 3p "$tmp/log")"

# the 15 workloads: each known to the binary, 5 bases with 2 of their variants each
echo "$bench" | tr ' ' '\n' | awk 'p { print; p = 0 } $0 == "-w" { p = 1 }' > "$tmp/named"
[ "$(wc -l < "$tmp/named")" -eq 15 ] || fail "expected 15 workloads, got $(wc -l < "$tmp/named")"
OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-Haswell} "$build/trainbench" workloads > "$tmp/known" ||
    fail "trainbench workloads"
# "variant of B" ends the line after a variant's own; a base's variants among the 15: 2
: > "$tmp/bases"
while read -r w; do
    grep -q "^$w " "$tmp/known" || fail "$w is not a workload of the binary"
    desc=$(grep -A1 "^$w " "$tmp/known" | sed -n 2p)
    case $desc in
    *"variant of "*) echo "${desc##*variant of }" >> "$tmp/of" ;;
    *) echo "$w" >> "$tmp/bases" ;;
    esac
done < "$tmp/named"
[ "$(wc -l < "$tmp/bases")" -eq 5 ] || fail "expected 5 bases: $(cat "$tmp/bases")"
while read -r base; do
    [ "$(grep -cx "$base" "$tmp/of")" -eq 2 ] || fail "$base has not 2 variants among the 15"
done < "$tmp/bases"
[ "$(sort -u "$tmp/named" | wc -l)" -eq 15 ] || fail "a workload is named twice"

# -w replaces the 15; a later --trials overrides the default by coming after it
run y.db -w fmnist_mlp --trials 5 || fail "the -w run exited $?"
bench=$(sed -n 1p "$tmp/log")
[ "$(echo "$bench" | grep -o ' -w ' | wc -l)" -eq 1 ] || fail "-w did not replace the 15: $bench"
case $bench in *"--trials 3 -w fmnist_mlp --trials 5") ;; *) fail "options order: $bench" ;; esac

# --time adds that basis's scores after the wall ones, in both spellings
for form in "--time steps" "--time=steps"; do
    # shellcheck disable=SC2086 # the form is two words or one
    run $form z.db || fail "$form exited $?"
    [ "$(wc -l < "$tmp/log")" -eq 5 ] || fail "$form: expected 5 commands: $(cat "$tmp/log")"
    sed -n 4p "$tmp/log" | grep -qx "score --db z.db --name baselines --time steps" ||
        fail "$form: $(sed -n 4p "$tmp/log")"
    sed -n 5p "$tmp/log" | grep -qx "score --db z.db --name baselines --time steps --variant-rule" ||
        fail "$form: $(sed -n 5p "$tmp/log")"
done

# refused before anything runs
for args in "--time hours x.db" "--time" ""; do
    # shellcheck disable=SC2086 # each case is a list of words
    if run $args; then fail "'$args' was accepted"; else rc=$?; fi
    [ "$rc" -eq 2 ] || fail "'$args' exited $rc, not 2"
    [ ! -s "$tmp/log" ] || fail "'$args' ran: $(cat "$tmp/log")"
    grep -q "usage\|unknown basis" "$tmp/err" || fail "'$args': no message: $(cat "$tmp/err")"
done
run --time hours x.db || true
grep -q "unknown basis 'hours'" "$tmp/err" || fail "the bad basis is not named: $(cat "$tmp/err")"
echo "test_algoperf_script: ok"
