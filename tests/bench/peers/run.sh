#!/usr/bin/env bash
# Runs the peers benchmark (peers.py) with the virtualenv that setup_venv.sh
# made, passing its arguments on:
#
#   tests/bench/peers/run.sh [--cases=REGEX] [--rounds=5] [--iters=20] [--loom=PATH] [--out_dir=DIR]
#                            [--isa=native|avx2]  (avx2: see hide_avx512.c)
#
# or, with --compile_time first, torch.compile's first call with loom's backend
# against Inductor's, each in a fresh process with empty caches
# (compile_time.py):
#
#   tests/bench/peers/run.sh --compile_time [--rounds=3]
#
# LOOM_PEERS_VENV names another virtualenv (default $HOME/.venvs/loom-peers).
# Sets up the peers' environment: the NVIDIA libraries PyPI's torch wheel
# links at import and the CUDA toolkit's lib64 on LD_LIBRARY_PATH, TCMalloc
# preloaded (peers.py drops it again for loom, whose binaries link TCMalloc
# themselves), and no OPENBLAS_CORETYPE or OPENBLAS_L2_SIZE, which slow
# numpy's OpenBLAS.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=tests/torch_wheel.sh
source "$here/../../torch_wheel.sh"
venv="${LOOM_PEERS_VENV:-$HOME/.venvs/loom-peers}"
py="$venv/bin/python"
if [[ ! -x "$py" ]]; then
  echo "no virtualenv at $venv: run $here/setup_venv.sh first" >&2
  exit 2
fi

use_torch_libraries "$venv"

tcmalloc=/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4
if [[ -f "$tcmalloc" ]]; then
  export LD_PRELOAD="$tcmalloc${LD_PRELOAD:+:$LD_PRELOAD}"
else
  echo "note: $tcmalloc not found (Debian's libgoogle-perftools4); peers use the default allocator" >&2
fi
unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE

# --isa=avx2: CPUID stops reporting AVX-512 to every library of the run, loom
# and its compiler included (hide_avx512.c, preloaded), and glibc's string
# functions take their AVX2 versions.
for arg in "$@"; do
  if [[ "$arg" == "--isa=avx2" ]]; then
    hide="${XDG_CACHE_HOME:-$HOME/.cache}/loom/libhide_avx512.so"
    mkdir -p "$(dirname "$hide")"
    cc -O2 -shared -fPIC -o "$hide.$$" "$here/hide_avx512.c" -ldl
    mv -f "$hide.$$" "$hide"  # whole, for a run that has it loaded
    export LD_PRELOAD="$hide${LD_PRELOAD:+:$LD_PRELOAD}"
    export LOOM_PEERS_HIDE_AVX512="$hide"
    export GLIBC_TUNABLES="glibc.cpu.hwcaps=-AVX512F,-AVX512VL,-AVX512BW,-AVX512DQ,-AVX512CD"
  fi
done

if [[ "${1:-}" == "--compile_time" ]]; then
  shift
  exec "$py" "$here/compile_time.py" "$@"
fi
exec "$py" "$here/peers.py" "$@"
