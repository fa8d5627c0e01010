#!/usr/bin/env bash
# Every example compiles, runs and matches the reference interpreter
# (`loom run --check`), with the default pipeline and, for the recurrent
# ones, the unrolled one.
set -uo pipefail

loom="$1"
export LOOM_CACHE_DIR="${TEST_TMPDIR:-$(mktemp -d)}/cache"
failures=0
for model in examples/*.pbtxt; do
  pipelines=(cpu)
  [[ $model == *lstm* || $model == *gru* ]] && pipelines=(cpu_unrolled_rnn)
  for pipeline in "${pipelines[@]}"; do
    if output=$("$loom" run --model="$model" --pipeline="$pipeline" --check 2>&1); then
      echo "ok: $output"
    else
      echo "FAIL ($pipeline): $output"
      failures=$((failures + 1))
    fi
  done
done
echo "$failures failure(s)"
[[ $failures -eq 0 ]]
