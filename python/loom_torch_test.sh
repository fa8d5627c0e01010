#!/usr/bin/env bash
# Runs python/loom_torch_test.py with $LOOM_TEST_PYTHON (a python with torch;
# pass it with --test_env), else the zoo's virtualenv ($LOOM_ZOO_VENV, which
# ./bazelw sets; tests/zoo/setup_venv.sh makes it) with the libraries its
# torch loads, else Debian's python3, with which it skips.
set -euo pipefail
export LOOM_LIBRARY="$PWD/runtime/libloom.so"
export LOOM_CACHE_DIR="$TEST_TMPDIR/cache"
export PYTHONPATH="$PWD/python"
python="${LOOM_TEST_PYTHON:-}"
if [[ -z "$python" && -x "${LOOM_ZOO_VENV:-}/bin/python" ]]; then
  # shellcheck source=tests/torch_wheel.sh
  source tests/torch_wheel.sh
  use_torch_libraries "$LOOM_ZOO_VENV"
  python="$LOOM_ZOO_VENV/bin/python"
fi
exec "${python:-/usr/bin/python3}" python/loom_torch_test.py
