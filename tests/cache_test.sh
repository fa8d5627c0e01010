#!/usr/bin/env bash
# The kernel cache under concurrency and crashes: four processes compiling
# the same model at once all succeed and leave one entry; a compile killed
# mid-write leaves no corrupt entry; a corrupt entry is rebuilt; the cache
# directory is private to the user.
set -uo pipefail

loom="$1"
model="examples/mlp.pbtxt"
tmp="${TEST_TMPDIR:-$(mktemp -d)}"
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# Four at once, on an empty cache.
export LOOM_CACHE_DIR="$tmp/concurrent/cache"
pids=()
for i in 1 2 3 4; do
  "$loom" compile --model=$model --report="$tmp/r$i.json" >"$tmp/out$i" 2>&1 &
  pids+=($!)
done
for i in 0 1 2 3; do
  wait "${pids[$i]}" || fail "concurrent compile $((i + 1)) failed: $(cat "$tmp/out$((i + 1))")"
done
entries=$(ls "$LOOM_CACHE_DIR" | grep -c '\.so$')
[[ $entries -eq 1 ]] || fail "expected 1 cached object, found $entries: $(ls "$LOOM_CACHE_DIR")"
leftovers=$(ls "$LOOM_CACHE_DIR" | grep -c '\.tmp')
[[ $leftovers -eq 0 ]] || fail "temporary files left behind: $(ls "$LOOM_CACHE_DIR")"
mode=$(stat -c %a "$LOOM_CACHE_DIR")
[[ $mode == 700 ]] || fail "cache directory mode is $mode, not 700"

# Killed while the native compiler runs: a slow fake compiler that is
# SIGKILLed with its parent, then a normal compile must work.
export LOOM_CACHE_DIR="$tmp/killed/cache"
fake="$tmp/slow-cxx"
printf '#!/bin/sh\nsleep 30\nexec g++ "$@"\n' >"$fake"
chmod +x "$fake"
CXX="$fake" "$loom" compile --model=$model >/dev/null 2>&1 &
victim=$!
sleep 1
kill -9 "$victim"
wait "$victim" 2>/dev/null
pkill -9 -f "$fake" 2>/dev/null
if ls "$LOOM_CACHE_DIR" 2>/dev/null | grep -q '\.so$'; then
  fail "a killed compile left a cache entry: $(ls "$LOOM_CACHE_DIR")"
fi
"$loom" run --model=$model --check >"$tmp/after_kill" 2>&1 || fail "compile after a kill failed: $(cat "$tmp/after_kill")"

# A corrupt entry is detected and rebuilt.
for so in "$LOOM_CACHE_DIR"/*.so; do echo garbage >"$so"; done
"$loom" run --model=$model --check --report="$tmp/rebuilt.json" >"$tmp/rebuilt" 2>&1 || fail "corrupt entry not rebuilt: $(cat "$tmp/rebuilt")"
grep -q '"cache_hit": false' "$tmp/rebuilt.json" || fail "a corrupt entry counted as a cache hit"

echo "$failures failure(s)"
[[ $failures -eq 0 ]]
