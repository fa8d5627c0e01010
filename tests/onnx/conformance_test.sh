#!/usr/bin/env bash
# ONNX's backend node tests (Debian's libonnx-testdata, 932 tests in 1.12.0),
# all of them, through loom: no test may FAIL, and at least MIN_PASSED must
# pass (a floor that only goes up). The tests are compiled 32 to a
# translation unit; the whole set takes a few seconds. First, the runner
# must catch a wrong expected value.
set -euo pipefail

conformance="$1"
min_passed="$2"
node="/usr/share/libonnx-testdata/data/node"
tmp="${TEST_TMPDIR:-$(mktemp -d)}"
if [[ ! -d "$node" ]]; then
  echo "FAIL: $node is missing (Debian package libonnx-testdata; ./bazelw installs it)"
  exit 1
fi

# A copy of test_lstm_defaults whose last expected element is +inf.
mkdir -p "$tmp/tampered"
cp -r "$node/test_lstm_defaults" "$tmp/tampered/"
chmod -R u+w "$tmp/tampered"
expected="$tmp/tampered/test_lstm_defaults/test_data_set_0/output_0.pb"
size=$(stat -c %s "$expected")
printf '\x00\x00\x80\x7f' |
  dd of="$expected" bs=1 seek=$((size - 4)) conv=notrunc status=none
if "$conformance" --cache_dir="$tmp/cache" "$tmp/tampered" >"$tmp/tampered.out"; then
  echo "FAIL: the runner passed a test whose expected output was altered"
  cat "$tmp/tampered.out"
  exit 1
fi
grep -q "^FAIL test_lstm_defaults max_abs_error=inf" "$tmp/tampered.out"

"$conformance" --min_passed="$min_passed" --batch=32 \
  --cache_dir="$tmp/cache" "$node"
