"""A model exported with dynamic batch and sequence (named dims), run at
many batch sizes and sequence lengths: loom's DynamicModel (loom.compile
with bounds) against one ONNX Runtime session of the same file (its
threads not spinning, as in run_zoo.py), in one process. The model is a
zoo transformer (token ids and an attention mask) or the seed LSTM,
lstm_l2_h64 (nn.LSTM(32, 64, num_layers=2, batch_first=True), features).
With --artifact, loom's model is one artifact compiled for every shape
within the bounds (loom.compile(..., out_dir=D), `loom compile
--dims=NAME=MIN..MAX --out_dir=D`) before the first call; with
--specialised, each point is also run by a build compiled for that shape
alone (LOOM_SHAPE_TEMPLATES=0: no template of another shape).
For each (batch, length): loom's first call (its compile for that shape and
one run), then the steady times of loom (and the specialised build) and
ONNX Runtime, alternating rounds, medians; and the largest difference
between their first outputs. Prints a markdown table and one JSON line per
point on stderr; the last line counts the models loom compiled (one per
shape) and the native libraries its kernel cache holds (shapes of one size
class share one).

    tests/zoo/run.sh dynamic_onnx.py [--model=bert_base] [--lengths=8,32,128,512]
        [--batches=1,8] [--rounds=3] [--iters=3] [--out=DIR] [--artifact] [--specialised]

LOOM_LIBRARY names libloom.so (default bazel-bin/runtime/libloom.so); the
kernel cache is a fresh folder, so every first call compiles.
"""

import argparse
import glob
import json
import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
SEED_LSTM = "lstm_l2_h64"


def build(name):
    """The module, its example inputs, and a function from (batch, length, a
    numpy Generator) to its inputs' arrays."""
    import numpy as np
    import torch
    if name == SEED_LSTM:
        torch.manual_seed(0)
        module = torch.nn.LSTM(32, 64, num_layers=2, batch_first=True).eval()
        return module, (torch.randn(2, 16, 32),), lambda batch, n, rng: [
            rng.standard_normal((batch, n, 32), dtype=np.float32)]
    import models
    module, args = models.build(name)
    return module, args, lambda batch, n, rng: [
        rng.integers(0, 1000, (batch, n), dtype=np.int64), np.ones((batch, n), np.int64)]


def export(module, args, path):
    """Exports `module` with its inputs' dims 0 and 1 dynamic; returns the
    ONNX file's named dims of the first input, (batch, sequence)."""
    import onnx
    import torch
    batch, seq = torch.export.Dim("batch", max=64), torch.export.Dim("sequence", max=4096)
    shapes = tuple({0: batch, 1: seq} for _ in args)
    torch.onnx.export(module, args, path, dynamic_shapes=shapes)
    dims = onnx.load(path, load_external_data=False).graph.input[0].type.tensor_type.shape.dim
    return [d.dim_param for d in dims[:2]]


def median_ms(run, feeds, iters):
    times = []
    for _ in range(iters):
        start = time.perf_counter()
        run(feeds)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="bert_base")
    parser.add_argument("--lengths", default="8,16,32,64,128,256,512")
    parser.add_argument("--batches", default="1")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--iters", type=int, default=3)
    parser.add_argument("--out", default=None, help="where to export (default: a temp folder)")
    parser.add_argument("--artifact", action="store_true",
                        help="one artifact compiled for every shape within the bounds")
    parser.add_argument("--specialised", action="store_true",
                        help="also run a build compiled for each point alone")
    args = parser.parse_args()
    cache = os.environ["LOOM_CACHE_DIR"] = tempfile.mkdtemp(prefix="loom_cache_")
    os.environ.setdefault("LOOM_LIBRARY", os.path.join(ROOT, "bazel-bin/runtime/libloom.so"))
    sys.path[:0] = [os.path.join(ROOT, "python")]
    import numpy as np
    import onnxruntime
    import loom

    out = args.out or tempfile.mkdtemp(prefix="dynamic_onnx_")
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, "model.onnx")
    module, example, inputs_of = build(args.model)
    batch_dim, seq_dim = export(module, example, path)
    lengths = [int(n) for n in args.lengths.split(",")]
    batches = [int(b) for b in args.batches.split(",")]
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = os.cpu_count()
    options.inter_op_num_threads = 1
    # As run_zoo.py: spinning intra-op threads of ONNX Runtime stall loom's
    # OpenMP team in the next round.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    start = time.perf_counter()
    session = onnxruntime.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    ort_session_s = time.perf_counter() - start
    names = [i.name for i in session.get_inputs()]
    bounds = {batch_dim: (min(batches), max(batches)), seq_dim: (min(lengths), max(lengths))}
    start = time.perf_counter()
    model = loom.compile(path, dims=bounds,
                         out_dir=os.path.join(out, "every_shape") if args.artifact else None)
    loom_compile_s = time.perf_counter() - start
    rng = np.random.default_rng(0)
    rows = []
    for batch in batches:
        for n in lengths:
            feeds = dict(zip(names, inputs_of(batch, n, rng)))
            start = time.perf_counter()
            got = model.run(feeds)
            first_s = time.perf_counter() - start
            want = session.run(None, feeds)[0]
            err = float(np.abs(next(iter(got.values())) - want).max())
            runs = {"loom_ms": model.run, "ort_ms": lambda f: session.run(None, f)}
            if args.specialised:
                os.environ["LOOM_SHAPE_TEMPLATES"] = "0"
                runs["specialised_ms"] = loom.compile(path, dims={batch_dim: batch,
                                                                  seq_dim: n}).run
                del os.environ["LOOM_SHAPE_TEMPLATES"]
            times = {name: [] for name in runs}
            for _ in range(args.rounds):
                for name, run in runs.items():
                    times[name].append(median_ms(run, feeds, args.iters))
            row = {"model": args.model, "batch": batch, "sequence": n, "first_call_s": first_s,
                   "max_abs_diff": err, "compiles": model.compiles}
            row.update({name: statistics.median(t) for name, t in times.items()})
            print(json.dumps(row), file=sys.stderr, flush=True)
            rows.append(row)
    print("%s, dims %s and %s; ONNX Runtime %s session created in %.2f s; loom %s in %.2f s\n" % (
        args.model, batch_dim, seq_dim, onnxruntime.__version__, ort_session_s,
        "compiled for every shape" if args.artifact else "set up", loom_compile_s))
    spec = args.specialised
    print("| batch | sequence | loom first call s | loom ms |%s ORT ms | loom/ORT |%s max diff |" % (
        " specialised ms |" if spec else "", " loom/specialised |" if spec else ""))
    print("|---" * (8 if spec else 6) + "|")
    for r in rows:
        print("| %d | %d | %.2f | %.2f |%s %.2f | %.2f |%s %.1e |" % (
            r["batch"], r["sequence"], r["first_call_s"], r["loom_ms"],
            " %.2f |" % r["specialised_ms"] if spec else "", r["ort_ms"],
            r["loom_ms"] / r["ort_ms"],
            " %.2f |" % (r["loom_ms"] / r["specialised_ms"]) if spec else "", r["max_abs_diff"]))
    for peer in ["ort_ms"] + (["specialised_ms"] if spec else []):
        ratios = [r["loom_ms"] / r[peer] for r in rows]
        worst = max(rows, key=lambda r: r["loom_ms"] / r[peer])
        print("\nloom/%s geomean %.3f, worst %.3f (batch %d, sequence %d)" % (
            peer[:-3], statistics.geometric_mean(ratios), max(ratios), worst["batch"],
            worst["sequence"]))
    print("loom compiled %d models, %d native libraries in the kernel cache" % (
        model.compiles, len(glob.glob(os.path.join(cache, "*.so")))))


if __name__ == "__main__":
    main()
