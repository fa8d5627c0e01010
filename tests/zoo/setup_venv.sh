#!/usr/bin/env bash
# Creates the virtualenv the model zoo (models.py, export.py, run_zoo.py)
# runs in, with pinned versions from PyPI:
#
#   tests/zoo/setup_venv.sh [VENV]     # default $HOME/.venvs/loom-zoo
#
# As in tests/bench/peers/setup_venv.sh: PyPI's Linux torch wheel is a CUDA
# build whose dependencies come to about 3 GB, but it imports on a CPU-only
# machine without most of them. torch is installed with --no-deps, then its
# pure-Python dependencies and the NVIDIA libraries it links at import that
# /usr/local/cuda does not provide, at the versions torch pins. run.sh puts
# their lib folders and /usr/local/cuda/lib64 on LD_LIBRARY_PATH.
# torchvision, timm and transformers are installed with --no-deps too (each
# would pull another torch), then their own pure-Python dependencies.
set -euo pipefail
# shellcheck source=tests/torch_wheel.sh
source "$(dirname "$0")/../torch_wheel.sh"

venv="${1:-$HOME/.venvs/loom-zoo}"
python3 -m venv "$venv"
py="$venv/bin/python"
pip=("$py" -m pip install --quiet --disable-pip-version-check)

TORCH=2.15.0
TORCHVISION=0.29.2
TRANSFORMERS=5.23.0
TIMM=1.0.31
ONNX=1.23.2
ONNXRUNTIME=1.31.1
ONNXSCRIPT=0.7.2
ONNX_IR=1.1.0

"${pip[@]}" --upgrade pip setuptools
# numpy: whatever 2.x installs beside the pins; onnx, onnxruntime, onnxscript
# and onnx-ir with their dependencies (none of them pulls torch).
"${pip[@]}" "numpy>=2,<3" "onnx==$ONNX" "onnxruntime==$ONNXRUNTIME" \
  "onnxscript==$ONNXSCRIPT" "onnx-ir==$ONNX_IR" \
  filelock typing-extensions sympy mpmath networkx jinja2 MarkupSafe fsspec
install_torch "$py" "torch==$TORCH"

# torchvision (imports pillow), timm and transformers without their
# dependencies (another torch), then theirs: timm needs pyyaml,
# huggingface_hub and safetensors; transformers also tokenizers, regex,
# packaging, tqdm, requests, typer.
"${pip[@]}" --no-deps "torchvision==$TORCHVISION" "timm==$TIMM" \
  "transformers==$TRANSFORMERS"
"${pip[@]}" pillow pyyaml huggingface_hub safetensors tokenizers regex \
  packaging tqdm requests typer

echo "zoo installed in $venv:"
"$py" -m pip list 2>/dev/null |
  grep -i -E '^(numpy|onnx|onnx-ir|onnx_ir|onnxruntime|onnxscript|torch|torchvision|timm|transformers|huggingface[-_]hub|tokenizers|safetensors|nvidia-[a-z0-9-]+) '
