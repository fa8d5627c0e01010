#!/usr/bin/env bash
# Every example's CUDA (and the test models': reductions, and gemms, whose
# products are cuBLAS calls the runtime makes, not emitted code) compiles with
# nvcc for sm_90 and sm_80 without a diagnostic, and ptxas spills nothing in
# the norm and softmax kernels.
# Needs the CUDA toolkit ($CUDA_HOME, default /usr/local/cuda), no GPU.
set -uo pipefail

loom="$1"
nvcc="${CUDA_HOME:-/usr/local/cuda}/bin/nvcc"
if [[ ! -x "$nvcc" ]]; then
  echo "FAIL: $nvcc not found: this test needs the CUDA toolkit"
  exit 1
fi
work="${TEST_TMPDIR:-$(mktemp -d)}"
export TMPDIR="$work"
export LOOM_CACHE_DIR="$work/cache"
no_spills="group_norm group_norm_large layer_norm layer_norm_large softmax softmax_large"

failures=0
models=()
for model in examples/*.pbtxt backends/cuda/testdata/*.pbtxt; do
  name="$(basename "$model" .pbtxt)"
  if ! "$loom" compile --model="$model" --pipeline=cuda --out_dir="$work/$name" >/dev/null; then
    echo "FAIL: loom compile --pipeline=cuda $model"
    failures=$((failures + 1))
    continue
  fi
  models+=("$name")
done

# One nvcc per model and architecture, two at a time; each leaves its
# diagnostics in <model>/sm_<arch>.log.
compile() {
  local name="$1" arch="$2"
  "$nvcc" -arch="sm_$arch" -cubin -Xptxas -v -o "$work/$name/sm_$arch.cubin" \
    "$work/$name/model.cu" >"$work/$name/sm_$arch.log" 2>&1
  echo $? >"$work/$name/sm_$arch.status"
}
export -f compile
export nvcc work
for name in "${models[@]}"; do
  echo "$name 90"
  echo "$name 80"
done | xargs -P 2 -n 2 bash -c 'compile "$0" "$1"'

for name in "${models[@]}"; do
  for arch in 90 80; do
    log="$work/$name/sm_$arch.log"
    status="$(cat "$work/$name/sm_$arch.status" 2>/dev/null || echo missing)"
    # ptxas -v reports on stderr with "ptxas info"; anything else is a
    # diagnostic.
    diagnostics="$(grep -v -e '^ptxas info' -e '^    [0-9]* bytes stack frame' "$log")"
    if [[ "$status" != 0 || -n "$diagnostics" ]]; then
      echo "FAIL: nvcc -arch=sm_$arch $name/model.cu (exit $status):"
      echo "$diagnostics" | head -20
      failures=$((failures + 1))
      continue
    fi
    if [[ " $no_spills " == *" $name "* ]] &&
       grep 'spill' "$log" | grep -qv ' 0 bytes spill stores, 0 bytes spill loads'; then
      echo "FAIL: ptxas spills in $name for sm_$arch:"
      grep -B1 'spill' "$log" | head -20
      failures=$((failures + 1))
      continue
    fi
    echo "ok: $name sm_$arch ($(grep -c 'Compiling entry' "$log") kernels)"
  done
done

echo "$failures failure(s)"
[[ $failures -eq 0 && ${#models[@]} -gt 0 ]]
