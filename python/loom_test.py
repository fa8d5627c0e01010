"""The loom Python package on real models: a graph and an ONNX model
compiled and run on numpy inputs give the reference interpreter's outputs
(--check's tolerance); a bad tensor, file or model raises loom's message; an
artifact loads and runs without the compiler."""

import os
import sys
import tempfile
import threading
import unittest

import numpy as np

import loom

ONNX_SOFTMAX = "/usr/share/libonnx-testdata/data/node/test_softmax_axis_1/model.onnx"
ABS_TOLERANCE, REL_TOLERANCE = 1e-5, 1e-4  # compiler/check.h, kCheck*Tolerance


def assert_close(test, actual, expected):
    test.assertEqual(actual.shape, expected.shape)
    bound = ABS_TOLERANCE + REL_TOLERANCE * np.abs(expected)
    test.assertTrue(np.all(np.abs(actual - expected) <= bound),
                    "max error %g" % np.max(np.abs(actual - expected)))


def compile_doubling(dtype, size):
    """A graph y = x + x of x: dtype[size], compiled."""
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "double.pbtxt")
        with open(path, "w") as graph:
            graph.write('name: "double" input { name: "x" type { dtype: %s shape: [%d] } }\n'
                        'node { name: "add" op: "add" input: "x" input: "x" output: "y" }\n'
                        'output: "y"\n' % (dtype, size))
        return loom.compile(path)


class LoomTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.lstm = loom.compile("examples/lstm_l2_h64.pbtxt")
        cls.x = np.random.default_rng(1).uniform(-1, 1, (2, 16, 32)).astype(np.float32)

    def test_a_graph_gives_the_interpreters_outputs(self):
        self.assertEqual(self.lstm.inputs, [("x", np.dtype(np.float32), (2, 16, 32))])
        self.assertEqual([name for name, _, _ in self.lstm.outputs], ["y", "h_n", "c_n"])
        outputs = self.lstm.run({"x": self.x})
        expected = self.lstm.reference({"x": self.x})
        for name in expected:
            assert_close(self, outputs[name], expected[name])
        y, h_n, c_n = self.lstm(self.x)
        assert_close(self, y, expected["y"])

    def test_an_onnx_model_keeps_its_output_names(self):
        model = loom.compile(ONNX_SOFTMAX)
        self.assertEqual([name for name, _, _ in model.outputs], ["y"])
        x = np.random.default_rng(2).standard_normal((3, 4, 5)).astype(np.float32)
        assert_close(self, model(x), model.reference({"x": x})["y"])

    def test_bad_tensors_raise_naming_them(self):
        cases = [
            ({"x": self.x.astype(np.float64)}, "input 'x' is f64[2, 16, 32], the model's is f32"),
            ({"y": self.x}, "the model has no input 'y' (its inputs: x)"),
            ({"x": self.x[:1]}, "input 'x' is f32[1, 16, 32]"),
            ({}, "the model's input 'x' is not given"),
            ({"x": self.x.astype(np.complex64)},
             "input 'x' is complex64, which loom has no type for"),
        ]
        for feeds, message in cases:
            with self.assertRaises(loom.InvalidArgumentError) as raised:
                self.lstm.run(feeds)
            self.assertIn(message, str(raised.exception))
        with self.assertRaises(ValueError):  # also a ValueError
            self.lstm(self.x, self.x)

    def test_float16_is_stored_and_each_op_rounds(self):
        model = compile_doubling("F16", 5)
        self.assertEqual(model.inputs, [("x", np.dtype(np.float16), (5,))])
        x = np.array([1 + 2**-10, 65504, 2**-24, -np.inf, np.nan], np.float16)
        y = model(x)
        self.assertEqual(y.dtype, np.float16)
        np.testing.assert_array_equal(y, x + x)  # numpy's float16 rounds alike: 65504 to inf

    def test_bfloat16_is_ml_dtypes_or_its_bits(self):
        model = compile_doubling("BF16", 3)
        (_, dtype, _), = model.inputs
        self.assertEqual((dtype.kind, dtype.itemsize), ("V", 2))  # ml_dtypes', or a record
        x = np.array([0x3F80, 0xC040, 0x0000], np.uint16).view(dtype)  # 1, -3, 0
        y = model(x)
        self.assertEqual(y.dtype, dtype)
        np.testing.assert_array_equal(y.view(np.uint16), [0x4000, 0xC0C0, 0x0000])  # 2, -6, 0
        with self.assertRaises(loom.InvalidArgumentError):
            model(np.zeros(3, [("other", np.uint16)]))

    def test_a_raw_call_runs_on_the_callers_memory(self):
        call = self.lstm.raw_call([("x", np.float32, (2, 16, 32))])
        outputs = [np.empty(shape, dtype) for _, dtype, shape in self.lstm.outputs]
        call([self.x.ctypes.data], [o.ctypes.data for o in outputs])
        for (name, _, _), output in zip(self.lstm.outputs, outputs):
            assert_close(self, output, self.lstm.run({"x": self.x})[name])
        wrong = self.lstm.raw_call([("x", np.float32, (1, 16, 32))])
        with self.assertRaises(loom.InvalidArgumentError) as raised:
            wrong([self.x.ctypes.data], [o.ctypes.data for o in outputs])
        self.assertIn("input 'x' is f32[1, 16, 32]", str(raised.exception))

    def test_named_dims_take_the_given_sizes(self):
        path = "tests/bad_inputs/named_dims.onnx"
        model = loom.compile(path, dims={"batch": 2, "seq": 3})
        self.assertEqual(model.inputs, [("x", np.dtype(np.float32), (2, 3, 4)),
                                        ("y", np.dtype(np.float32), (2, 3, 1))])
        x = np.random.default_rng(3).standard_normal((2, 3, 4)).astype(np.float32)
        y = np.random.default_rng(4).standard_normal((2, 3, 1)).astype(np.float32)
        np.testing.assert_array_equal(model(x, y), x + y)
        for dims, message in [({}, "dim 0 is the named dim 'batch'"),
                              ({"batch": 2, "seq": 3, "heads": 1},
                               "the named dim 'heads', which no graph input has"),
                              ({"batch": -1, "seq": 3}, "'batch' is negative")]:
            with self.assertRaises(loom.InvalidArgumentError) as raised:
                loom.compile(path, dims=dims)
            self.assertIn(message, str(raised.exception))

    def test_bounded_dims_take_each_calls_sizes(self):
        path = "tests/bad_inputs/named_dims.onnx"
        model = loom.compile(path, dims={"batch": (1, 4), "seq": (1, 8)})
        self.assertIsInstance(model, loom.DynamicModel)
        rng = np.random.default_rng(5)
        for batch, seq in [(2, 3), (4, 8), (2, 3), (1, 1)]:
            x = rng.standard_normal((batch, seq, 4)).astype(np.float32)
            y = rng.standard_normal((batch, seq, 1)).astype(np.float32)
            np.testing.assert_array_equal(model.run({"x": x, "y": y})["z"], x + y)
        self.assertEqual(model.compiles, 3)  # (2, 3) compiled once
        x, y = np.zeros((2, 9, 4), np.float32), np.zeros((2, 9, 1), np.float32)
        for feeds, message in [
                ({"x": x, "y": y}, "graph input 'x': dim 1, the named dim 'seq', is 9, "
                                   "outside its bounds 1..8"),
                ({"x": x[:, :5], "y": y[:, :6]}, "graph input 'y': dim 1, the named dim "
                                                 "'seq', is 6 but 5 in graph input 'x'"),
                ({"x": x[:, :5]}, "input 'y'")]:
            with self.assertRaises(loom.InvalidArgumentError) as raised:
                model.run(feeds)
            self.assertIn(message, str(raised.exception))
        # A size given with bounds elsewhere is a bound of one size.
        fixed = loom.compile(path, dims={"batch": 2, "seq": (1, 8)})
        with self.assertRaises(loom.InvalidArgumentError) as raised:
            fixed.run({"x": x[:1, :5], "y": y[:1, :5]})
        self.assertIn("the named dim 'batch', is 1, outside its bounds 2..2", str(raised.exception))

    def test_bad_files_raise(self):
        with self.assertRaises(loom.Error) as raised:
            loom.load("/nonexistent/model.loom")
        self.assertIn("/nonexistent/model.loom: cannot be read", str(raised.exception))
        with tempfile.NamedTemporaryFile(suffix=".pbtxt", mode="w") as bad:
            bad.write('name: "g"\nnode { name: "n" op: "no_such_op" }\n')
            bad.flush()
            with self.assertRaises(loom.InvalidArgumentError):
                loom.compile(bad.name)

    def test_an_artifact_runs_without_the_compiler(self):
        artifact = os.environ["LOOM_TEST_ARTIFACT"]
        model = loom.load(artifact)
        expected = self.lstm.reference({"x": self.x})
        assert_close(self, model.run({"x": self.x})["h_n"], expected["h_n"])
        with self.assertRaises(loom.Error) as raised:
            model.reference({"x": self.x})
        self.assertIn("holds no reference graph", str(raised.exception))

    def test_an_artifact_for_every_shape_takes_each_calls_sizes(self):
        model = loom.load(os.environ["LOOM_TEST_EVERY_SHAPE"])
        self.assertIsInstance(model, loom.DynamicModel)
        self.assertEqual(model.inputs, [("x", np.dtype(np.float32), (-1, -1, 4)),
                                        ("y", np.dtype(np.float32), (-1, -1, 1))])
        self.assertEqual(model.dims, {"x": ("batch", "seq", ""), "y": ("batch", "seq", "")})
        lstm = loom.load(os.environ["LOOM_TEST_ARTIFACT"])  # another artifact, loaded alongside
        rng = np.random.default_rng(6)
        for batch, seq in [(2, 3), (4, 8), (1, 5), (3, 7)]:
            x = rng.standard_normal((batch, seq, 4)).astype(np.float32)
            y = rng.standard_normal((batch, seq, 1)).astype(np.float32)
            np.testing.assert_array_equal(model.run({"x": x, "y": y})["z"], x + y)
        assert_close(self, lstm.run({"x": self.x})["h_n"], self.lstm.reference({"x": self.x})["h_n"])
        compiled = loom.compile("tests/bad_inputs/named_dims.onnx",
                                dims={"batch": (1, 4), "seq": 3},
                                out_dir=os.path.join(os.environ["TEST_TMPDIR"], "every_seq3"))
        self.assertEqual(compiled.inputs[0], ("x", np.dtype(np.float32), (-1, 3, 4)))
        x, y = np.ones((3, 3, 4), np.float32), np.ones((3, 3, 1), np.float32)
        np.testing.assert_array_equal(compiled.run({"x": x, "y": y})["z"], x + y)
        x, y = np.zeros((5, 2, 4), np.float32), np.zeros((5, 2, 1), np.float32)
        with self.assertRaises(loom.InvalidArgumentError) as raised:
            model.run({"x": x, "y": y})
        self.assertIn("graph input 'x': dim 0, the named dim 'batch', is 5, outside its bounds 1..4",
                      str(raised.exception))

    def test_threads_share_a_model(self):
        first = self.lstm(self.x)[0]
        mismatches = []

        def calls():
            for _ in range(50):
                if not np.array_equal(self.lstm(self.x)[0], first):
                    mismatches.append(1)

        threads = [threading.Thread(target=calls) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(mismatches, [])


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
