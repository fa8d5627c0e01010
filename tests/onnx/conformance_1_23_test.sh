#!/usr/bin/env bash
# ONNX 1.23's backend node tests (1,884, written from the pinned `onnx`
# wheel's case generators by node_tests/setup.sh, which ./bazelw runs), all
# of them, through loom: no test may FAIL, and at least MIN_PASSED must pass
# (a floor that only goes up). The runner's own checks are in
# conformance_test.sh.
set -euo pipefail

conformance="$1"
min_passed="$2"
node="${LOOM_ONNX_NODE_TESTS:-}"
if [[ -z "$node" || ! -d "$node" ]]; then
  echo "FAIL: ONNX 1.23's node tests are missing (LOOM_ONNX_NODE_TESTS='$node');"
  echo "run the tests through ./bazelw, which writes them with tests/onnx/node_tests/setup.sh"
  exit 1
fi
tmp="${TEST_TMPDIR:-$(mktemp -d)}"
"$conformance" --min_passed="$min_passed" --batch=32 --cache_dir="$tmp/cache" "$node"
