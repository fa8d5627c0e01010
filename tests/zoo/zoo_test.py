"""The model zoo's correctness subset, run in CI when the zoo's virtualenv
exists: a CNN, an encoder and a decoder (models.py, at their small sizes),
each exported by torch.onnx.export's default exporter (as its
documentation calls it) and by the TorchScript exporter at opset 17, then
compiled and run by loom through its Python package; each output must be
within RELATIVE_TOLERANCE of eager's, relative to the output's scale.

  LOOM_LIBRARY=libloom.so PYTHONPATH=python tests/zoo/run.sh zoo_test.py OUT_DIR

Prints one line per export and `zoo: P passed, F failed`; exits 1 when one
fails.
"""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import export  # noqa: E402  (after the path)
import loom  # noqa: E402

SUBSET = ("resnet50", "bert_base", "llama_gqa")
EXPORTERS = ("dynamo", "torchscript")
# loom and eager both compute in float32; on these models their outputs
# differ by about 1e-6 of the output's scale. A wrong kernel is off by far
# more (a product missing half its rows was off by 0.5 of it).
RELATIVE_TOLERANCE = 1e-4


def check(name, exporter, out_dir):
    """One export run by loom: (passed, line)."""
    folder = os.path.join(out_dir, exporter, name)
    meta = export.export_one(name, True, exporter, folder)
    if not meta["inputs_match"]:
        return False, f"the export has inputs {meta['graph_inputs']}, the model {meta['inputs']}"
    feeds = {
        input_name: np.load(os.path.join(folder, f"input_{i}.npy"))
        for i, input_name in enumerate(meta["graph_inputs"])
    }
    model = loom.compile(os.path.join(folder, "model.onnx"))
    got = next(iter(model.run(feeds).values())).astype(np.float64)
    expected = np.load(os.path.join(folder, "expected.npy"))
    if got.shape != expected.shape:
        return False, f"shape {got.shape}, eager's {expected.shape}"
    scale = float(np.max(np.abs(expected)))
    error = float(np.max(np.abs(got - expected)))
    opset = meta["opset_import"].get("ai.onnx")
    line = f"opset {opset}: max error {error:.2g} on outputs up to {scale:.3g}"
    return error <= RELATIVE_TOLERANCE * scale, line


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: zoo_test.py OUT_DIR")
    passed = failed = 0
    for exporter in EXPORTERS:
        for name in SUBSET:
            try:
                ok, line = check(name, exporter, sys.argv[1])
            except Exception as e:  # noqa: BLE001  (each export gets its verdict)
                ok, line = False, f"{type(e).__name__}: {str(e).splitlines()[0][:300]}"
            print(f"{'PASS' if ok else 'FAIL'} {name} ({exporter}) {line}", flush=True)
            passed += ok
            failed += not ok
    print(f"zoo: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
