"""torch.compile's first call (the compile) with backend="loom" against
Inductor's, on the seed reports' models, each in a fresh process with empty
caches (TORCHINDUCTOR_FORCE_DISABLE_CACHES=1; an empty $LOOM_CACHE_DIR),
alternated in rounds; medians, and loom's outputs against eager. loom's
first call may run the graph eagerly while the kernels compile
(loom/torch.py): "ready" is when the second call returned, which waits for
them, and its outputs, the kernels', are the ones checked. "dynamo alone" is the first call with a
backend that hands dynamo's graph back unchanged: the tracing and guards
every backend's first call pays.

Every backend is named as a user names it, torch.compile(model,
backend="loom") with no import: loom's and dynamo alone's through torch's
entry points, as `pip install ./python` registers loom's (a package
description in a temporary folder on the child's path). torch.compile
then loads its registry of backends before the first call (its
lookup of a name it has not seen), as it does for "inductor"; a backend
registered by `import loom.torch` instead pays that load, with the full
garbage collection it sets off (0.15-0.2 s), in its first call.
"torch.compile s" is the time of that call.

    tests/bench/peers/run.sh --compile_time [--rounds=3]

Needs torch (the venv of setup_venv.sh) and libloom.so
(./bazelw build -c opt //runtime:libloom.so).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))

CASES = {
    "lstm_l2_h64": "nn.LSTM(32, 64, num_layers=2, batch_first=True)",
    "lstm_l6_h256": "nn.LSTM(32, 256, num_layers=6, batch_first=True)",
    "gru_l2_h64": "nn.GRU(32, 64, num_layers=2, batch_first=True)",
    "group_norm": "nn.GroupNorm(2, 16)",
}
SHAPES = {"group_norm": "(2, 16, 32, 32)"}

CHILD = r"""
import json, os, sys, time
import torch, torch.nn as nn
torch._dynamo.config.allow_rnn = True
backend = sys.argv[1]
torch.manual_seed(0)
model = {model}.eval()
x = torch.randn(*{shape})
start = time.perf_counter()
compiled = torch.compile(model, backend=backend, fullgraph=True)
lookup = time.perf_counter() - start
with torch.no_grad():
    start = time.perf_counter()
    compiled(x)
    first = time.perf_counter() - start
    out = compiled(x)  # with loom, waits for the kernels if the first call did not
    ready = time.perf_counter() - start
    ref = model(x)
out = out if isinstance(out, tuple) else (out,)
ref = ref if isinstance(ref, tuple) else (ref,)
flat = lambda v: [t for e in v for t in (e if isinstance(e, tuple) else (e,))]
error = max((a - b).abs().max().item() for a, b in zip(flat(out), flat(ref)))
print(json.dumps({{"compile_call_s": lookup, "first_call_s": first, "ready_s": ready,
                  "max_abs_error": error}}))
"""


# dynamo alone, the backend that hands dynamo's graph back.
ALONE = "def backend(gm, example_inputs):\n    return gm.forward\n"


def install_backends(folder):
    """A package description that registers loom's backend, as
    `pip install ./python` does (python/pyproject.toml), and dynamo
    alone's, through torch's entry point group; the folder goes on the
    child's path."""
    info = os.path.join(folder, "loom_bench-0.dist-info")
    os.makedirs(info)
    with open(os.path.join(info, "METADATA"), "w") as f:
        f.write("Metadata-Version: 2.1\nName: loom-bench\nVersion: 0\n")
    with open(os.path.join(info, "entry_points.txt"), "w") as f:
        f.write("[torch_dynamo_backends]\nloom = loom.torch:loom_backend\n"
                "dynamo_alone = loom_bench_alone:backend\n")
    with open(os.path.join(folder, "loom_bench_alone.py"), "w") as f:
        f.write(ALONE)


def run_child(case, backend):
    with tempfile.TemporaryDirectory() as cache:
        site = os.path.join(cache, "site")
        install_backends(site)
        env = dict(os.environ, TORCHINDUCTOR_FORCE_DISABLE_CACHES="1", LOOM_CACHE_DIR=cache,
                   TORCHINDUCTOR_CACHE_DIR=cache,
                   PYTHONPATH=os.pathsep.join([site, os.path.join(ROOT, "python")]))
        env.setdefault("LOOM_LIBRARY", os.path.join(ROOT, "bazel-bin", "runtime", "libloom.so"))
        code = CHILD.format(model=CASES[case], shape=SHAPES.get(case, "(2, 16, 32)"))
        result = subprocess.run([sys.executable, "-c", code, backend], env=env,
                                capture_output=True, text=True)
        if result.returncode != 0:
            return None, result.stderr.strip().splitlines()[-1:]
        return json.loads(result.stdout.strip().splitlines()[-1]), None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cases", default="")
    args = parser.parse_args()
    print("| case | torch.compile s: loom / dynamo alone / inductor | loom first call s | "
          "loom kernels ready s | dynamo alone s | inductor first call s | loom / inductor | "
          "loom max abs error vs eager |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for case in CASES:
        if args.cases and args.cases not in case:
            continue
        times = {"loom": [], "dynamo_alone": [], "inductor": []}
        lookups = {b: [] for b in times}
        ready, errors = [], []
        for _ in range(args.rounds):
            for backend in times:
                result, failure = run_child(case, backend)
                if result is None:
                    print("  %s with %s failed: %s" % (case, backend, failure), file=sys.stderr)
                    continue
                times[backend].append(result["first_call_s"])
                lookups[backend].append(result["compile_call_s"])
                if backend == "loom":
                    errors.append(result["max_abs_error"])
                    ready.append(result["ready_s"])
        median = {b: statistics.median(t) if t else float("nan") for b, t in times.items()}
        lookup = {b: statistics.median(t) if t else float("nan") for b, t in lookups.items()}
        print("| %s | %.2f / %.2f / %.2f | %.3f | %.3f | %.3f | %.2f | %.3f | %.2g |" % (
            case, lookup["loom"], lookup["dynamo_alone"], lookup["inductor"], median["loom"],
            statistics.median(ready) if ready else float("nan"), median["dynamo_alone"], median["inductor"], median["loom"] / median["inductor"],
            max(errors) if errors else float("nan")))


if __name__ == "__main__":
    main()
