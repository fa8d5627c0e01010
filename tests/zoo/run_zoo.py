"""Runs the exported zoo (export.py's folders) with loom and ONNX Runtime,
compares both with eager's output and times them:

  tests/zoo/run.sh run_zoo.py DIR [DIR...] [--loom=/tmp/zoo-loom/loom]
      [--loom_lib=/tmp/zoo-loom/libloom.so] [--loom_py=/tmp/zoo-loom/python]
      [--models=REGEX] [--rounds=5] [--iters=5] [--threads=2] [--no_time]
      [--json=FILE] [--fma_peak=/tmp/zoo-loom/fma_peak] [--pipeline=cpu]

DIR is an export root (OUT_DIR/dynamo-small, ...) or a model's folder. For
each model, in a process of its own (a crash costs one row):
  - ONNX Runtime (intra-op threads --threads, one inter-op thread, no
    spinning unless --ort_spin: see below) runs model.onnx on the saved
    inputs;
  - `loom run --model=model.onnx --inputs=inputs --check --report=R.json`
    --pipeline=P (--pipeline, a built-in pipeline or a file; cpu by default)
    --iters=N --warmup=1 (the CLI, copied out of bazel-bin so rebuilds do
    not replace it; its median is loom_cli_ms in the JSON): a
    refusal (exit 2) is recorded with its message and the op it names; the
    check is against loom's own float64 evaluation of the imported model;
  - loom's Python binding (python/loom over libloom.so) compiles the model
    again (the kernels come from loom's cache) and runs it, for the output
    itself: its error against eager's output (expected.npy, float64), like
    ONNX Runtime's;
  - then, with OMP_NUM_THREADS=--threads for loom's OpenMP kernels,
    --rounds rounds, alternating loom and ONNX Runtime, of --iters
    timed calls each (after one untimed call each); the median call.
Prints a markdown table: model | exporter | opset | imported or first
refused op | loom max err | ORT max err | loom ms | ORT ms | loom/ORT |
loom run ms (the CLI's own median, alone) | native compile s (the CLI's,
into an empty kernel cache).
Errors are max |y - eager| and, in brackets, that over max |eager|.
The next column is loom's rate on the model's matrix products and
convolutions (2 flops a multiply-add, from ONNX shape inference; other ops
uncounted) in GFLOP/s and as a share of the machine's f32 FMA peak, which
//tests/bench:fma_peak measures with --threads threads before the first
model and after the last (the footer gives both; the shares use the
first, as rows print as they finish). The last names loom's three
costliest kernel functions (the CLI's --profile): share of the launches'
time, the function, its launches per run, its first compute node.
Copy the binaries first (rebuilds replace them):
  ./bazelw build -c opt //tools:loom //runtime:libloom.so //tests/bench:fma_peak
  mkdir -p /tmp/zoo-loom/python && cp -L bazel-bin/tools/loom bazel-bin/runtime/libloom.so \
    bazel-bin/tests/bench/fma_peak /tmp/zoo-loom/ && cp -r python/loom /tmp/zoo-loom/python/
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

import numpy as np


def find_models(roots, pattern):
    dirs = []
    for r in roots:
        if os.path.exists(os.path.join(r, "model.onnx")):
            dirs.append(r)
            continue
        for d in sorted(os.listdir(r)):
            p = os.path.join(r, d)
            if os.path.exists(os.path.join(p, "model.onnx")) and re.search(pattern, d):
                dirs.append(p)
    return dirs


def errors(y, expected):
    y = np.asarray(y, dtype=np.float64)
    if y.shape != expected.shape:
        return {"shape": f"{list(y.shape)} vs eager {list(expected.shape)}"}
    diff = np.abs(y - expected)
    scale = float(np.max(np.abs(expected))) or 1.0
    worst = float(np.nanmax(diff)) if diff.size else 0.0
    if not np.all(np.isfinite(y)):
        worst = float("inf")
    return {"max_abs": worst, "max_rel_scale": worst / scale}


def product_flops(path):
    """2 x the multiply-adds of the model's MatMul, Gemm and Conv nodes, with
    the shapes ONNX's shape inference gives (None if one is unknown)."""
    import onnx

    model = onnx.shape_inference.infer_shapes(onnx.load(path, load_external_data=False))
    shapes = {}
    for v in list(model.graph.input) + list(model.graph.value_info) + list(model.graph.output):
        dims = v.type.tensor_type.shape.dim
        shapes[v.name] = [d.dim_value if d.HasField("dim_value") else None for d in dims]
    for t in model.graph.initializer:
        shapes[t.name] = list(t.dims)
    macs = 0
    for node in model.graph.node:
        if node.op_type not in ("MatMul", "Gemm", "Conv"):
            continue
        a, b = (shapes.get(n) for n in node.input[:2])
        y = shapes.get(node.output[0])
        if not a or not b or not y or None in a + b + y:
            return None
        if node.op_type == "Conv":
            # Each output element sums over (C_in / group) x kernel.
            macs += int(np.prod(y)) * int(np.prod(b[1:]))
        else:
            trans_a = any(x.name == "transA" and x.i for x in node.attribute)
            k = a[-2] if node.op_type == "Gemm" and trans_a else a[-1]
            macs += int(np.prod(y)) * k
    return 2 * macs


def fma_peak_gflops(binary, threads):
    """The machine's f32 FMA peak in GFLOP/s (//tests/bench:fma_peak)."""
    p = subprocess.run([binary, f"--threads={threads}"], capture_output=True, text=True)
    m = re.search(r"fma_peak_gflops=([0-9.]+)", p.stdout)
    if not m:
        raise SystemExit(f"{binary} failed: {(p.stderr or p.stdout).strip()[-300:]}")
    return float(m.group(1))


def refused_op(message):
    m = re.search(r"node '[^']*' \(([A-Za-z0-9_.:]+)\)", message)
    if m:
        return m.group(1)
    m = re.search(r"\bop ([A-Za-z0-9_]+)", message)
    return m.group(1) if m else None


def one(d, a):
    """Everything for the model in folder d; returns a dict."""
    import onnxruntime as ort

    with open(os.path.join(d, "meta.json")) as f:
        meta = json.load(f)
    res = {"model": meta["name"], "exporter": meta["exporter"], "small": meta["small"],
           "opset": meta["opset_import"].get("ai.onnx"), "dir": d}
    expected = np.load(os.path.join(d, "expected.npy"))
    arrays = [np.load(os.path.join(d, f"input_{i}.npy")) for i in range(len(meta["inputs"]))]
    feeds = dict(zip(meta["graph_inputs"], arrays))
    path = os.path.join(d, "model.onnx")

    # ONNX Runtime.
    so = ort.SessionOptions()
    so.intra_op_num_threads = a.threads
    so.inter_op_num_threads = 1
    if not a.ort_spin:
        # Spinning intra-op threads of ONNX Runtime keep both cores busy for
        # a while after each call, which stalls loom's OpenMP team in the
        # next round (calls of 0.8 ms took 320 ms on this 2-core machine).
        so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    try:
        t0 = time.time()
        sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
        res["ort_load_s"] = round(time.time() - t0, 2)
        ort_feeds = {i.name: feeds[i.name] for i in sess.get_inputs()}
        res["ort_err"] = errors(sess.run(None, ort_feeds)[0], expected)
    except Exception as e:  # noqa: BLE001
        sess = None
        res["ort_error"] = f"{type(e).__name__}: {e}".splitlines()[0][:300]

    # loom's CLI: import, compile, run on the inputs, check against float64.
    with tempfile.TemporaryDirectory() as tmp:
        report = os.path.join(tmp, "r.json")
        cmd = [a.loom, "run", f"--model={path}", f"--inputs={os.path.join(d, 'inputs')}",
               "--check", f"--report={report}", "--quiet", f"--iters={a.iters}", "--warmup=1",
               "--profile", f"--pipeline={a.pipeline}"]
        t0 = time.time()
        try:
            # An empty kernel cache: the native compile is a cold one.
            env = dict(os.environ, LOOM_CACHE_DIR=os.path.join(tmp, "cache"))
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=a.timeout, env=env)
            res["loom_rc"] = p.returncode
            out = (p.stderr.strip() or p.stdout.strip())
        except subprocess.TimeoutExpired:
            res["loom_rc"] = "timeout"
            out = f"timed out after {a.timeout} s"
        res["loom_cli_s"] = round(time.time() - t0, 2)
        lines = [x for x in out.splitlines() if x.strip()]
        res["loom_message"] = lines[-1][:600] if lines else ""
        if os.path.exists(report):
            with open(report) as f:
                r = json.load(f)
            res["loom_check"] = r.get("check")
            res["loom_check_abs"] = r.get("max_abs_error")
            res["loom_check_detail"] = r.get("check_detail", "")
            res["loom_frontend_s"] = r.get("frontend_seconds")
            res["loom_native_compile_s"] = r.get("native_compile_seconds")
            res["loom_kernels"] = r.get("kernels")
            res["loom_top"] = r.get("kernel_times", [])[:3]
            if r.get("run_seconds_median"):
                res["loom_cli_ms"] = 1e3 * r["run_seconds_median"]
    if res["loom_rc"] == 2:
        res["loom_refused"] = refused_op(res["loom_message"]) or res["loom_message"][:120]
        return res
    if res["loom_rc"] not in (0, 1):
        return res

    # loom's Python binding: the output itself, then timing.
    try:
        sys.path.insert(0, a.loom_py)
        os.environ["LOOM_LIBRARY"] = a.loom_lib
        import loom

        m = loom.compile(path, pipeline=a.pipeline)
        outs = m.run(feeds)
        res["loom_err"] = errors(next(iter(outs.values())), expected)
    except Exception as e:  # noqa: BLE001
        res["loom_binding_error"] = f"{type(e).__name__}: {e}".splitlines()[0][:300]
        return res
    if a.no_time or sess is None:
        return res
    times = {"loom": [], "ort": []}
    m.run(feeds)
    sess.run(None, ort_feeds)
    for _ in range(a.rounds):
        for _ in range(a.iters):
            t0 = time.perf_counter()
            m.run(feeds)
            times["loom"].append(time.perf_counter() - t0)
        for _ in range(a.iters):
            t0 = time.perf_counter()
            sess.run(None, ort_feeds)
            times["ort"].append(time.perf_counter() - t0)
    res["loom_ms"] = 1e3 * statistics.median(times["loom"])
    res["ort_ms"] = 1e3 * statistics.median(times["ort"])
    res["product_flops"] = product_flops(path)
    return res


def fmt_err(e):
    if not e:
        return "-"
    if "shape" in e:
        return "shape " + e["shape"]
    return f"{e['max_abs']:.2g} ({e['max_rel_scale']:.1g})"


def fmt_rate(r, peak):
    flops, ms = r.get("product_flops"), r.get("loom_ms")
    if not flops or not ms:
        return "-"
    gflops = flops / ms / 1e6
    return f"{gflops:.1f} ({100 * gflops / peak:.0f}%)"


def fmt_top(r):
    """The costliest kernel functions of the CLI's --profile: share of the
    launches' time, symbol, launches per run, first compute node."""
    tops = r.get("loom_top")
    if not tops:
        return "-"
    return "; ".join(f"{100 * t.get('share', 0):.0f}% {t['function']} x{t.get('launches', 1)} "
                     f"{t.get('label', '').split(', ')[0]}" for t in tops)


def row(r, peak):
    if "loom_refused" in r:
        status = f"refused: {r['loom_refused']}"
    elif r.get("loom_rc") == 0:
        status = "imported, check pass"
    elif r.get("loom_rc") == 1:
        status = "imported, check FAIL"
    elif "loom_rc" in r:
        status = f"loom exit {r['loom_rc']}: {r.get('loom_message', '')[:80]}"
    else:
        status = r.get("error", "?")[:80]
    if "loom_binding_error" in r:
        status += f"; binding: {r['loom_binding_error'][:80]}"
    loom_ms = r.get("loom_ms")
    ort_ms = r.get("ort_ms")
    cli_ms = r.get("loom_cli_ms")
    ratio = f"{loom_ms / ort_ms:.2f}" if loom_ms and ort_ms else "-"
    ort_err = fmt_err(r.get("ort_err")) if "ort_error" not in r else "ORT: " + r["ort_error"][:60]
    return (f"| {r['model']} | {r['exporter']}{'-small' if r.get('small') else ''} | {r.get('opset')} "
            f"| {status} | {fmt_err(r.get('loom_err'))} | {ort_err} "
            f"| {f'{loom_ms:.3f}' if loom_ms else '-'} | {f'{ort_ms:.3f}' if ort_ms else '-'} | {ratio} "
            f"| {f'{cli_ms:.3f}' if cli_ms else '-'} | {fmt_s(r.get('loom_native_compile_s'))} "
            f"| {fmt_rate(r, peak)} | {fmt_top(r)} |")


def fmt_s(seconds):
    return "-" if seconds is None else f"{seconds:.2f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dirs", nargs="+")
    ap.add_argument("--loom", default="/tmp/zoo-loom/loom")
    ap.add_argument("--loom_lib", default="/tmp/zoo-loom/libloom.so")
    ap.add_argument("--loom_py", default="/tmp/zoo-loom/python")
    ap.add_argument("--models", default=".")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--timeout", type=int, default=1800, help="seconds for loom run")
    ap.add_argument("--no_time", action="store_true")
    ap.add_argument("--ort_spin", action="store_true",
                    help="leave ONNX Runtime's intra-op spinning on (its default)")
    ap.add_argument("--json", default=None, help="write all results here")
    ap.add_argument("--fma_peak", default="/tmp/zoo-loom/fma_peak",
                    help="//tests/bench:fma_peak, copied out of bazel-bin")
    ap.add_argument("--pipeline", default="cpu",
                    help="loom's pipeline, e.g. cpu_channels_last (loom run --pipeline)")
    ap.add_argument("--one", default=None, help=argparse.SUPPRESS)
    a = ap.parse_args()

    if a.one:
        print(json.dumps(one(a.one, a)))
        return 0

    # loom's kernels thread with OpenMP: the same thread count as ONNX
    # Runtime's intra-op pool.
    os.environ["OMP_NUM_THREADS"] = str(a.threads)
    results = []
    peak_before = fma_peak_gflops(a.fma_peak, a.threads)
    print("| model | exporter | opset | imported or first refused op | loom max err | "
          "ORT max err | loom ms | ORT ms | loom/ORT | loom run ms | native compile s | "
          "loom product GFLOP/s (% of FMA peak) | loom's costliest kernels |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|", flush=True)
    for d in find_models(a.dirs, a.models):
        args = [sys.executable, os.path.abspath(__file__), "--one", d,
                f"--loom={a.loom}", f"--loom_lib={a.loom_lib}", f"--loom_py={a.loom_py}",
                f"--rounds={a.rounds}", f"--iters={a.iters}", f"--threads={a.threads}",
                f"--timeout={a.timeout}", f"--pipeline={a.pipeline}", "x"] + (
                    ["--no_time"] if a.no_time else []) + (
                    ["--ort_spin"] if a.ort_spin else [])
        p = subprocess.run(args, capture_output=True, text=True)
        try:
            r = json.loads(p.stdout.strip().splitlines()[-1])
        except Exception:  # noqa: BLE001
            name = os.path.basename(d.rstrip("/"))
            r = {"model": name, "exporter": os.path.basename(os.path.dirname(d.rstrip("/"))),
                 "error": f"runner exit {p.returncode}: " + (p.stderr.strip().splitlines() or [""])[-1]}
        results.append(r)
        print(row(r, peak_before), flush=True)
    peak_after = fma_peak_gflops(a.fma_peak, a.threads)
    print(f"\nf32 FMA peak on {a.threads} threads (//tests/bench:fma_peak): {peak_before:.1f} "
          f"GFLOP/s before the first model, {peak_after:.1f} after the last; the shares above "
          "use the one before", flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
