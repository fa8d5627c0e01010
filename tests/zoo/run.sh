#!/usr/bin/env bash
# Runs a zoo script (or any command) with the virtualenv setup_venv.sh made
# and the environment PyPI's torch needs at import: the NVIDIA libraries'
# lib folders and /usr/local/cuda/lib64 on LD_LIBRARY_PATH; no hub access.
#
#   tests/zoo/run.sh export.py /tmp/zoo/models --small
#   tests/zoo/run.sh run_zoo.py /tmp/zoo/models --loom=/tmp/zoo-loom/loom
#
# LOOM_ZOO_VENV names another virtualenv (default $HOME/.venvs/loom-zoo).
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=tests/torch_wheel.sh
source "$here/../torch_wheel.sh"
venv="${LOOM_ZOO_VENV:-$HOME/.venvs/loom-zoo}"
py="$venv/bin/python"
if [[ ! -x "$py" ]]; then
  echo "no virtualenv at $venv: run $here/setup_venv.sh first" >&2
  exit 2
fi

use_torch_libraries "$venv"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_HUB_DISABLE_TELEMETRY=1
export PYTHONDONTWRITEBYTECODE=1

script="${1:?usage: run.sh SCRIPT.py|-c CODE [ARGS...]}"
shift
if [[ "$script" == *.py && -f "$here/$script" ]]; then
  exec "$py" "$here/$script" "$@"
fi
exec "$py" "$script" "$@"
