# Sourced by the command-line tests. Needs `loom` (the binary) and `out` (a
# scratch directory) set; counts mismatches in `failures`.
#
# expect EXIT_CODE PATTERN ARGS...: runs loom with ARGS, checks its exit
# status and that its stdout plus stderr match the extended regex PATTERN.
failures=0
expect() {
  local want="$1" pattern="$2"
  shift 2
  "$loom" "$@" >"$out/stdout" 2>"$out/stderr"
  local got=$?
  local text
  text="$(cat "$out/stdout" "$out/stderr")"
  if [[ $got -ne $want ]] || ! grep -qE -- "$pattern" <<<"$text"; then
    echo "FAIL: loom $* -> exit $got (want $want), output:"
    echo "$text" | head -20
    echo "  (expected to match: $pattern)"
    failures=$((failures + 1))
  else
    echo "ok: loom $* -> exit $got"
  fi
}
