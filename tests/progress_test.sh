#!/usr/bin/env bash
# The progress line of a long compile: on a terminal (a pseudo-terminal made
# by `script`), once the compile has run a second, one line naming each
# stage, rewritten in place; none when stderr is a file, none with --quiet.
set -uo pipefail

loom="$1"
tmp="${TEST_TMPDIR:-$(mktemp -d)}"
export LOOM_CACHE_DIR="$tmp/cache"
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# Unrolled, about 360k buffers: 1.5 s of front end here (kept as a loop,
# as the cpu pipeline keeps it, a few milliseconds).
"$loom" gen --kind=lstm --layers=4 --hidden=16 --seq=30000 --out="$tmp/long.pbtxt" >/dev/null ||
  { echo "FAIL: gen"; exit 1; }
compile=("$loom" compile --model="$tmp/long.pbtxt" --pipeline=cpu_unrolled_rnn --out_dir="$tmp/out")

script -qfec "${compile[*]}" /dev/null >"$tmp/terminal.txt" 2>&1 || fail "compile on a terminal"
grep -qE $'\r\033\\[Kloom: [a-z-]+( compile)?, [0-9.]+ s, peak [0-9]+ MB' "$tmp/terminal.txt" ||
  fail "no progress line on a terminal: $(cat -v "$tmp/terminal.txt" | head -c 400)"
grep -q "loom: native compile" "$tmp/terminal.txt" || fail "no native compile stage"

"${compile[@]}" >/dev/null 2>"$tmp/stderr.txt" || fail "compile with stderr to a file"
[[ -s "$tmp/stderr.txt" ]] && fail "stderr to a file got: $(cat -v "$tmp/stderr.txt" | head -c 200)"

script -qfec "${compile[*]} --quiet" /dev/null >"$tmp/quiet.txt" 2>&1 || fail "--quiet"
grep -q "loom: " "$tmp/quiet.txt" && fail "--quiet still printed progress"

echo "$failures failure(s)"
[[ $failures -eq 0 ]]
