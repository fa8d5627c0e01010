#!/usr/bin/env bash
# The zoo's correctness subset (zoo_test.py) in the zoo's virtualenv
# ($LOOM_ZOO_VENV, which ./bazelw sets to $HOME/.venvs/loom-zoo): skipped,
# with one line, where tests/zoo/setup_venv.sh has not made it.
#
#   zoo_test.sh LIBLOOM_SO PYTHON_PACKAGE_DIR
set -euo pipefail

venv="${LOOM_ZOO_VENV:-}"
if [[ -z "$venv" || ! -x "$venv/bin/python" ]]; then
  echo "skip: no zoo virtualenv at '$venv' (tests/zoo/setup_venv.sh makes one)"
  exit 0
fi
tmp="${TEST_TMPDIR:-$(mktemp -d)}"
export LOOM_LIBRARY="$(realpath "$1")" PYTHONPATH="$(realpath "$2")" TMPDIR="$tmp"
export LOOM_CACHE_DIR="$tmp/cache"
exec "$(dirname "$0")/run.sh" zoo_test.py "$tmp/zoo"
