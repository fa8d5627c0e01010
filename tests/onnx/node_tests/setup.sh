#!/usr/bin/env bash
# Makes ONNX 1.23's node tests for tests/onnx:conformance_1_23_test: a
# virtualenv with the pinned `onnx` wheel (requirements.txt), and the test
# data its case generators write (write_node_tests.py), in
#
#   DIR = ${LOOM_CACHE_DIR:-$HOME/.cache/loom}/onnx-node-tests
#   DIR/venv/   the virtualenv
#   DIR/node/   <test>/model.onnx, <test>/test_data_set_<k>/{input,output}_<j>.pb
#
# Prints DIR. Does nothing (quietly) when DIR was made from the same
# requirements and generator; otherwise one line per step on stderr. PyPI
# must be reachable the first time. ./bazelw runs it.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
dir="${LOOM_CACHE_DIR:-$HOME/.cache/loom}/onnx-node-tests"
stamp="$dir/made-from"
wanted="$(cat "$here/requirements.txt" "$here/write_node_tests.py" | sha256sum | cut -d' ' -f1)"

if [[ "$(cat "$stamp" 2>/dev/null)" != "$wanted" ]]; then
  rm -rf "$dir"
  mkdir -p "$dir"
  log="$dir/setup.log"
  echo "onnx node tests: installing $(grep -m1 '^onnx==' "$here/requirements.txt") in $dir/venv" >&2
  if ! { python3 -m venv "$dir/venv" &&
         "$dir/venv/bin/python" -m pip install --quiet --disable-pip-version-check \
           -r "$here/requirements.txt"; } >"$log" 2>&1; then
    tail -n 20 "$log" >&2
    echo "onnx node tests: installing the pinned onnx wheel failed (see $log)" >&2
    exit 1
  fi
  echo "onnx node tests: writing the test data" >&2
  if ! "$dir/venv/bin/python" "$here/write_node_tests.py" "$dir/node" >"$log" 2>&1; then
    tail -n 20 "$log" >&2
    echo "onnx node tests: writing the test data failed (see $log)" >&2
    exit 1
  fi
  echo "$wanted" >"$stamp"
fi
echo "$dir"
