#!/bin/sh
# setup.sh [LIST]: installs the Debian packages listed in LIST (default:
# scripts/debian-packages.txt, what trainbench needs; bench/setup.sh passes the bench's own
# list), as root. Idempotent: installs only what is missing and says what it installs.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
list="${1:-$here/debian-packages.txt}"
if [ ! -r "$list" ]; then
    echo "setup: cannot read the package list $list" >&2
    exit 1
fi
missing=""
for pkg in $(grep -v '^#' "$list" | grep -v '^[[:space:]]*$'); do
    status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
    case "$status" in
        "install ok installed") ;;
        *) missing="$missing $pkg" ;;
    esac
done
if [ -z "$missing" ]; then
    echo "setup: all packages of $list are installed"
    exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "setup: missing packages:$missing" >&2
    echo "setup: run as root (or: sudo apt-get install$missing)" >&2
    exit 1
fi
echo "setup: installing:$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing
echo "setup: done"
