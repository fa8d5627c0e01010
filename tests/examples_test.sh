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
  [[ $model == *lstm* || $model == *gru* ]] && pipelines=(cpu cpu_unrolled_rnn)
  for pipeline in "${pipelines[@]}"; do
    if output=$("$loom" run --model="$model" --pipeline="$pipeline" --check 2>&1); then
      echo "ok: $output"
    else
      echo "FAIL ($pipeline): $output"
      failures=$((failures + 1))
    fi
  done
done
# A product's epilogue runs on each thread's block of rows (three blocks of
# unequal size), or after the library's product where the rows are too few
# for the threads (twenty): backends/cpp/library_calls.h.
for threads in 3 20; do
  if output=$(OMP_NUM_THREADS=$threads "$loom" run --model=examples/linear_large.pbtxt --check 2>&1); then
    echo "ok ($threads threads): $output"
  else
    echo "FAIL ($threads threads): $output"
    failures=$((failures + 1))
  fi
done
echo "$failures failure(s)"
[[ $failures -eq 0 ]]
