#!/usr/bin/env bash
# Every example compiled for one instruction-set level the emitted code has
# a path for — generic x86-64 (GCC vectors, no ISA builtins), AVX2 with FMA
# (haswell) or AVX-512 (skylake-avx512, run only where this CPU has it) —
# runs and matches the reference interpreter (`loom run --check`).
#   isa_test.sh LOOM MARCH
set -uo pipefail

loom="$1"
march="$2"
export LOOM_CACHE_DIR="${TEST_TMPDIR:-$(mktemp -d)}/cache"
dir="${TEST_TMPDIR:-$(mktemp -d)}/pipelines"
mkdir -p "$dir"
if [[ $march == skylake-avx512 ]] && ! grep -qw avx512f /proc/cpuinfo; then
  echo "skip $march: this CPU has no AVX-512"
  exit 0
fi
# oneDNN (convs and products) held to the same level, as on a machine of it:
# it picks its kernels by this CPU, not by the code's target.
case $march in
  x86-64) export ONEDNN_MAX_CPU_ISA=SSE41 ;;
  haswell) export ONEDNN_MAX_CPU_ISA=AVX2 ;;
esac
pipeline="$dir/cpu_$march.pbtxt"
sed "s/cpp { simd: NATIVE openmp: true }/cpp { simd: NATIVE openmp: true march: \"$march\" }/" \
  pipelines/cpu.pbtxt >"$pipeline"
grep -q "march: \"$march\"" "$pipeline" || { echo "FAIL: no march in $pipeline"; exit 1; }
# Every recurrence kept as a loop as well, whatever AUTO chooses: the
# products of blocks of rows and of a team (lstm_l6_h256's weight).
loop_pipeline="$dir/cpu_loop_$march.pbtxt"
sed "s/rnn: AUTO/rnn: LOOP/" "$pipeline" >"$loop_pipeline"
grep -q "rnn: LOOP" "$loop_pipeline" || { echo "FAIL: no rnn: LOOP in $loop_pipeline"; exit 1; }
failures=0
check() {
  if output=$("$loom" run --model="$1" --pipeline="$2" --check 2>&1); then
    echo "ok ($march, $(basename "$2")): $output"
  else
    echo "FAIL ($march, $(basename "$2")): $output"
    failures=$((failures + 1))
  fi
}
for model in examples/*.pbtxt; do
  check "$model" "$pipeline"
done
for model in examples/lstm*.pbtxt examples/gru*.pbtxt; do
  check "$model" "$loop_pipeline"
done
echo "$failures failure(s)"
[[ $failures -eq 0 ]]
