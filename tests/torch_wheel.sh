# Sourced by the scripts that set up and use a virtualenv with PyPI's torch
# (tests/bench/peers/, tests/zoo/). PyPI's Linux torch wheel is a CUDA build
# whose dependencies come to about 3 GB; it imports on a CPU-only machine
# with only the few NVIDIA libraries it links at import, which these
# functions install and put on the library path.

# install_torch PYTHON REQUIREMENT: torch (e.g. "torch==2.15.0") without its
# dependencies, then the NVIDIA libraries it needs at import: three at the
# versions torch pins (read from its own metadata), and cuFile, which torch
# asks for only through the cuda-toolkit metapackage, at its latest.
install_torch() {
  local py="$1" requirement="$2"
  local pip=("$py" -m pip install --quiet --disable-pip-version-check --no-deps)
  "${pip[@]}" "$requirement"
  local nvidia_reqs
  nvidia_reqs="$("$py" - <<'PYTHON'
import importlib.metadata as md
import re

wanted = ("nvidia-cusparselt-cu13", "nvidia-nvshmem-cu13", "nvidia-nccl-cu13")
for req in md.requires("torch") or []:
    spec = req.split(";")[0].strip()
    name = re.split(r"[<>=!~ \[]", spec, maxsplit=1)[0].lower()
    if name in wanted:
        print(spec.replace(" ", ""))
PYTHON
)"
  # shellcheck disable=SC2086  # one requirement a word
  "${pip[@]}" $nvidia_reqs nvidia-cufile
}

# use_torch_libraries VENV: puts the venv's NVIDIA libraries and the CUDA
# toolkit's lib64 on LD_LIBRARY_PATH.
use_torch_libraries() {
  local venv="$1" libs="" dir
  for dir in "$venv"/lib/python3*/site-packages/nvidia/*/lib; do
    [[ -d "$dir" ]] && libs="$libs${libs:+:}$dir"
  done
  [[ -d /usr/local/cuda/lib64 ]] && libs="$libs${libs:+:}/usr/local/cuda/lib64"
  export LD_LIBRARY_PATH="$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
}
