#!/usr/bin/env bash
# On a machine with an NVIDIA GPU: builds loom, runs every example and the
# cuBLAS test model (backends/cuda/testdata/gemms.pbtxt: batched, transposed
# and f64 products) with the cuda pipeline against the reference interpreter
# (--check; mlp, lstm, gru and that model call cuBLAS), then prints for
# the large norms and softmax the bandwidth achieved (the least bytes the
# model must move / the median kernel time) next to a device-to-device copy
# measured in the same process. Exit status: the number of failures (0 when
# all pass). Meant to finish in a few minutes.
#
#   tests/gpu/run_all.sh            # builds //tools:loom with ./bazelw
#   LOOM=path/to/loom tests/gpu/run_all.sh
set -uo pipefail
cd "$(dirname "$0")/../.."

if [[ -z "${LOOM:-}" ]]; then
  echo "== building //tools:loom"
  ./bazelw build -c opt //tools:loom || { echo "FAIL: build"; exit 1; }
  LOOM=bazel-bin/tools/loom
fi
nvidia-smi -L 2>/dev/null || echo "(nvidia-smi not available)"
out="$(mktemp -d)"
export LOOM_CACHE_DIR="${LOOM_CACHE_DIR:-$out/cache}"

# A field of a report (protobuf JSON: int64 fields are quoted strings).
field() {
  sed -n "s/^ *\"$1\": \"\{0,1\}\([-0-9.eE+a-zA-Z]*\)\"\{0,1\},\{0,1\}$/\1/p" "$2" | head -1
}

failures=0
large="group_norm_large layer_norm_large softmax_large"
for model in examples/*.pbtxt backends/cuda/testdata/gemms.pbtxt; do
  name="$(basename "$model" .pbtxt)"
  args=(run --model="$model" --pipeline=cuda --check --report="$out/$name.json")
  # The large ones also time 20 runs and the copy roofline.
  [[ " $large " == *" $name "* ]] && args+=(--iters=20 --roofline)
  start=$SECONDS
  if line="$(timeout 300 "$LOOM" "${args[@]}" 2>&1)"; then
    echo "ok   ($((SECONDS - start)) s) $line"
  else
    echo "FAIL ($((SECONDS - start)) s) $name: $line"
    failures=$((failures + 1))
  fi
done

# Without cuBLAS, a model with products fails naming it (exit 2); one
# without runs.
line="$(LOOM_CUBLAS=/nonexistent/libcublas.so "$LOOM" run --model=examples/mlp.pbtxt --pipeline=cuda 2>&1)"
status=$?
if [[ $status -ne 2 || "$line" != *"cuBLAS not found"* ]]; then
  echo "FAIL (exit $status, want 2 naming cuBLAS) mlp without cuBLAS: $line"
  failures=$((failures + 1))
fi
if ! line="$(LOOM_CUBLAS=/nonexistent/libcublas.so "$LOOM" run --model=examples/softmax.pbtxt --pipeline=cuda --check 2>&1)"; then
  echo "FAIL softmax without cuBLAS: $line"
  failures=$((failures + 1))
fi

echo
echo "== bandwidth: min_bytes / median kernel time, against a device copy"
printf "%-18s %12s %12s %12s %8s\n" model "median ms" "GB/s" "copy GB/s" ratio
for name in $large; do
  report="$out/$name.json"
  [[ -s "$report" ]] || { printf "%-18s (no report)\n" "$name"; continue; }
  bytes="$(field min_bytes "$report")"
  seconds="$(field run_seconds_median "$report")"
  copy="$(field stream_gbps "$report")"
  awk -v n="$name" -v b="$bytes" -v s="$seconds" -v c="$copy" 'BEGIN {
    if (s <= 0 || c <= 0) { printf "%-18s (no timing)\n", n; exit }
    g = b / s / 1e9
    printf "%-18s %12.4f %12.1f %12.1f %8.2f\n", n, s * 1e3, g, c, g / c
  }'
done
echo
echo "$failures failure(s); reports in $out"
exit "$failures"
