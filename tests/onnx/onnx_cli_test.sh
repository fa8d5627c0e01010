#!/usr/bin/env bash
# `loom compile|run --model=M.onnx`: ONNX models from ONNX's own test data
# (Debian's libonnx-testdata) through the command line, and the refusals
# (exit 2, naming the node and the cause) for what loom cannot run.
set -uo pipefail

loom="$1"
node="/usr/share/libonnx-testdata/data/node"
export LOOM_CACHE_DIR="${TEST_TMPDIR:-$(mktemp -d)}/cache"
out="${TEST_TMPDIR:-$(mktemp -d)}/out"
mkdir -p "$out"
if [[ ! -d "$node" ]]; then
  echo "FAIL: $node is missing (Debian package libonnx-testdata; ./bazelw installs it)"
  exit 1
fi

source tests/expect.sh

expect 0 "check pass" run --check --model="$node/test_lstm_defaults/model.onnx"
expect 0 "check pass" run --check --model="$node/test_gru_seq_length/model.onnx"
expect 0 "check pass" run --check --model="$node/test_layer_normalization_4d_axis0/model.onnx"
expect 0 "check pass" run --check --model="$node/test_softmax_axis_0/model.onnx"
expect 0 "check pass" run --check --model="$node/test_conv_with_strides_and_asymmetric_padding/model.onnx"
expect 0 "check pass" run --check --model="$node/test_maxpool_2d_same_lower/model.onnx"
expect 0 "check pass" run --check --model="$node/test_averagepool_2d_pads_count_include_pad/model.onnx"
expect 0 "" compile --model="$node/test_gemm_default_no_bias/model.onnx" \
  --report="$out/report.json"
if ! grep -q '"model": ".*test_gemm_default_no_bias/model.onnx"' "$out/report.json"; then
  echo "FAIL: the report does not name the ONNX model"
  failures=$((failures + 1))
fi

# A language model exported from PyTorch (tests/onnx/models), its token ids
# the graph's input: an id outside the vocabulary exits 2 naming the node.
models="tests/onnx/models"
mkdir -p "$out/ids_ok" "$out/ids_bad"
cp "$models/embedding_gru.ids.bin" "$out/ids_ok/ids.bin"
perl -e 'print pack("q<*", @ARGV)' -- 1 2 3 4 5 6 7 8 9 10 11 12 13 20 >"$out/ids_bad/ids.bin"
expect 0 "check pass" run --check --model="$models/embedding_gru.onnx" --inputs="$out/ids_ok"
expect 2 "^loom: node '/embedding/Gather' \(gather\): index 20 is out of range for axis 0 of size 20$" \
  run --model="$models/embedding_gru.onnx" --inputs="$out/ids_bad"

# Refusals: exit 2, naming the file, the node and the cause.
expect 2 "test_reshape_extended_dims/model.onnx: node 'reshaped' \(Reshape\): input 'shape' \(the target shape\) must be known at import" \
  compile --model="$node/test_reshape_extended_dims/model.onnx"
expect 2 "node '.*' \(NonZero\): input 'condition' \(the data: the output's shape depends on its values, and loom's shapes are static\) must be known at import" \
  compile --model="$node/test_nonzero_example/model.onnx"
expect 2 "node '.*' \(Bernoulli\): op Bernoulli \(opset [0-9]+\) is not supported" \
  compile --model="$node/test_bernoulli/model.onnx"
expect 2 "node '.*' \(Cast\): element type STRING is not supported" \
  compile --model="$node/test_cast_FLOAT_to_STRING/model.onnx"
expect 2 "graph input '.*': element type STRING is not supported" \
  compile --model="$node/test_cast_STRING_to_FLOAT/model.onnx"
printf 'not a model' >"$out/garbage.onnx"
expect 2 "garbage.onnx: not a binary ONNX model" compile --model="$out/garbage.onnx"
expect 2 "missing.onnx: cannot open" compile --model="$out/missing.onnx"

echo "$failures failure(s)"
[[ $failures -eq 0 ]]
