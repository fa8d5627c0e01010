#!/usr/bin/env bash
# How long a cached `loom run` takes from its start to its first kernel
# launch, and in all, for each model (default: the seed RNNs), the models
# alternating, medians of ROUNDS (default 9):
#   tests/bench/first_launch.sh [--rounds=N] [MODEL...]
# The launch is seen by first_launch_probe.c, preloaded.
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds=9
if [[ "${1:-}" == --rounds=* ]]; then rounds=${1#--rounds=}; shift; fi
models=("$@")
if ((${#models[@]} == 0)); then
  models=(examples/lstm_l2_h64.pbtxt examples/lstm_l6_h256.pbtxt examples/gru_l2_h64.pbtxt)
fi
./bazelw build -c opt //tools:loom //tests/bench:first_launch_probe.so 2>/dev/null
loom=bazel-bin/tools/loom
probe=$PWD/bazel-bin/tests/bench/first_launch_probe.so
cache=$(mktemp -d)
trap 'rm -rf "$cache"' EXIT
export LOOM_CACHE_DIR=$cache
for model in "${models[@]}"; do "$loom" compile --model="$model" --quiet >/dev/null; done

declare -A first total
for ((round = 0; round < rounds; ++round)); do
  for model in "${models[@]}"; do
    start=$(date +%s%N)
    line=$(LOOM_PROBE_T0=$start LD_PRELOAD=$probe "$loom" run --model="$model" --iters=1 \
      --warmup=0 2>&1 >/dev/null | grep '^first launch at' || echo "first launch at nan ms")
    end=$(date +%s%N)
    first[$model]+="$(awk '{print $4}' <<<"$line") "
    total[$model]+="$(((end - start) / 1000)) "
  done
done

median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
echo "| model | to first launch ms | whole process ms |"
echo "|---|---|---|"
for model in "${models[@]}"; do
  echo "| $(basename "$model" .pbtxt) | $(median <<<"${first[$model]}") |" \
    "$(awk '{printf "%.1f", $1 / 1000}' <<<"$(median <<<"${total[$model]}")") |"
done
