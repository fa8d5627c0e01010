#!/usr/bin/env bash
# The cost of a call through loom's runtime from C++ and from Python against
# loom run's own loop, on one model (default: examples/lstm_l2_h64.pbtxt):
#   tests/bench/call_cost.sh [MODEL]
set -euo pipefail
cd "$(dirname "$0")/../.."
model=${1:-examples/lstm_l2_h64.pbtxt}
./bazelw build -c opt //tests/bench:call_cost //runtime:libloom.so 2>/dev/null
bazel-bin/tests/bench/call_cost --model="$model"
LOOM_LIBRARY=bazel-bin/runtime/libloom.so PYTHONPATH=python /usr/bin/python3 tests/bench/call_cost.py "$model"
