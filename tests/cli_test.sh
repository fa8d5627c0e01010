#!/usr/bin/env bash
# The loom command's contract (docs/usage.md): exit codes, messages that name the
# place and the cause, and the report's fields.
set -uo pipefail

loom="$1"
bad="tests/bad_inputs"
export LOOM_CACHE_DIR="${TEST_TMPDIR:-$(mktemp -d)}/cache"
out="${TEST_TMPDIR:-$(mktemp -d)}/out"
mkdir -p "$out"
source tests/expect.sh

expect 2 "$bad/malformed.pbtxt:5:1: .*" compile --model=$bad/malformed.pbtxt
expect 2 "node 'frob1' \(frobnicate\): unknown op" compile --model=$bad/unknown_op.pbtxt
expect 2 "node 'add1' \(add\).*2 inputs.*1" compile --model=$bad/wrong_arity.pbtxt
expect 2 "node 'mm1' \(matmul\).*\[2,3\].*\[4,5\]" compile --model=$bad/shape_mismatch.pbtxt
expect 2 "cycle.*'first'.*'second'.*'third'" compile --model=$bad/cycle.pbtxt
expect 2 "$bad/no_such_model.pbtxt: cannot open" compile --model=$bad/no_such_model.pbtxt
expect 2 "$bad/empty.pbtxt: empty file" compile --model=$bad/empty.pbtxt
expect 2 "$bad/binary.pbtxt: binary data at byte" compile --model=$bad/binary.pbtxt
expect 2 "$bad/unknown_pass.pbtxt:3: .*fuse-everything" compile --model=$bad/good.pbtxt --pipeline=$bad/unknown_pass.pbtxt
expect 2 "node 'gn' \(group_norm\).*num_groups" compile --model=$bad/group_norm_groups.pbtxt
expect 2 "node 'cell' \(lstm\).*'W'.*\[1,12,3\].*\[1,16,3\]" compile --model=$bad/lstm_weights.pbtxt
expect 2 "node 'sm' \(softmax\).*axis" compile --model=$bad/axis_range.pbtxt
expect 2 "node 'big' \(tile\): attribute 'repeats'" compile --model=$bad/tile_overflow.pbtxt
expect 2 "node 'big' \(expand\): output 'y': shape .* is too large" compile --model=$bad/expand_too_large.pbtxt
expect 2 "node 'rs' \(reshape\): attribute 'shape' \[-5\]" compile --model=$bad/reshape_negative.pbtxt
expect 2 "buffers_too_large.pbtxt: the model's buffers need .* GB, more than this machine's" compile --model=$bad/buffers_too_large.pbtxt
expect 2 "weight_too_large.pbtxt: initializer 'w': its values need .* GB, more than this machine's" run --model=$bad/weight_too_large.pbtxt
expect 2 "overflow_input.onnx: graph input 'x': shape \[1099511627776,1099511627776\] is too large: its element count overflows int64" \
  run --model=$bad/overflow_input.onnx
expect 2 "negative_dim.onnx: graph input 'x': dim 0 is -3, a negative dimension" compile --model=$bad/negative_dim.onnx
expect 2 "future_opset.onnx: the model imports opset 999 of the default ONNX domain, newer than the newest" \
  compile --model=$bad/future_opset.onnx
expect 2 "unknown_domain.onnx: the model imports opset 1 of domain 'com.example.frobnicate', a domain loom's ONNX importer does not know" \
  compile --model=$bad/unknown_domain.onnx
expect 2 "directory.onnx: is a directory" compile --model=$bad/directory.onnx
# Named dims take their sizes from --dims, one size for every input naming it.
expect 2 "named_dims.onnx: graph input 'x': dim 0 is the named dim 'batch'; .*--dims=batch=N" \
  compile --model=$bad/named_dims.onnx
expect 0 "check pass" run --model=$bad/named_dims.onnx --dims=seq=5,batch=3 --check
expect 2 "a size is given for the named dim 'sequence', which no graph input has \(the model's: batch, seq\)" \
  run --model=$bad/named_dims.onnx --dims=batch=3,sequence=5
expect 2 "bad value for --dims: .*'seq' is not NAME=SIZE" run --model=$bad/named_dims.onnx --dims=batch=3,seq
# Or from the shapes of --inputs' .npy files, within bounds --dims=NAME=MIN..MAX.
# npy FILE SHAPE: an .npy file of float32 zeros of SHAPE ("3, 5, 4"), as numpy.save writes it.
npy() {
  local header="{'descr': '<f4', 'fortran_order': False, 'shape': ($2), }"
  header+=$(printf '%*s' $(( (64 - (10 + ${#header} + 1) % 64) % 64 )) '')
  local length=$(( ${#header} + 1 ))
  {
    printf '\x93NUMPY\x01\x00'
    printf "\\x$(printf %02x $((length & 255)))\\x$(printf %02x $((length >> 8)))"
    printf '%s\n' "$header"
    head -c $(( 4 * (${2//, /*}) )) /dev/zero
  } > "$1"
}
npys="$out/npys"
mkdir -p "$npys"
npy "$npys/x.npy" "3, 5, 4"
npy "$npys/y.npy" "3, 5, 1"
expect 0 "check pass" run --model=$bad/named_dims.onnx --inputs=$npys --check
expect 0 "check pass" run --model=$bad/named_dims.onnx --inputs=$npys --dims=seq=1..8 --check
expect 2 "graph input 'x': dim 1, the named dim 'seq', is 5, outside its bounds 1..4" \
  run --model=$bad/named_dims.onnx --inputs=$npys --dims=seq=1..4
expect 2 "graph input 'x': dim 0, the named dim 'batch', is 3 but 2 as given" \
  run --model=$bad/named_dims.onnx --inputs=$npys --dims=batch=2
expect 2 "bad value for --dims: .*'seq=4..1' is not NAME=SIZE or NAME=MIN..MAX" \
  run --model=$bad/named_dims.onnx --dims=seq=4..1
# Graph text names dims as ONNX does, and computes sizes from them.
expect 2 "named_dims.pbtxt: graph input 'x': dim 0 is the named dim 'batch'; .*--dims=batch=N" \
  compile --model=$bad/named_dims.pbtxt
expect 0 "check pass" run --model=$bad/named_dims.pbtxt --dims=seq=5,batch=3 --check
expect 0 "check pass" run --model=$bad/named_dims.pbtxt --inputs=$npys --check
expect 2 "dim_expr.pbtxt: node 'rows' \(reshape\): attribute 'shape': the size 'batch \* seq \*' expected a number, a name or '\(' at column 14" \
  run --model=$bad/dim_expr.pbtxt --inputs=$npys
npy "$npys/y.npy" "3, 6, 1"
expect 2 "graph input 'y': dim 1, the named dim 'seq', is 6 but 5 in graph input 'x' \(dim 1\)" \
  run --model=$bad/named_dims.onnx --inputs=$npys
# With bounds and --out_dir, one artifact for every shape within them, which
# runs at --dims sizes or the --inputs files' shapes.
every="$out/every_shape"
expect 2 "needs --out_dir" compile --model=$bad/named_dims.onnx --dims=batch=1..4,seq=1..8
expect 2 "the named dim 'batch', which no graph input has" compile --model=$bad/good.pbtxt --dims=batch=1..4 --out_dir=$every
expect 0 "compiled for every shape within the bounds, .*every_shape/model.loom: [0-9]+ shapes of the sweep in [0-9]+ classes" \
  compile --model=$bad/named_dims.onnx --dims=batch=1..4,seq=1..8 --out_dir=$every --report=$out/every.json
tr -d ' \n' <"$out/every.json" | grep -q '"shape_classes":\["batch=1,seq=1' ||
  { echo "FAIL: the report's shape_classes"; failures=$((failures + 1)); }
expect 0 "median" run --model=$every/model.loom --dims=batch=3,seq=7
expect 2 "graph input 'y': dim 1, the named dim 'seq', is 6 but 5 in graph input 'x'" \
  run --model=$every/model.loom --inputs=$npys
npy "$npys/y.npy" "3, 5, 1"
expect 0 "median" run --model=$every/model.loom --inputs=$npys
expect 2 "give the size of the dim 'seq' \(1..8\) with --dims=seq=N" run --model=$every/model.loom --dims=batch=3
expect 2 "its bounds are its compile's" run --model=$every/model.loom --dims=batch=1..2,seq=3
expect 2 "the size given for the named dim 'batch' is 5, outside its bounds 1..4" \
  run --model=$every/model.loom --dims=batch=5,seq=3
expect 0 "" compile --model=$bad/good.pbtxt --out_dir=$out/one_shape
expect 2 "model.loom: --dims sizes the named dims of a model compiled for every shape; this one was compiled for one" \
  run --model=$out/one_shape/model.loom --dims=batch=1
# An .npy file's type must be its input's.
npy "$npys/x.npy" "2, 4"
expect 2 "npys/x.npy: f32\[2,4\], but input 'x' is f32\[2,3\]" run --model=$bad/good.pbtxt --inputs=$npys
npy "$npys/x.npy" "2, 3"
expect 0 "check pass" run --model=$bad/good.pbtxt --inputs=$npys --check
printf 'not numpy' > "$npys/y.npy"
expect 2 "npys/y.npy: not a readable .npy file" run --model=$bad/named_dims.onnx --inputs=$npys
expect 2 "no_such_pipeline" compile --model=$bad/good.pbtxt --pipeline=no_such_pipeline
# Passes out of their stage's order, or for another target, fail at load.
pipelines="$bad/pipelines"
expect 2 "lowers_twice.pbtxt:4: pass 'lower' runs on the graph, but here the module holds loop IR \\(after 'lower' at .*lowers_twice.pbtxt:3\\)" \
  compile --model=$bad/good.pbtxt --pipeline=$pipelines/lowers_twice.pbtxt
expect 2 "emits_before_fusing.pbtxt:4: pass 'codegen-cpp' runs on a memory plan, but here the module holds a schedule" \
  compile --model=$bad/good.pbtxt --pipeline=$pipelines/emits_before_fusing.pbtxt
expect 2 "cuda_target_cpp_codegen.pbtxt:6: pass 'codegen-cpp' is for target CPU, but the pipeline's target is CUDA" \
  run --model=$bad/good.pbtxt --pipeline=$pipelines/cuda_target_cpp_codegen.pbtxt
expect 2 "unknown flag --frobnicate" compile --model=$bad/good.pbtxt --frobnicate=1
expect 2 "bad value for --iters" run --model=$bad/good.pbtxt --iters=many
expect 2 "unknown command 'compiel'" compiel
expect 0 "loom compile --model=M" --help
expect 0 "^  --warmup +run: untimed runs" run --help
expect 0 "^  --seed +gen: random seed; run: seed" run --help
expect 0 "^flags of compile:" compile --help
expect 0 "usage:" help
expect 2 "compile needs --model" compile
expect 2 "gen needs --kind" gen --out=$out/x.pbtxt

# Every bad input, through compile and run alike: exit 2 and a message that
# names the file at fault. good.pbtxt is the model the bad pipeline runs on.
for input in "$bad"/*.pbtxt "$bad"/*.onnx; do
  name="$(basename "$input")"
  args=(--model="$input")
  if [[ "$name" == good.pbtxt ]]; then
    name=unknown_pass.pbtxt
    args+=(--pipeline="$bad/unknown_pass.pbtxt")
  fi
  for command in compile run; do
    expect 2 "^loom: .*$name" "$command" "${args[@]}"
  done
done

expect 0 "check pass" run --model=examples/mlp.pbtxt --check
expect 0 "check pass" run --model=examples/softmax.pbtxt --check --iters=3
expect 0 "over 2 runs" run --model=examples/softmax.pbtxt --warmup=3 --iters=2
expect 2 "--warmup must be at least 0, got -1" run --model=examples/softmax.pbtxt --warmup=-1
expect 0 "buffers" compile --model=examples/mlp.pbtxt --report=$out/report.json --out_dir=$out/src
for field in model pipeline target graph_nodes buffers kernels kernel_functions \
             passes frontend_seconds native_compile_seconds cache_hit; do
  if ! grep -q "\"$field\"" "$out/report.json"; then
    echo "FAIL: report lacks field $field"
    failures=$((failures + 1))
  fi
done
[[ -s "$out/src/model.cc" ]] || { echo "FAIL: --out_dir wrote no source"; failures=$((failures + 1)); }
[[ -s "$out/src/model.loom" ]] || { echo "FAIL: --out_dir wrote no artifact"; failures=$((failures + 1)); }
expect 0 "model.loom: median .* over 3 runs" run --model=$out/src/model.loom --iters=3
# --profile: each kernel function's time per run, costliest first, named
# by the compute nodes it runs, from a compile and from an artifact alike.
expect 0 "^ +[0-9.]+% +[0-9.]+ ms  loom_f[0-9]+ x[0-9]+  .*fc" \
  run --model=examples/mlp.pbtxt --profile --iters=3 --report=$out/profile.json
expect 0 "^ +[0-9.]+% +[0-9.]+ ms  loom_f[0-9]+ x[0-9]+  .*fc" \
  run --model=$out/src/model.loom --profile --iters=3
# The report's shares (costliest first) sum to one.
awk -F': ' '/"share"/ { s = $2 + 0; if (seen && s > last + 1e-12) bad = 1; seen = 1; last = s; sum += s }
  END { exit (bad || sum < 0.999999 || sum > 1.000001) }' "$out/profile.json" ||
  { echo "FAIL: --profile shares are not costliest first or do not sum to one"; failures=$((failures + 1)); }
for field in function launches seconds share label; do
  grep -q "\"$field\"" "$out/profile.json" || { echo "FAIL: kernel_times lack $field"; failures=$((failures + 1)); }
done
head -c 1000 "$out/src/model.loom" > "$out/truncated.loom"
expect 2 "truncated.loom: not a loom artifact \(truncated or corrupt\?\)" run --model=$out/truncated.loom
expect 2 "no_such.loom: cannot be read" run --model=$out/no_such.loom
expect 2 "--check needs the model file" run --model=$out/src/model.loom --check
expect 2 "--aot_class: '1x' is not a C\+\+ identifier" compile --model=examples/mlp.pbtxt --aot=$out/mlp --aot_class=1x
expect 0 "" compile --model=examples/mlp.pbtxt --aot=$out/mlp --aot_class=Mlp
grep -q "class Mlp {" "$out/mlp.h" || { echo "FAIL: --aot wrote no class"; failures=$((failures + 1)); }

# --explain_fusion: the fuser's decisions and lowering's inlining, each
# named from both sides.
expect 0 "^relu0: not fused with 'fc1_matmul': library call" \
  compile --model=examples/mlp.pbtxt --explain_fusion=relu0
expect 0 "^relu0: inlines 'fc0_add'" compile --model=examples/mlp.pbtxt --explain_fusion=relu0
expect 0 "^relu0: stored, not inlined: its readers read 4096 elements of its 128" \
  compile --model=examples/mlp.pbtxt --explain_fusion=relu0
expect 0 "^fc0_add: inlined into 'relu0' \(pointwise: its body of 3 steps" \
  compile --model=examples/mlp.pbtxt --explain_fusion=fc0_add
expect 0 "^frob: no fusion candidates \(or no compute node or inlined value of that name\)" \
  compile --model=examples/mlp.pbtxt --explain_fusion=frob
expect 0 "\"inlined_values\": 1," compile --model=examples/mlp.pbtxt --report=/dev/stdout

expect 0 "" compile --model=examples/mlp.pbtxt --dump_after='lower|schedule' --dump_dir=$out/dumps
ls "$out/dumps" | grep -q -- '-lower.txt' || { echo "FAIL: no dump after lower"; failures=$((failures + 1)); }
ls "$out/dumps" | grep -q -- '-verify.txt' && { echo "FAIL: dumped a pass that does not match"; failures=$((failures + 1)); }

# Index inputs (--inputs=DIR: raw little-endian data) out of range at run
# time: exit 2 with a message naming the node and the index, from the
# compiled model and from its artifact alike; in range, the run checks.
le64() { perl -e 'print pack("q<*", @ARGV)' -- "$@"; }
ranges="tests/index_range"
mkdir -p "$out/ids_ok" "$out/ids_bad" "$out/idx_ok" "$out/idx_bad" "$out/pairs_ok" "$out/pairs_bad"
le64 0 4 -5 1 2 3 >"$out/ids_ok/ids.bin"
le64 0 4 7 1 2 3 >"$out/ids_bad/ids.bin"
le64 1 -1 1 >"$out/idx_ok/idx.bin"
le64 1 -7 1 >"$out/idx_bad/idx.bin"
le64 0 3 -3 -1 2 0 1 3 >"$out/pairs_ok/pairs.bin"
le64 0 3 -3 -1 2 0 1 4 >"$out/pairs_bad/pairs.bin"
mkdir -p "$out/pairs_bad_row"
le64 0 3 -4 -1 2 0 1 3 >"$out/pairs_bad_row/pairs.bin"
expect 0 "check pass" run --model=$ranges/gather.pbtxt --inputs=$out/ids_ok --check
expect 2 "^loom: node 'lookup' \(gather\): index 7 is out of range for axis 0 of size 5$" \
  run --model=$ranges/gather.pbtxt --inputs=$out/ids_bad --check
expect 0 "check pass" run --model=$ranges/scatter.pbtxt --inputs=$out/idx_ok --check
expect 2 "^loom: node 'write' \(scatter_elements\): index -7 is out of range for axis 0 of size 6$" \
  run --model=$ranges/scatter.pbtxt --inputs=$out/idx_bad
expect 0 "check pass" run --model=$ranges/gather_nd.pbtxt --inputs=$out/pairs_ok --check
expect 2 "^loom: node 'pick' \(gather_nd\): index 4 is out of range for axis 2 of size 4$" \
  run --model=$ranges/gather_nd.pbtxt --inputs=$out/pairs_bad
expect 2 "^loom: node 'pick' \(gather_nd\): index -4 is out of range for axis 1 of size 3$" \
  run --model=$ranges/gather_nd.pbtxt --inputs=$out/pairs_bad_row
expect 0 "" compile --model=$ranges/gather.pbtxt --out_dir=$out/gather
expect 2 "^loom: node 'lookup' \(gather\): index 7 is out of range" \
  run --model=$out/gather/model.loom --inputs=$out/ids_bad

expect 0 "nodes" gen --kind=random --nodes=30 --seed=7 --out=$out/random.pbtxt
expect 0 "check pass" run --model=$out/random.pbtxt --check

echo "$failures failure(s)"
[[ $failures -eq 0 ]]
