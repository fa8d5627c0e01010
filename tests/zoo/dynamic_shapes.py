"""torch.compile(model, dynamic=True) called at many sequence lengths, one
call each: the total wall time of the calls (compiles and runs), loom's
backend against Inductor's and eager, each backend in a process of its
own with empty caches (loom's and Inductor's); how many graphs dynamo gave
the backend and, for loom, how many models it compiled (a translation for
every size is one model) and for how many shapes it compiled the front
end; the largest error against eager over the calls. The models of the
dynamic-shapes issue: the seed LSTM (nn.LSTM(32, 64, num_layers=2,
batch_first=True), batch 2, lengths 16 to 4096) and GPT-2 (the zoo's,
124M, lengths 8 to 512), at --lengths lengths spaced evenly in their
logarithm. With --wait_for_kernels each of loom's calls waits for its
kernels (loom.torch.FIRST_CALL_WAIT_S) rather than running eagerly the
first time a shape is seen, so that every call runs loom's code. Prints a
markdown table, with the native libraries loom's kernel cache holds at the
end (compiles: a shape whose kernels are another's template compiles none).

    tests/zoo/run.sh dynamic_shapes.py [--models=RE] [--lengths=20] [--wait_for_kernels]
"""

import argparse
import glob
import json
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
BACKENDS = ("eager", "loom", "inductor")
# Each model's lengths run from the first to the second number.
LENGTHS = {"lstm_l2_h64": (16, 4096), "gpt2": (8, 512)}


def lengths(model, count):
    low, high = LENGTHS[model]
    return sorted({round(low * (high / low) ** (i / max(count - 1, 1))) for i in range(count)})


def build(model):
    """The module and a function from a length to its inputs."""
    import torch
    if model == "lstm_l2_h64":
        torch._dynamo.config.allow_rnn = True
        torch.manual_seed(0)
        module = torch.nn.LSTM(32, 64, num_layers=2, batch_first=True).eval()
        return module, lambda n: (torch.randn(2, n, 32),)
    sys.path.insert(0, HERE)
    import models
    module, _ = models.build(model)
    vocab = module.model.config.vocab_size
    generator = torch.Generator().manual_seed(0)
    return module, lambda n: (torch.randint(0, vocab, (1, n), generator=generator),)


def flat(value):
    if isinstance(value, (tuple, list)):
        return [t for v in value for t in flat(v)]
    return [value]


def measure(model, backend, count, wait_for_kernels):
    """One backend's sweep over one model's lengths, as a dict."""
    cache = os.environ["LOOM_CACHE_DIR"] = tempfile.mkdtemp(prefix="loom_cache_")
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp(prefix="inductor_cache_")
    os.environ["TORCHINDUCTOR_FORCE_DISABLE_CACHES"] = "1"
    os.environ.setdefault("LOOM_LIBRARY", os.path.join(ROOT, "bazel-bin/runtime/libloom.so"))
    sys.path[:0] = [os.path.join(ROOT, "python")]
    import torch
    import loom
    import loom.torch
    if wait_for_kernels:
        loom.torch.FIRST_CALL_WAIT_S = 3600.0
    counts = {"graphs": 0, "models": 0, "shapes": 0}
    compile_model, compile_shapes = loom.compile, loom.DynamicModel.compile_shapes

    def counted_compile(*args, **kwargs):
        counts["models"] += 1
        counts["shapes"] += "dims" not in kwargs  # a model for one shape
        return compile_model(*args, **kwargs)

    def counted_compile_shapes(*args, **kwargs):
        counts["shapes"] += 1
        return compile_shapes(*args, **kwargs)

    loom.compile = counted_compile
    loom.DynamicModel.compile_shapes = counted_compile_shapes

    def counted(inner):
        def backend_fn(gm, example_inputs):
            counts["graphs"] += 1
            return inner(gm, example_inputs)
        return backend_fn

    module, inputs_of = build(model)
    if backend == "eager":
        run = module
    else:
        if backend == "loom":
            inner = loom.torch.loom_backend
        else:
            from torch._inductor.compile_fx import compile_fx
            inner = compile_fx
        run = torch.compile(module, backend=counted(inner), dynamic=True)
    row = {"model": model, "backend": backend, "calls": 0, "max_err": 0.0}
    with torch.no_grad():
        start = time.perf_counter()
        for n in lengths(model, count):
            inputs = inputs_of(n)
            out = run(*inputs)
            row["calls"] += 1
            # The check runs after the timed span of this call only.
            pause = time.perf_counter()
            if backend != "eager":
                want = module(*inputs)
                row["max_err"] = max([row["max_err"]] + [
                    (a - b).abs().max().item() for a, b in zip(flat(out), flat(want))
                    if isinstance(a, torch.Tensor)])
            start += time.perf_counter() - pause
        row["total_s"] = time.perf_counter() - start
    row.update(counts)
    row["libraries"] = len(glob.glob(os.path.join(cache, "*.so")))
    return row


def run_child(model, backend, count, wait_for_kernels):
    command = [sys.executable, __file__, "--one=%s,%s" % (model, backend),
               "--lengths=%d" % count] + (["--wait_for_kernels"] if wait_for_kernels else [])
    result = subprocess.run(command, capture_output=True, text=True)
    lines = [l for l in result.stdout.splitlines() if l.startswith("{")]
    if result.returncode or not lines:
        return {"model": model, "backend": backend,
                "failure": (result.stderr.strip().splitlines() or ["?"])[-1]}
    return json.loads(lines[-1])


def table(rows, count):
    out = ["| model | lengths | backend | graphs (loom models, shapes, native libraries) | total s "
           "| max err vs eager |", "|---" * 6 + "|"]
    for r in rows:
        low, high = LENGTHS[r["model"]]
        span = "%d: %d..%d" % (len(lengths(r["model"], count)), low, high)
        if "failure" in r:
            out.append("| %s | %s | %s | failed: %s | | |" % (
                r["model"], span, r["backend"], r["failure"]))
            continue
        graphs = "" if r["backend"] == "eager" else "%d" % r["graphs"]
        if r["backend"] == "loom":
            graphs += " (%d, %d, %d)" % (r["models"], r["shapes"], r["libraries"])
        out.append("| %s | %s | %s | %s | %.2f | %.1e |" % (
            r["model"], span, r["backend"], graphs, r["total_s"], r["max_err"]))
    return "\n".join(out)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default=".", help="a regex of model names")
    parser.add_argument("--lengths", type=int, default=20)
    parser.add_argument("--wait_for_kernels", action="store_true")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        model, backend = args.one.split(",")
        print(json.dumps(measure(model, backend, args.lengths, args.wait_for_kernels)))
        return
    rows = []
    for model in LENGTHS:
        if not re.search(args.models, model):
            continue
        for backend in BACKENDS:
            rows.append(run_child(model, backend, args.lengths, args.wait_for_kernels))
            print(json.dumps(rows[-1]), file=sys.stderr)
    print(table(rows, args.lengths))


if __name__ == "__main__":
    main()
