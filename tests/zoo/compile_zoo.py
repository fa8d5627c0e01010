"""Compile time on the zoo: loom's cold compile of each exported model
against ONNX Runtime's session creation from the same file and Inductor's
first call on the same PyTorch model.

    tests/zoo/run.sh compile_zoo.py DIR [--loom=/tmp/zoo-loom/loom] [--models=RE]
        [--rounds=3] [--inductor_rounds=1] [--threads=2]

DIR is an export root of export.py (OUT_DIR/dynamo, full sizes). Each
measure runs in a fresh process, alternating in rounds:
  - loom: `loom compile --model=model.onnx --report=R` into an empty kernel
    cache (LOOM_CACHE_DIR): from its report the front end (the ONNX import
    included) and the native compile, and the process's wall time;
  - ONNX Runtime: the InferenceSession's creation from model.onnx (default
    options, every graph optimisation; --threads intra-op threads), the
    import of onnxruntime not counted;
  - Inductor: the first call of torch.compile(module) on the module and
    inputs models.py builds for the name (what export.py exported), empty
    caches (TORCHINDUCTOR_FORCE_DISABLE_CACHES=1), the module's building not
    counted.
Medians over the rounds. Prints a markdown table, then the medians and the
worst of loom's front end + native compile.
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

HERE = os.path.dirname(os.path.abspath(__file__))

ORT_CHILD = r"""
import sys, time
import onnxruntime as ort
options = ort.SessionOptions()
options.intra_op_num_threads = int(sys.argv[2])
options.inter_op_num_threads = 1
start = time.perf_counter()
ort.InferenceSession(sys.argv[1], options, providers=["CPUExecutionProvider"])
print(time.perf_counter() - start)
"""

INDUCTOR_CHILD = r"""
import sys, time
sys.path.insert(0, sys.argv[2])
import torch
import models
module, inputs = models.build(sys.argv[1])
compiled = torch.compile(module)
with torch.no_grad():
    start = time.perf_counter()
    compiled(*inputs)
print(time.perf_counter() - start)
"""


def last_number(output):
    return float(output.strip().splitlines()[-1])


def loom_compile(loom, model):
    """(front end s, native s, wall s) of a cold `loom compile`."""
    with tempfile.TemporaryDirectory() as tmp:
        report = os.path.join(tmp, "r.json")
        env = dict(os.environ, LOOM_CACHE_DIR=os.path.join(tmp, "cache"))
        start = time.perf_counter()
        subprocess.run([loom, "compile", f"--model={model}", f"--report={report}", "--quiet"],
                       check=True, env=env, capture_output=True)
        wall = time.perf_counter() - start
        with open(report) as f:
            r = json.load(f)
    return r["frontend_seconds"], r["native_compile_seconds"], wall


def ort_session(model, threads):
    p = subprocess.run([sys.executable, "-c", ORT_CHILD, model, str(threads)], check=True,
                       capture_output=True, text=True)
    return last_number(p.stdout)


def inductor_first_call(name, threads):
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, TORCHINDUCTOR_FORCE_DISABLE_CACHES="1",
                   TORCHINDUCTOR_CACHE_DIR=tmp, OMP_NUM_THREADS=str(threads))
        p = subprocess.run([sys.executable, "-c", INDUCTOR_CHILD, name, HERE], check=True,
                           capture_output=True, text=True, env=env)
    return last_number(p.stdout)


def measure(name, model, args):
    front, native, wall, ort, inductor = [], [], [], [], []
    for round_ in range(args.rounds):
        f, n, w = loom_compile(args.loom, model)
        front.append(f)
        native.append(n)
        wall.append(w)
        ort.append(ort_session(model, args.threads))
        if round_ < args.inductor_rounds:
            inductor.append(inductor_first_call(name, args.threads))
    row = {"model": name, "front": front, "native": native, "wall": wall, "ort": ort,
           "inductor": inductor}
    return {k: statistics.median(v) if isinstance(v, list) and v else v for k, v in row.items()}


def table(rows):
    out = ["| model | loom front end + native s | loom process s | ORT session s | "
           "Inductor first call s |", "|---" * 5 + "|"]
    for r in rows:
        inductor = "%.1f" % r["inductor"] if r["inductor"] else "-"
        out.append("| %s | %.2f + %.2f = %.2f | %.2f | %.2f | %s |" % (
            r["model"], r["front"], r["native"], r["front"] + r["native"], r["wall"], r["ort"],
            inductor))
    totals = [r["front"] + r["native"] for r in rows]
    out.append("\nloom front end + native: median %.2f s, worst %.2f s" % (
        statistics.median(totals), max(totals)))
    return "\n".join(out)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dir", help="an export root of export.py (full sizes)")
    parser.add_argument("--loom", default="/tmp/zoo-loom/loom")
    parser.add_argument("--models", default=".", help="a regex of model names")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--inductor_rounds", type=int, default=1)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    rows = []
    for name in sorted(os.listdir(args.dir)):
        model = os.path.join(args.dir, name, "model.onnx")
        if not os.path.exists(model) or not re.search(args.models, name):
            continue
        rows.append(measure(name, model, args))
        print(name, json.dumps(rows[-1]), file=sys.stderr, flush=True)
    print(table(rows))


if __name__ == "__main__":
    main()
