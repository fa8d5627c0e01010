"""A call from Python (loom.Model.run, and m(x)) on a compiled model, median
of rounds; call_cost.sh prints it beside the C++ figures."""
import sys
import time

import numpy as np

import loom

model = loom.compile(sys.argv[1] if len(sys.argv) > 1 else "examples/lstm_l2_h64.pbtxt")
feeds = {name: np.random.default_rng(1).uniform(-1, 1, shape).astype(dtype)
         for name, dtype, shape in model.inputs}
arrays = list(feeds.values())


def median_us(call, calls=2000):
    seconds = []
    for _ in range(calls):
        start = time.perf_counter()
        call()
        seconds.append(time.perf_counter() - start)
    return sorted(seconds)[len(seconds) // 2] * 1e6


rounds = [(median_us(lambda: model.run(feeds)), median_us(lambda: model(*arrays)))
          for _ in range(5)]
print("  Python model.run(feeds)                  %8.2f us" % sorted(r[0] for r in rounds)[2])
print("  Python model(x)                          %8.2f us" % sorted(r[1] for r in rounds)[2])
