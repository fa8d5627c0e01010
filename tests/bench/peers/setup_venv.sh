#!/usr/bin/env bash
# Creates the virtualenv the peers benchmark runs in and installs the peers
# from PyPI: numpy (OpenBLAS), onnx, onnxruntime, torch (eager and Inductor)
# and, when they install, onnxscript (for torch's new ONNX exporter),
# jax[cpu] and torchvision (its classifiers are cases).
#
#   tests/bench/peers/setup_venv.sh [VENV]     # default $HOME/.venvs/loom-peers
#
# PyPI's Linux torch wheel is a CUDA build whose dependencies come to about
# 3 GB. It imports on a CPU-only machine without most of them: torch is
# installed with --no-deps, then its pure-Python dependencies and the four
# NVIDIA libraries it links at import that the CUDA toolkit in
# /usr/local/cuda does not provide, at the versions torch pins. run.sh puts
# their lib folders and /usr/local/cuda/lib64 on LD_LIBRARY_PATH.
set -euo pipefail
# shellcheck source=tests/torch_wheel.sh
source "$(dirname "$0")/../../torch_wheel.sh"

venv="${1:-$HOME/.venvs/loom-peers}"
python3 -m venv "$venv"
py="$venv/bin/python"
pip=("$py" -m pip install --quiet)

"${pip[@]}" --upgrade pip setuptools
"${pip[@]}" numpy onnx onnxruntime \
  filelock typing-extensions sympy mpmath networkx jinja2 MarkupSafe fsspec
install_torch "$py" torch

# Optional: onnxscript lets torch's new ONNX exporter take the models the
# TorchScript one cannot trace; jax is one more peer.
"${pip[@]}" onnxscript || echo "onnxscript did not install; models only the new exporter takes are skipped"
"${pip[@]}" "jax[cpu]" || echo "jax[cpu] did not install; the benchmark skips it"
# Without its dependencies: it would pull another torch. Pillow it imports.
"${pip[@]}" --no-deps torchvision pillow ||
  echo "torchvision did not install; the benchmark skips the torchvision cases"

echo "peers installed in $venv:"
"$py" -m pip list 2>/dev/null | grep -i -E '^(numpy|onnx|onnxruntime|onnxscript|torch|torchvision|jax|jaxlib|nvidia-[a-z0-9-]+) '
