"""Writes lstm_l2_h64.reference.bin: the reference interpreter's outputs (y,
h_n, c_n, f32, in that order) for lstm_test.cc's input. Run from the
repository root after building //runtime:libloom.so:

    LOOM_LIBRARY=bazel-bin/runtime/libloom.so PYTHONPATH=python \\
        python3 examples/aot/make_reference.py
"""
import numpy as np

import loom

model = loom.compile("examples/lstm_l2_h64.pbtxt")
i = np.arange(2 * 16 * 32)
x = (((i * 37) % 101) / 50.0 - 1.0).astype(np.float32).reshape(2, 16, 32)
outputs = model.reference({"x": x})
with open("examples/aot/lstm_l2_h64.reference.bin", "wb") as f:
    for name in ("y", "h_n", "c_n"):
        f.write(outputs[name].astype("<f4").tobytes())
