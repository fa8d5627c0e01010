"""torch.compile(model, backend="loom"): dynamo's FX graphs compiled by loom.

    import loom.torch                    # registers the backend "loom"
    compiled = torch.compile(model, backend="loom")
    with torch.no_grad():
        y = compiled(x)

The backend translates the FX graph dynamo hands it (torch-level ops:
torch.lstm, torch.gru, convolutions and transposed ones of 1 to 3 spatial
dims, max, average and adaptive average pools, F.batch_norm (inference),
F.group_norm, F.layer_norm, F.linear, F.embedding, F.pad, F.interpolate
(nearest, linear), softmax, pointwise ops, views) straight into a loom
graph, with torch's defaults and semantics, rather than through
torch.onnx, whose exporter re-traces the model and takes seconds: the
translation takes milliseconds. The module's parameters and buffers become
the graph's weights (their values when the graph is compiled: loom compiles
inference), the other tensors its inputs. A graph with an op the translation
does not know, or compiled while gradients are required, runs eagerly
instead, after one warning naming the reason: the program never fails
because of the backend. Each new set of input shapes (and of the symbolic
sizes dynamo passes, under its dynamic-shape guards) compiles and caches a
new loom model; loom's kernel cache makes the next process's compile fast.

This module is dynamo's side of it: the backend and its registration, the
models per set of shapes with their tiered first call, and the eager
fallbacks. loom.torch_graph translates a graph, each node by its
translator in loom.torch_ops' table.
"""

import os
import tempfile
import threading
import warnings

import torch

import loom
from loom.torch_graph import GraphTranslator, Unsupported, is_weight, numpy_dtype
from loom.torch_ops import OPS

__all__ = ["loom_backend"]

# torch's dtypes for the numpy ones of the model's outputs.
_TORCH_OF_NUMPY = {d.numpy: getattr(torch, d.torch) for d in loom._DTYPES if d.torch}

# The first call of a new entry waits this long for its native compile;
# after that it runs in loom's reference interpreter while the compile goes
# on (a tiered start, as a JIT's), when the graph is small enough for the
# interpreter (multiply-adds of its matrix products and recurrences).
FIRST_CALL_WAIT_S = 0.05
INTERPRETED_MAX_MACS = 2e8


class _Entry:
    """One set of shapes: the graph, its compile (in the background) and
    what the first call runs in the meantime."""

    def __init__(self, path, positions, outputs, macs):
        self.path, self.positions, self.outputs = path, positions, outputs
        self.macs = macs
        self.model = None
        self.tensor_call = None  # _TensorCall.make's, once the model runs
        self.error = None
        self.calls = 0
        self.interpreted_calls = 0
        self.thread = threading.Thread(target=self._compile, daemon=True)
        self.thread.start()

    def _compile(self):
        try:
            self.model = loom.compile(self.path)
        except loom.Error as e:
            self.error = e

    def runner(self):
        """The compiled model, or on the first call (only), the reference."""
        self.calls += 1
        if self.calls == 1 and self.macs <= INTERPRETED_MAX_MACS:
            self.thread.join(FIRST_CALL_WAIT_S)
            if self.thread.is_alive():
                self.interpreted_calls += 1
                return loom.Reference(self.path, self.outputs)
        self.thread.join()
        if self.error is not None:
            raise self.error
        return self.model


class _TensorCall:
    """An entry's compiled model on torch's tensors: it reads the inputs'
    memory and writes outputs that torch allocates, no numpy in between."""

    def __init__(self, model, entry, inputs):
        self.call = model.raw_call([("input_%d" % p, numpy_dtype(t.dtype), tuple(t.shape))
                                    for p, t in zip(entry.positions, inputs)])
        self.outputs = [(shape, _TORCH_OF_NUMPY[dtype]) for _, dtype, shape in model.outputs]
        names = [name for name, _, _ in model.outputs]
        self.order = [names.index(name) for name, _, _ in entry.outputs]

    @classmethod
    def make(cls, model, entry, inputs):
        """The call, or False where torch has no dtype for an output or a
        tensor has no elements (and so maybe no memory to point at)."""
        if any(t.numel() == 0 for t in inputs) or any(
                dtype not in _TORCH_OF_NUMPY for _, dtype, _ in model.outputs):
            return False
        return cls(model, entry, inputs)

    def __call__(self, inputs):
        outputs = [torch.empty(shape, dtype=dtype) for shape, dtype in self.outputs]
        self.call([t.data_ptr() for t in inputs], [o.data_ptr() for o in outputs])
        return tuple(outputs[i] for i in self.order)


class _Compiled:
    """The callable torch.compile gets: a loom model per set of shapes."""

    def __init__(self, gm, example_inputs):
        self.gm = gm
        self.entries = {}
        self.folder = tempfile.mkdtemp(prefix="loom_torch_")
        # The arguments that may differ between calls: not the weights, which
        # are the same for every call of this graph (dynamo guards them).
        placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
        self.varying = [i for i, (node, arg) in enumerate(zip(placeholders, example_inputs))
                        if not (isinstance(arg, torch.Tensor) and is_weight(node, arg))]

    def key(self, args):
        return tuple((args[i].shape, args[i].dtype) if isinstance(args[i], torch.Tensor)
                     else int(args[i]) for i in self.varying)

    def entry(self, args):
        key = self.key(args)
        if key not in self.entries:
            folder = os.path.join(self.folder, str(len(self.entries)))
            os.makedirs(folder)
            translator = GraphTranslator(self.gm, args, folder, OPS)
            path = translator.run()
            self.entries[key] = _Entry(path, translator.inputs, translator.outputs,
                                       translator.macs)
        return self.entries[key]

    def __call__(self, *args):
        entry = self.entry(args)
        runner = entry.runner()
        inputs = []
        for position in entry.positions:
            tensor = args[position]
            if tensor.requires_grad:
                tensor = tensor.detach()
            if tensor.device.type != "cpu":
                raise Unsupported("a tensor on %s" % tensor.device)
            inputs.append(tensor.contiguous())
        if runner is entry.model:
            if entry.tensor_call is None:
                entry.tensor_call = _TensorCall.make(runner, entry, inputs)
            if entry.tensor_call:
                return entry.tensor_call(inputs)
        feeds = {"input_%d" % p: t.numpy() for p, t in zip(entry.positions, inputs)}
        results = runner.run(feeds)
        return tuple(torch.from_numpy(results[name]) for name, _, _ in entry.outputs)


def loom_backend(gm, example_inputs):
    """The torch.compile backend: loom's compiled graph, or eager with a warning."""
    if torch.is_grad_enabled() and any(
            isinstance(a, torch.Tensor) and a.requires_grad for a in example_inputs):
        warnings.warn("loom compiles inference: gradients are required here (use "
                      "torch.no_grad()), so this graph runs eagerly")
        return gm.forward
    compiled = _Compiled(gm, example_inputs)
    try:
        compiled.entry(example_inputs)
    except (Unsupported, loom.Error) as e:
        warnings.warn("loom cannot compile this graph (%s); it runs eagerly" % e)
        return gm.forward

    def run(*args):
        try:
            return compiled(*args)
        except (Unsupported, loom.Error) as e:
            warnings.warn("loom cannot run this graph (%s); it runs eagerly" % e)
            return gm.forward(*args)

    run.loom_compiled = compiled  # its entries, for tests and the curious
    return run


try:
    from torch._dynamo import register_backend
    register_backend(name="loom")(loom_backend)
except Exception as e:  # noqa: BLE001 - a torch without the registry
    warnings.warn("loom: could not register the torch.compile backend: %s" % e)
