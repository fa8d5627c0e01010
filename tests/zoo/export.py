"""Exports the zoo (models.py) to ONNX with torch.onnx.export, with the eager
output beside each model for a checker:

  tests/zoo/run.sh export.py OUT_DIR [--exporter=dynamo|torchscript] [--small]
                             [--models=REGEX] [--set=zoo|family]

--exporter=dynamo (the default exporter of torch 2.15) calls
torch.onnx.export(model, args, path) as torch's documentation shows: no
opset (the exporter chooses), weights as it decides (external data,
model.onnx.data, by default). --opset=N (dynamo, not the default) passes opset_version=N, to see what a
newer opset brings, into OUT_DIR/dynamo-opsetN[-small]. --exporter=torchscript calls
torch.onnx.export(model, args, path, dynamo=False, opset_version=17).

Writes, per model, OUT_DIR/<exporter>[-small]/<name>/:
  model.onnx [model.onnx.data]
  input_<i>.npy           the example inputs, in their own dtypes
  inputs/<onnx name>.bin  the same as raw little-endian data, named by the
                          ONNX graph's inputs (loom run --inputs=DIR)
  expected.npy            eager's output, float64
  meta.json               exporter, opset, inputs, output, sizes, times
and OUT_DIR/<exporter>[-small]/summary.json and failures.txt (one line per
model that did not export, with the exception). Exits 0 even when some
models fail; 1 when none exported.
"""

import argparse
import json
import os
import re
import sys
import time
import traceback

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402
import onnx  # noqa: E402
import torch  # noqa: E402

import models  # noqa: E402


def export_one(name, small, exporter, out, opset=None):
    os.makedirs(out, exist_ok=True)
    for f in os.listdir(out):  # a previous export's files
        p = os.path.join(out, f)
        if os.path.isfile(p):
            os.remove(p)
    t0 = time.time()
    model, args = models.build(name, small)
    with torch.no_grad():
        expected = model(*args)
    build_s = time.time() - t0

    path = os.path.join(out, "model.onnx")
    t0 = time.time()
    if exporter == "dynamo" and opset:
        torch.onnx.export(model, args, path, opset_version=opset)
    elif exporter == "dynamo":
        torch.onnx.export(model, args, path)
    else:
        torch.onnx.export(model, args, path, dynamo=False, opset_version=17)
    export_s = time.time() - t0

    for i, a in enumerate(args):
        np.save(os.path.join(out, f"input_{i}.npy"), a.numpy())
    np.save(os.path.join(out, "expected.npy"),
            expected.detach().numpy().astype(np.float64))

    proto = onnx.load(path, load_external_data=False)
    inits = {i.name for i in proto.graph.initializer}
    graph_inputs = [i.name for i in proto.graph.input if i.name not in inits]
    opset = {o.domain or "ai.onnx": o.version for o in proto.opset_import}
    external = sorted(f for f in os.listdir(out) if f not in (
        "model.onnx", "meta.json", "expected.npy", "inputs")
        and not f.startswith("input_"))
    # Inputs by position: both exporters keep forward's tensor arguments in
    # order (an input the exporter dropped shows as a count mismatch).
    inputs_dir = os.path.join(out, "inputs")
    os.makedirs(inputs_dir, exist_ok=True)
    for gname, a in zip(graph_inputs, args):
        a.numpy().astype(a.numpy().dtype.newbyteorder("<")).tofile(
            os.path.join(inputs_dir, gname + ".bin"))
    meta = {
        "name": name,
        "small": small,
        "exporter": exporter,
        "call": (f"torch.onnx.export(model, args, path, opset_version={opset})" if opset
                 else "torch.onnx.export(model, args, path)" if exporter == "dynamo"
                 else "torch.onnx.export(model, args, path, dynamo=False, opset_version=17)"),
        "opset_import": opset,
        "ir_version": proto.ir_version,
        "graph_inputs": graph_inputs,
        "graph_outputs": [o.name for o in proto.graph.output],
        "inputs": [{"shape": list(a.shape), "dtype": str(a.numpy().dtype)}
                   for a in args],
        "inputs_match": len(graph_inputs) == len(args),
        "output_shape": list(expected.shape),
        "external_data_files": external,
        "weights": "external" if external else "inline",
        "onnx_bytes": os.path.getsize(path),
        "data_bytes": sum(os.path.getsize(os.path.join(out, f)) for f in external),
        "params": sum(p.numel() for p in model.parameters()),
        "nodes": len(proto.graph.node),
        "build_s": round(build_s, 2),
        "export_s": round(export_s, 2),
        "versions": {"torch": torch.__version__, "onnx": onnx.__version__},
    }
    with open(os.path.join(out, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
    return meta


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out_dir")
    ap.add_argument("--exporter", choices=("dynamo", "torchscript"), default="dynamo")
    ap.add_argument("--small", action="store_true")
    ap.add_argument("--models", default=".", help="regex over model names (search)")
    ap.add_argument("--set", choices=("zoo", "family"), default="zoo",
                    help="models.MODELS, or models.FAMILY_MODELS: other models of "
                         "the zoo's families")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--opset", type=int, default=None,
                    help="dynamo only, not the default: ask for this opset "
                         "(folder dynamo-opsetN); to see what newer opsets bring")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)

    if a.opset and a.exporter != "dynamo":
        ap.error("--opset is for --exporter=dynamo")
    sub = a.exporter + (f"-opset{a.opset}" if a.opset else "") + ("-small" if a.small else "")
    root = os.path.join(a.out_dir, sub)
    os.makedirs(root, exist_ok=True)
    chosen = models.MODELS if a.set == "zoo" else models.FAMILY_MODELS
    names = [n for n in chosen if re.search(a.models, n)]
    summary_path = os.path.join(root, "summary.json")
    summary = {}
    if os.path.exists(summary_path):  # a run over a subset updates its models
        with open(summary_path) as f:
            summary = json.load(f)
    ok = 0
    for name in names:
        print(f"=== {sub} {name}", flush=True)
        try:
            meta = export_one(name, a.small, a.exporter, os.path.join(root, name), a.opset)
            summary[name] = {"ok": True, "opset": meta["opset_import"],
                             "weights": meta["weights"],
                             "export_s": meta["export_s"],
                             "inputs_match": meta["inputs_match"]}
            ok += 1
            print(f"--- ok {name}: opset {meta['opset_import']}, {meta['nodes']} nodes, "
                  f"weights {meta['weights']}, {meta['export_s']} s", flush=True)
        except Exception as e:  # noqa: BLE001  (every failure is recorded)
            msg = f"{type(e).__name__}: {e}".strip()
            lines = msg.splitlines()
            error = lines[0][:300] if lines else ""
            # The dynamo exporter's own cause follows "## Exception summary".
            for i, line in enumerate(lines):
                if line.startswith("## Exception summary"):
                    cause = next((x for x in lines[i + 1:] if x.strip()), "")
                    error += " | " + cause.strip()[:400]
                    break
            summary[name] = {"ok": False, "error": error,
                             "traceback_tail": traceback.format_exc()[-3000:]}
            print(f"--- FAILED {name}: {msg[:2000]}", flush=True)
    with open(summary_path, "w") as f:
        json.dump(summary, f, indent=1)
    with open(os.path.join(root, "failures.txt"), "w") as f:
        for name, s in summary.items():
            if not s["ok"]:
                f.write(f"{name}: {s['error']}\n")
    print(f"{sub}: {ok} of {len(names)} exported", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
