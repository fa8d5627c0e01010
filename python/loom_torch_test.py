"""torch.compile(backend="loom") on the seed reports' models: outputs as
eager's, GroupNorm in one kernel, a new shape a new entry, and eager (after
a warning) where loom does not compile. Skips without torch."""

import os
import sys
import tempfile
import unittest
import warnings

try:
    import torch
    import torch.nn as nn
except ImportError:
    print("skipped: torch is not installed (tests/bench/peers/setup_venv.sh installs it)")
    sys.exit(0)

import loom.torch  # noqa: F401 - registers the backend

torch._dynamo.config.allow_rnn = True


def compile_with_loom(module, captured):
    def backend(gm, example_inputs):
        fn = loom.torch.loom_backend(gm, example_inputs)
        captured.append(fn)
        return fn
    return torch.compile(module, backend=backend, fullgraph=True)


def flat(values):
    values = values if isinstance(values, tuple) else (values,)
    return [t for v in values for t in (v if isinstance(v, tuple) else (v,))]


class LoomTorchTest(unittest.TestCase):
    def setUp(self):
        torch.manual_seed(0)
        torch._dynamo.reset()

    def check_against_eager(self, module, *inputs, tolerance=1e-5):
        captured = []
        compiled = compile_with_loom(module.eval(), captured)
        with torch.no_grad():
            actual, expected = compiled(*inputs), module(*inputs)
        for a, e in zip(flat(actual), flat(expected)):
            self.assertLessEqual((a - e).abs().max().item(), tolerance)
        self.assertTrue(hasattr(captured[0], "loom_compiled"), "ran eagerly")
        return captured[0].loom_compiled

    def test_the_seed_lstm(self):
        self.check_against_eager(nn.LSTM(32, 64, num_layers=2, batch_first=True),
                                 torch.randn(2, 16, 32))

    def test_a_deep_wide_lstm_and_a_gru(self):
        self.check_against_eager(nn.LSTM(32, 256, num_layers=6, batch_first=True),
                                 torch.randn(2, 16, 32))
        self.check_against_eager(nn.GRU(32, 64, num_layers=2, batch_first=True),
                                 torch.randn(2, 16, 32))

    def test_sequence_first_and_bidirectional(self):
        self.check_against_eager(nn.LSTM(8, 16, num_layers=2, bidirectional=True),
                                 torch.randn(5, 3, 8))

    def test_the_seed_group_norm_is_one_kernel(self):
        module = nn.GroupNorm(2, 16)
        x = torch.randn(2, 16, 32, 32)
        compiled = self.check_against_eager(module, x, tolerance=1e-3)
        entry, = compiled.entries.values()
        entry.thread.join()
        self.assertEqual(entry.model.launches, 1)

    def test_the_first_call_is_interpreted_while_the_kernels_compile(self):
        module = nn.LSTM(32, 64, num_layers=2, batch_first=True).eval()
        x = torch.randn(2, 16, 32)
        captured = []
        compiled = compile_with_loom(module, captured)
        saved = loom.torch.FIRST_CALL_WAIT_S, os.environ.get("LOOM_CACHE_DIR")
        loom.torch.FIRST_CALL_WAIT_S = 0
        os.environ["LOOM_CACHE_DIR"] = tempfile.mkdtemp()  # an empty kernel cache: a real compile
        try:
            with torch.no_grad():
                for call in range(3):  # the reference's, then the kernels'
                    y = compiled(x)
                    for a, e in zip(flat(y), flat(module(x))):
                        self.assertLessEqual((a - e).abs().max().item(), 1e-5, "call %d" % call)
        finally:
            loom.torch.FIRST_CALL_WAIT_S = saved[0]
            if saved[1] is None:
                del os.environ["LOOM_CACHE_DIR"]
            else:
                os.environ["LOOM_CACHE_DIR"] = saved[1]
        entry, = captured[0].loom_compiled.entries.values()
        self.assertEqual(entry.interpreted_calls, 1)
        self.assertIsNotNone(entry.model)

    def test_a_new_shape_is_a_new_entry(self):
        module = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4), nn.Softmax(dim=-1))
        captured = []
        compiled = compile_with_loom(module.eval(), captured)
        with torch.no_grad():
            for batch in (2, 3, 5):
                x = torch.randn(batch, 8)
                self.assertLessEqual((compiled(x) - module(x)).abs().max().item(), 1e-5)

    def test_what_loom_does_not_compile_runs_eagerly_after_a_warning(self):
        module = nn.EmbeddingBag(10, 4)
        x = torch.tensor([[1, 2], [3, 4]])
        compiled = torch.compile(module, backend="loom")
        with torch.no_grad(), warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            y = compiled(x)
        self.assertTrue(torch.equal(y, module(x)))
        self.assertTrue(any("runs eagerly" in str(w.message) for w in caught))

    def test_gradients_run_eagerly_after_a_warning(self):
        module = nn.Linear(4, 2)
        compiled = torch.compile(module, backend="loom")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            y = compiled(torch.randn(3, 4))
        y.sum().backward()
        self.assertIsNotNone(module.weight.grad)
        self.assertTrue(any("gradients are required" in str(w.message) for w in caught))


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
