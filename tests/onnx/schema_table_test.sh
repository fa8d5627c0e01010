#!/usr/bin/env bash
# frontends/onnx/onnx_schemas.inc is what write_schema_table.py writes under
# the pinned onnx wheel (the virtualenv ./bazelw makes beside ONNX 1.23's
# node tests): regenerate it after moving the pin.
set -euo pipefail

writer="$1"
table="$2"
node="${LOOM_ONNX_NODE_TESTS:-}"
python="$(dirname "$node")/venv/bin/python"
if [[ -z "$node" || ! -x "$python" ]]; then
  echo "FAIL: the pinned onnx wheel's virtualenv is missing (LOOM_ONNX_NODE_TESTS='$node');"
  echo "run the tests through ./bazelw, which makes it with tests/onnx/node_tests/setup.sh"
  exit 1
fi
if ! "$python" "$writer" | diff -u "$table" -; then
  echo "FAIL: $table differs from what $writer writes; regenerate it:"
  echo "  python3 $writer > $table   (under the pinned wheel)"
  exit 1
fi
echo "onnx_schemas.inc matches the pinned wheel"
