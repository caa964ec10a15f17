#!/bin/sh
# test_deb.sh BUILD_DIR: builds the .deb of the build (cpack -G DEB with the build's CPack
# configuration, into a temporary directory, of the files `cmake --install --prefix /usr`
# stages: the install rules cpack's own would run, without the preinstall target cpack runs
# first, which checks the whole build and takes a minute on a busy machine) and checks its
# control fields: Depends names the Debian package of every library the packaged binary links
# (its NEEDED entries, found with ldd and dpkg -S; one from no package, e.g. a CUDA toolkit's
# under /usr/local, is named in a note). Then it installs the package for real with dpkg -i
# when run as root with no package named trainbench installed (its man page left out, which
# would run man-db's trigger; removed with dpkg --purge on exit, leaving the machine as it
# was), else unpacks it with dpkg-deb -x into the temporary directory, saying why; from
# another directory the installed binary names its data directory (/usr/share/trainbench, or
# the unpacked one) and runs a short benchmark whose search space it reads from there. Skips
# (77) without cpack, dpkg-deb or objdump, and for a sanitizer build (a second argument
# "sanitized"), saying so.
set -eu
build=$(cd "$1" && pwd)
if [ "${2:-}" = sanitized ]; then
    echo "test_deb: skipped: a sanitizer build (its binary links the sanitizers' runtimes) is not a package to ship"
    exit 77
fi
for tool in cpack dpkg-deb; do
    command -v "$tool" > /dev/null || { echo "test_deb: skipped: no $tool"; exit 77; }
done
tmp=$(mktemp -d /tmp/tb_test_deb.XXXXXX)
installed=""
cleanup() {
    if [ -n "$installed" ]; then
        dpkg --purge trainbench > "$tmp/purge.log" 2>&1 ||
            echo "test_deb: dpkg --purge trainbench failed: $(cat "$tmp/purge.log")" >&2
    fi
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP
fail() { echo "test_deb: FAILED: $*" >&2; exit 1; }

# the package, from the build's CPack configuration
DESTDIR="$tmp/stage" cmake --install "$build" --prefix /usr > "$tmp/install.log" 2>&1 ||
    fail "cmake --install: $(tail -5 "$tmp/install.log")"
(cd "$tmp" && cpack -G DEB --config "$build/CPackConfig.cmake" -B "$tmp/pkg" \
    -D CPACK_INSTALL_CMAKE_PROJECTS= -D "CPACK_INSTALLED_DIRECTORIES=$tmp/stage;." \
    > cpack.log 2>&1) || fail "cpack: $(tail -5 "$tmp/cpack.log")"
deb=$(find "$tmp/pkg" -maxdepth 1 -name 'trainbench_*.deb' | head -1)
[ -n "$deb" ] || fail "cpack made no trainbench_*.deb: $(tail -5 "$tmp/cpack.log")"
field() { dpkg-deb -f "$deb" "$1"; }
[ "$(field Package)" = trainbench ] || fail "Package is '$(field Package)'"
[ -n "$(field Version)" ] || fail "no Version"
[ -n "$(field Architecture)" ] || fail "no Architecture"
depends=$(field Depends)
[ -n "$depends" ] || fail "no Depends"
echo "test_deb: $(basename "$deb"): Depends: $depends"

# Depends against what the binary links (its NEEDED entries, where ldd finds them): each
# library's Debian package must be named
command -v objdump > /dev/null || { echo "test_deb: skipped: no objdump"; exit 77; }
dpkg-deb -x "$deb" "$tmp/root"
bin="$tmp/root/usr/bin/trainbench"
[ -x "$bin" ] || fail "the package has no usr/bin/trainbench"
[ -f "$tmp/root/usr/share/man/man1/trainbench.1" ] || fail "the package has no man page"
names=$(echo "$depends" | tr ',|' '\n\n' | sed 's/(.*)//; s/ //g')
ldd "$bin" > "$tmp/ldd.txt"
: > "$tmp/libs.txt"
for needed in $(objdump -p "$bin" | awk '$1 == "NEEDED" { print $2 }'); do
    lib=$(awk -v n="$needed" '$1 == n && $2 == "=>" { print $3 }' "$tmp/ldd.txt")
    [ -n "$lib" ] && [ "$lib" != "not" ] || fail "$bin needs $needed, which ldd does not find"
    real=$(readlink -f "$lib")
    echo "$lib $real $(echo "$real" | sed 's|^/usr/lib/|/lib/|')" >> "$tmp/libs.txt"
done
# one dpkg -S for them all: as ldd names each, resolved, and resolved under /lib (Debian 12's
# /lib is /usr/lib, and a package lists one of the two)
dpkg -S $(cat "$tmp/libs.txt") > "$tmp/owners.txt" 2> /dev/null || true
outside=""
while read -r lib real alt; do
    owner=$(awk -v a="$lib" -v b="$real" -v c="$alt" \
        '$2 == a || $2 == b || $2 == c { sub(/[:,].*/, "", $1); print $1; exit }' "$tmp/owners.txt")
    if [ -z "$owner" ]; then
        outside="$outside $(basename "$lib")"
        continue
    fi
    echo "$names" | grep -qx "$owner" ||
        fail "$bin links $lib, of package $owner, which Depends lacks ($depends)"
done < "$tmp/libs.txt"
[ -z "$outside" ] ||
    echo "test_deb: note: the package links$outside, from no Debian package (the CUDA backend's: build with -DTB_CUDA=OFF for a package that installs on any Debian 12)"

# installed for real (root, dpkg, no trainbench package already there, no other run of this
# test at the same time), else unpacked
how="unpacked with dpkg-deb -x"
prefix="$tmp/root/usr"
exec 9> /tmp/tb_test_deb.lock
if [ "$(id -u)" != 0 ]; then
    why="not root"
elif ! command -v dpkg > /dev/null; then
    why="no dpkg"
elif dpkg-query -W -f '${Status}' trainbench 2> /dev/null | grep -q .; then
    why="a package named trainbench is already installed"
elif [ -e /usr/bin/trainbench ]; then
    why="/usr/bin/trainbench exists"
elif ! flock -n 9; then
    why="another run of this test holds /tmp/tb_test_deb.lock"
else
    why=""
    installed=yes
    # without the man page, so that man-db's trigger (half a minute of mandb) does not run
    dpkg --path-exclude='/usr/share/man/*' -i "$deb" > "$tmp/dpkg.log" 2>&1 ||
        fail "dpkg -i: $(tail -5 "$tmp/dpkg.log")"
    how="installed with dpkg -i"
    prefix=/usr
    bin=/usr/bin/trainbench
    dpkg -s trainbench | grep -q '^Status: install ok installed' || fail "dpkg -s: not installed"
fi
[ -z "$why" ] || echo "test_deb: not installing with dpkg -i ($why): unpacking instead"

mkdir "$tmp/elsewhere"
cd "$tmp/elsewhere"
"$bin" --version > version.txt || fail "$bin --version"
grep -q "^data: $prefix/share/trainbench\$" version.txt || fail "version says $(cat version.txt)"
[ -f "$prefix/share/trainbench/search_spaces/sgd.json" ] || fail "no search spaces"
export OMP_NUM_THREADS=2
"$bin" bench --db results.db -s sgd -w fmnist_mlp --studies 1 --trials 1 --budget 1 \
    --eval-every-steps 5 --eval-examples 200 --calibration-s -1 -t 2 --name deb \
    > bench.txt 2> bench.err || fail "bench: $(tail -5 bench.err)"
grep -q "1 trials: 1 run now" bench.err || fail "bench ran: $(cat bench.err)"
grep -q "0 failed" bench.err || fail "bench trials failed: $(cat bench.err)"
echo "test_deb: passed ($how; $(head -1 version.txt), data in $prefix/share/trainbench)"
