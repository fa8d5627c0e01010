"""The zoo through torch.compile: loom's backend against Inductor and eager.

    tests/zoo/run.sh torch_compile_zoo.py [--full] [--models=RE] [--set=zoo|family] [--rounds=5] [--iters=5]

Per model (python/loom is imported from this checkout; libloom.so from
$LOOM_LIBRARY, default bazel-bin/runtime/libloom.so), in a process of its
own with empty kernel caches (loom's and Inductor's): the share of FX nodes
loom compiles, dynamo's graph breaks, the largest error against eager
(next to eager's own float32 error against the float64 model, the scale
the error is judged by), the first call of each backend (loom's kernels
may still be compiling then: "ready" is when its second call returns), and
the steady time of a call, median of alternating rounds of eager, loom and
Inductor. Prints a markdown table.
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def measure(name, small, rounds, iters):
    """One model's row, as a dict."""
    os.environ["LOOM_CACHE_DIR"] = tempfile.mkdtemp(prefix="loom_cache_")
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp(prefix="inductor_cache_")
    os.environ.setdefault("LOOM_LIBRARY", os.path.join(ROOT, "bazel-bin/runtime/libloom.so"))
    sys.path[:0] = [HERE, os.path.join(ROOT, "python")]
    import torch
    import models
    import loom.torch

    module, inputs = models.build(name, small=small)
    row = {"model": name}
    with torch.no_grad():
        expected = module(*inputs)
        reference = module.double()(*[x.double() if x.is_floating_point() else x
                                      for x in inputs])
        module.float()
        row["eager_err"] = (expected.double() - reference).abs().max().item()

        graphs = []

        def backend(gm, example_inputs):
            compiled = loom.torch.loom_backend(gm, example_inputs)
            graphs.append((gm, compiled))
            return compiled

        torch._dynamo.reset()
        torch._dynamo.utils.counters.clear()
        loom_fn = torch.compile(module, backend=backend)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            start = time.perf_counter()
            loom_fn(*inputs)
            row["loom_first_s"] = time.perf_counter() - start
            actual = loom_fn(*inputs)
            row["loom_ready_s"] = time.perf_counter() - start
        row["warnings"] = [str(w.message) for w in caught if "loom" in str(w.message)]
        row["breaks"] = sum(torch._dynamo.utils.counters["graph_break"].values())
        row["graphs"] = len(graphs)
        # Not the nodes of pieces that failed and ran eagerly.
        row["in_loom"] = sum(getattr(g, "loom_coverage", (0,))[0] for _, g in graphs) - sum(
            loom.torch._count(piece.gm) for _, g in graphs
            for piece in getattr(g, "loom_pieces", []) if piece.failed)
        row["nodes"] = sum(loom.torch._count(gm) for gm, _ in graphs)
        row["loom_err"] = (actual - expected).abs().max().item()

        inductor_fn = torch.compile(module)
        start = time.perf_counter()
        inductor_out = inductor_fn(*inputs)
        row["inductor_first_s"] = time.perf_counter() - start
        row["inductor_err"] = (inductor_out - expected).abs().max().item()

        times = {"eager": [], "loom": [], "inductor": []}
        for _ in range(rounds):  # alternating, so that a busy spell hits all three
            for key, fn in (("eager", module), ("loom", loom_fn), ("inductor", inductor_fn)):
                fn(*inputs)
                start = time.perf_counter()
                for _ in range(iters):
                    fn(*inputs)
                times[key].append((time.perf_counter() - start) / iters * 1e3)
        for key, values in times.items():
            row[key + "_ms"] = statistics.median(values)
    return row


def run_isolated(name, args):
    command = [sys.executable, os.path.abspath(__file__), "--one=" + name,
               "--rounds=%d" % args.rounds, "--iters=%d" % args.iters] + (
                   ["--full"] if args.full else [])
    result = subprocess.run(command, capture_output=True, text=True)
    lines = [l for l in result.stdout.splitlines() if l.startswith("{")]
    if result.returncode or not lines:
        return {"model": name, "failure": (result.stderr.strip().splitlines() or ["?"])[-1]}
    return json.loads(lines[-1])


def table(rows):
    out = ["| model | nodes in loom | graph breaks | max err loom (eager f32 vs f64) | "
           "first call loom (ready) / Inductor s | steady ms eager / loom / Inductor | "
           "loom / Inductor |", "|---" * 7 + "|"]
    for r in rows:
        if "failure" in r:
            out.append("| %s | failed: %s |" % (r["model"], r["failure"]) + " |" * 5)
            continue
        out.append("| %s | %d/%d (%.1f%%) | %d | %.2e (%.2e) | %.2f (%.2f) / %.2f | "
                   "%.3f / %.3f / %.3f | %.2f |" % (
                       r["model"], r["in_loom"], r["nodes"], 100.0 * r["in_loom"] / r["nodes"],
                       r["breaks"], r["loom_err"], r["eager_err"], r["loom_first_s"],
                       r["loom_ready_s"], r["inductor_first_s"], r["eager_ms"], r["loom_ms"],
                       r["inductor_ms"], r["loom_ms"] / r["inductor_ms"]))
    ratios = [r["loom_ms"] / r["inductor_ms"] for r in rows if "failure" not in r]
    if ratios:
        out.append("\nsteady loom / Inductor: geomean %.2f, worst %.2f" % (
            statistics.geometric_mean(ratios), max(ratios)))
    return "\n".join(out)


def main():
    from models import FAMILY_MODELS, MODELS

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--full", action="store_true", help="standard sizes, not small")
    parser.add_argument("--models", default=".", help="a regex of model names")
    parser.add_argument("--set", choices=("zoo", "family"), default="zoo",
                        help="models.MODELS, or models.FAMILY_MODELS: other models of "
                             "the zoo's families")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--iters", type=int, default=5)
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(measure(args.one, not args.full, args.rounds, args.iters)))
        return
    rows = []
    for name in MODELS if args.set == "zoo" else FAMILY_MODELS:
        if re.search(args.models, name):
            rows.append(run_isolated(name, args))
            row = rows[-1]
            print(name, json.dumps({k: v for k, v in row.items() if k != "warnings"}),
                  file=sys.stderr, flush=True)
            for warning in row.get("warnings", []):
                print("   ", warning[:400], file=sys.stderr, flush=True)
    print(table(rows))


if __name__ == "__main__":
    sys.path.insert(0, HERE)
    main()
