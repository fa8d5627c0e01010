#!/usr/bin/env bash
# Runs python/loom_torch_test.py with $LOOM_TEST_PYTHON (a python with torch,
# e.g. the peers' virtualenv; pass it with --test_env), else Debian's
# python3, with which it skips.
set -euo pipefail
export LOOM_LIBRARY="$PWD/runtime/libloom.so"
export LOOM_CACHE_DIR="$TEST_TMPDIR/cache"
export PYTHONPATH="$PWD/python"
exec "${LOOM_TEST_PYTHON:-/usr/bin/python3}" python/loom_torch_test.py
