#!/usr/bin/env bash
# The cuda pipeline on a machine without a GPU (docs/usage.md, Models and
# pipelines): compile emits
# CUDA C++ without one, run exits 2 naming the missing driver.
# LOOM_CUDA_DRIVER points the runtime at a library that does not exist, so
# this takes the no-GPU path on any machine.
set -uo pipefail

loom="$1"
export LOOM_CACHE_DIR="${TEST_TMPDIR:-$(mktemp -d)}/cache"
out="${TEST_TMPDIR:-$(mktemp -d)}/out"
mkdir -p "$out"
source tests/expect.sh

export LOOM_CUDA_DRIVER=/nonexistent/libcuda.so.1
expect 2 "no CUDA driver: /nonexistent/libcuda.so.1 not found.*--pipeline=cpu" \
  run --model=examples/mlp.pbtxt --pipeline=cuda
expect 2 "no CUDA driver" run --model=examples/softmax.pbtxt --pipeline=cuda --check
# Two products (cuBLAS calls) and the two kernels of their epilogues.
expect 0 "4 kernels \(2 functions\)" compile --model=examples/mlp.pbtxt --pipeline=cuda \
  --out_dir=$out/src --report=$out/report.json
[[ -s "$out/src/model.cu" ]] || { echo "FAIL: no model.cu"; failures=$((failures + 1)); }
[[ -e "$out/src/model.cc" ]] && { echo "FAIL: wrote model.cc"; failures=$((failures + 1)); }
grep -q '__global__' "$out/src/model.cu" || { echo "FAIL: model.cu has no kernel"; failures=$((failures + 1)); }
grep -q '"target": "cuda"' "$out/report.json" || { echo "FAIL: report target is not cuda"; failures=$((failures + 1)); }

# Without the override, a machine with no driver says the same.
unset LOOM_CUDA_DRIVER
if ! ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1'; then
  expect 2 "no CUDA driver: libcuda.so.1 not found" run --model=examples/mlp.pbtxt --pipeline=cuda
fi

echo "$failures failure(s)"
[[ $failures -eq 0 ]]
