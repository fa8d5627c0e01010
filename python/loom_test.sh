#!/usr/bin/env bash
# Runs python/loom_test.py with Debian's python3 (and its python3-numpy, which
# ./bazelw installs) on the libloom.so of this build.
set -euo pipefail
export LOOM_LIBRARY="$PWD/runtime/libloom.so"
export LOOM_CACHE_DIR="$TEST_TMPDIR/cache"
export PYTHONPATH="$PWD/python"
export LOOM_TEST_ARTIFACT="$TEST_TMPDIR/lstm/model.loom"
mkdir -p "$TEST_TMPDIR/lstm"
tools/loom compile --model=examples/lstm_l2_h64.pbtxt --out_dir="$TEST_TMPDIR/lstm" --quiet >/dev/null
export LOOM_TEST_EVERY_SHAPE="$TEST_TMPDIR/every_shape/model.loom"
tools/loom compile --model=tests/bad_inputs/named_dims.onnx --dims=batch=1..4,seq=1..8 \
  --out_dir="$TEST_TMPDIR/every_shape" --quiet >/dev/null
exec /usr/bin/python3 python/loom_test.py
