#!/bin/sh
# test_install.sh BUILD_DIR: installs the build into a temporary prefix (cmake --install),
# then, from another directory and with no path into the source tree: the installed binary
# names its installed data directory, lists the installed studies, and runs a short
# benchmark of the built-in sgd (external tuning: its search space is read from the installed
# share/trainbench) beside an external C submission built from the installed example with
# `pkg-config --cflags --libs trainbench`; the man page and the headers are there.
set -eu
build=$(cd "$1" && pwd)
tmp=$(mktemp -d /tmp/tb_test_install.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "test_install: FAILED: $*" >&2; exit 1; }

cmake --install "$build" --prefix "$tmp/prefix" > "$tmp/install.log" || fail "cmake --install"
prefix="$tmp/prefix"
bin="$prefix/bin/trainbench"
[ -x "$bin" ] || fail "no $bin"
[ -f "$prefix/include/trainbench/submission.h" ] || fail "no public headers"
[ -f "$prefix/share/man/man1/trainbench.1" ] || fail "no man page"
grep -q '^\.SH COMMAND BENCH' "$prefix/share/man/man1/trainbench.1" || fail "man page lacks bench"
pc=$(find "$prefix" -name trainbench.pc)
[ -n "$pc" ] || fail "no trainbench.pc"

mkdir "$tmp/elsewhere"
cd "$tmp/elsewhere"
# the data directory: beside the installed binary, resolved
"$bin" version > version.txt
grep -q "^data: $prefix/share/trainbench\$" version.txt || fail "version says $(cat version.txt)"
"$bin" study --list > studies.txt || fail "study --list"
grep -q large_batch studies.txt || fail "study --list lacks the shipped studies"

# an external submission against the installed files only
export PKG_CONFIG_PATH="$(dirname "$pc")"
flags=$(pkg-config --cflags --libs trainbench) || fail "pkg-config"
case "$flags" in *"$prefix"*) ;; *) fail "pkg-config flags $flags do not name the prefix" ;; esac
example=$(find "$prefix/share/doc" -name submission_example.c)
cc -O2 -shared -fPIC "$example" $flags -o example.so || fail "building the example"

export OMP_NUM_THREADS=2
"$bin" bench --db results.db -s sgd -s ./example.so -w fmnist_mlp --studies 1 --trials 1 \
    --budget 1 --eval-every-steps 5 --eval-examples 200 --calibration-s -1 -t 2 \
    --name installed > bench.txt 2> bench.err || fail "bench: $(tail -5 bench.err)"
grep -q "2 trials: 2 run now" bench.err || fail "bench ran: $(cat bench.err)"
grep -q "0 failed" bench.err || fail "bench trials failed: $(cat bench.err)"
echo "test_install: passed (prefix $prefix, flags $flags)"
