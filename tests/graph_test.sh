#!/usr/bin/env bash
# loom compile --graph: the fused schedule as a Graphviz graph that dot
# renders without a warning; GroupNorm is one box, the LSTM's two layers
# share one kernel function, a product and its epilogue are one box.
set -uo pipefail

loom="$1"
tmp="${TEST_TMPDIR:-$(mktemp -d)}"
export LOOM_CACHE_DIR="$tmp/cache"
out="$tmp/out"
mkdir -p "$out"
source tests/expect.sh

"$loom" gen --kind=random --nodes=80 --seed=11 --out="$tmp/random.pbtxt" >/dev/null ||
  { echo "FAIL: gen"; exit 1; }
for model in examples/group_norm.pbtxt examples/lstm_l2_h64.pbtxt "$tmp/random.pbtxt"; do
  name=$(basename "$model" .pbtxt)
  expect 0 "kernels" compile --model="$model" --graph="$tmp/$name.dot"
  # Where the system's font cache is stale (fonts installed after it was
  # built), fontconfig writes a user cache: the sandbox's home is read-only.
  if ! XDG_CACHE_HOME="$tmp/cache" dot -Tsvg "$tmp/$name.dot" -o "$tmp/$name.svg" \
      2>"$tmp/$name.warnings" ||
     [[ -s "$tmp/$name.warnings" ]]; then
    echo "FAIL: dot on $name.dot: $(head -c 300 "$tmp/$name.warnings")"
    failures=$((failures + 1))
  fi
done
boxes=$(grep -cE '^  k[0-9]+ \[label=' "$tmp/group_norm.dot")
[[ $boxes -eq 1 ]] || { echo "FAIL: group_norm has $boxes boxes, not 1"; failures=$((failures + 1)); }
grep -q "called by 2 launches" "$tmp/lstm_l2_h64.dot" ||
  { echo "FAIL: the LSTM's layers do not share a box"; failures=$((failures + 1)); }
# A product and its epilogue run in one launch: one box, listing both.
expect 0 "kernels" compile --model=examples/linear_large.pbtxt --graph="$tmp/linear_large.dot"
grep -q 'label="loom_f0 (.*2 nodes.*matmul.*relu' "$tmp/linear_large.dot" ||
  { echo "FAIL: linear_large's box does not hold its product and epilogue"; failures=$((failures + 1)); }
grep -q "style=dashed.*not fused: " "$tmp/lstm_l2_h64.dot" ||
  { echo "FAIL: no refused fusion drawn"; failures=$((failures + 1)); }

expect 0 "kernels" compile --model=examples/group_norm.pbtxt --graph="$tmp/group_norm.svg"
[[ -s "$tmp/group_norm.svg" && ! -e "$tmp/group_norm.svg.dot" ]] ||
  { echo "FAIL: no svg, or its dot file left behind"; failures=$((failures + 1)); }
expect 2 "--graph writes .dot, .svg, .png or .pdf, not 'gif'" \
  compile --model=examples/group_norm.pbtxt --graph="$tmp/group_norm.gif"

echo "$failures failure(s)"
[[ $failures -eq 0 ]]
