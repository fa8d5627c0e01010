#!/usr/bin/env bash
# Checks that every C and C++ file of the repository is formatted as .clang-format
# says (Google style, 100 columns); prints the files that are not and exits
# 1. With --fix, formats them in place instead. .ci/run runs the check.
#   tools/check_format.sh [--fix]
set -euo pipefail
cd "$(dirname "$0")/.."

# Emitted kernels (tests/golden) are the code generator's output, checked
# byte for byte by their own test. New files count before they are added.
mapfile -t files < <(git ls-files --cached --others --exclude-standard '*.c' '*.cc' '*.h' '*.inc' |
  grep -v '^tests/golden/')
if [[ "${1:-}" == "--fix" ]]; then
  clang-format -i "${files[@]}"
  exit 0
fi
unformatted=()
for f in "${files[@]}"; do
  if ! clang-format --dry-run --Werror "$f" >/dev/null 2>&1; then unformatted+=("$f"); fi
done
if ((${#unformatted[@]} > 0)); then
  echo "format: ${#unformatted[@]} file(s) differ from .clang-format (run tools/check_format.sh --fix):"
  printf '  %s\n' "${unformatted[@]}"
  exit 1
fi
