#!/bin/sh
# setup.sh: the bench's own environment: a venv with the current PyTorch and numpy from PyPI
# (the peer trainbench is measured against). Not needed by the tests.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
"$here/../scripts/setup.sh" "$here/debian-packages.txt" # python3, venv, headers (Debian)
[ -x "$here/.venv/bin/python" ] || python3 -m venv "$here/.venv"
"$here/.venv/bin/pip" install -q --upgrade torch numpy
# the reference implementations of the newer optimizers (bench/optim_speed.py, torch_update.py)
"$here/.venv/bin/pip" install -q --upgrade schedulefree lion-pytorch prodigyopt pytorch-optimizer
"$here/.venv/bin/python" -c 'import torch; print("bench: PyTorch", torch.__version__)'
