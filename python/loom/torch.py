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
inference), the other tensors its inputs. The nodes the translation refuses
run eagerly, as pieces of their own between the pieces loom compiles
(torch's CapabilityBasedPartitioner), after one warning naming them; a
graph compiled while gradients are required runs eagerly. Whatever fails
inside the backend (the translation, loading libloom.so, the compile, a
run) sends the graph or the piece to eager after one warning naming the
cause: the program never fails because of the backend. A graph with
symbolic sizes (dynamic=True, or dynamo's automatic dynamic shapes) is
translated once for every size, one loom model whose front end compiles
for each new set of input shapes (loom.torch_symbolic); a graph of static
sizes, for each set of shapes its own. loom's kernel cache makes the next
process's compile fast.

This module is dynamo's side of it: the backend and its registration, the
partitioning, the models per set of shapes with their tiered first call,
and the eager fallbacks. loom.torch_graph translates a graph, each node by its
translator in loom.torch_ops' table.
"""

import collections
import copy
import operator
import os
import shutil
import tempfile
import threading
import warnings
import weakref

import torch
from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
from torch.fx.passes.operator_support import OperatorSupportBase
from torch.fx.passes.utils.fuser_utils import fuse_by_partitions

import loom
from loom.torch_graph import (GraphTranslator, ParamFile, Unsupported, bind_symbols, is_weight,
                              numpy_dtype, scalar_reads)
from loom.torch_ops import OPS

__all__ = ["loom_backend"]

# torch's dtypes for the numpy ones of the model's outputs.
_TORCH_OF_NUMPY = {d.numpy: getattr(torch, d.torch) for d in loom._DTYPES if d.torch}

# The first call of a new entry waits this long for its compile, and if it
# is not done, runs the graph eagerly (torch's kernels) while the compile
# goes on (a tiered start, as a JIT's); later calls wait for it. 0: eager
# runs the seed cases in 1 to 7 ms, less than a compile from the kernel
# cache takes (13 to 33 ms), let alone a cold one.
FIRST_CALL_WAIT_S = 0

# The loom models a graph keeps, one per set of shapes, the least recently
# called dropped past this: each holds its weights (GPT-2's 124M parameters:
# 20 of them outgrew a 23 GB machine), and one dropped compiles again when
# its shapes come back, its kernels from the cache.
MAX_ENTRIES = 8

# How many models compile at once in the background, each holding its
# weights while it does (and every compile already runs its C++ compiler
# on all cores); the others wait their turn, and one whose entry is dropped
# before its turn does not compile at all.
MAX_COMPILES = 2
_compile_turns = threading.BoundedSemaphore(MAX_COMPILES)

# How many translations for every size a graph keeps: a set of sizes that
# none admits (a size of 1 where they took more, say) makes another, and
# past this is translated for its sizes alone.
MAX_SYMBOLIC_GRAPHS = 4
# The bound of a symbolic size: any.
_LARGEST_SIZE = 2 ** 63 - 1


class _Entry:
    """One set of shapes: the path of its loom graph, and its model's
    compile (`compile()`, in the background). The graph's folder goes with
    the entry where it `owns_files` (else with the _SymbolicGraph that
    serves every size)."""

    def __init__(self, compile, path, positions, outputs, owns_files):
        self.compile, self.path, self.owns_files = compile, path, owns_files
        self.positions, self.outputs = positions, outputs
        self.model = None
        self.tensor_call = None  # _TensorCall.make's, once the model runs
        self.error = None
        self.calls = 0
        self.eager_calls = 0
        # Whether the entry was dropped, and whether its compile began and
        # ended: the files go with close() unless the compile is going on,
        # then with the compile.
        self.lock = threading.Lock()
        self.closed = self.compile_began = self.compile_over = False
        self.thread = threading.Thread(target=self._compile, daemon=True)
        self.thread.start()

    def close(self):
        """Drops the model, and the files of its graph now or, if it is
        compiling, once that ends: the caller does not wait for a compile
        whose model it drops."""
        with self.lock:
            self.closed = True
            compiling = self.compile_began and not self.compile_over
        self.model = self.tensor_call = None
        if not compiling:
            self._remove_files()

    def _remove_files(self):
        if self.owns_files:
            shutil.rmtree(os.path.dirname(self.path), ignore_errors=True)

    def _compile(self):
        # The files go within the turn: a caller that holds every turn knows
        # that no compile is going on and none has files still to remove.
        with _compile_turns:
            with self.lock:
                if self.closed:  # dropped before its turn: close() removed them
                    return
                self.compile_began = True
            model = None
            try:
                model = self.compile()
            except Exception as e:  # noqa: BLE001 - compiled_model() raises it
                self.error = e  # in the caller's thread
            with self.lock:
                self.compile_over = True
                if not self.closed:
                    self.model = model
                    return
            self._remove_files()

    def compiled_model(self):
        """The compiled model, waiting for it, except on the first call: None
        there if the compile is still going on (the caller runs the graph
        eagerly)."""
        self.calls += 1
        if self.calls == 1:
            self.thread.join(FIRST_CALL_WAIT_S)
            if self.thread.is_alive():
                self.eager_calls += 1
                return None
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
    """The callable torch.compile gets: an entry per set of shapes, of a
    translation for every size (_SymbolicGraph) or for those shapes alone."""

    def __init__(self, gm, example_inputs):
        self.gm = gm
        self.entries = collections.OrderedDict()  # least recently called first
        self.created = 0
        self.folder = tempfile.mkdtemp(prefix="loom_torch_")
        # The graphs' files go with this object, or at exit (the parameters
        # alone are the model's size).
        weakref.finalize(self, shutil.rmtree, self.folder, ignore_errors=True)
        self.params = ParamFile(os.path.join(self.folder, "params.bin"))
        # The arguments that may differ between calls: not the weights, which
        # are the same for every call of this graph (dynamo guards them).
        placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
        self.varying = [i for i, (node, arg) in enumerate(zip(placeholders, example_inputs))
                        if not (isinstance(arg, torch.Tensor) and is_weight(node, arg))]
        self.scalars = scalar_reads(gm)  # inputs whose values a translation takes
        # The translations for every size (_SymbolicGraph), while the graph
        # has symbolic sizes and none has failed (symbolic_failure says why).
        self.symbolic = []
        self.symbolic_sizes = _has_symbolic_sizes(placeholders)
        self.symbolic_failure = None

    def key(self, args):
        return tuple((args[i].shape, args[i].dtype, args[i].item() if i in self.scalars else None)
                     if isinstance(args[i], torch.Tensor) else args[i]  # a size, or sizes
                     for i in self.varying)

    def entry(self, args):
        key = self.key(args)
        if key in self.entries:
            self.entries.move_to_end(key)
        else:
            if len(self.entries) == MAX_ENTRIES:
                self.entries.popitem(last=False)[1].close()
            self.entries[key] = self._symbolic_entry(args) or self._translated_entry(args)
        return self.entries[key]

    def _folder(self):
        self.created += 1
        folder = os.path.join(self.folder, str(self.created))
        os.makedirs(folder)
        return folder

    def _translated_entry(self, args):
        """An entry of a translation for these arguments' sizes alone."""
        folder = self._folder()
        translator = GraphTranslator(self.gm, args, folder, OPS, self.params)
        path = translator.run()
        return _Entry(lambda: loom.compile(path), path, translator.inputs, translator.outputs,
                      owns_files=True)

    def _symbolic_entry(self, args):
        """An entry of the translation for every size whose guards admit
        these arguments, made now if none does; None where the graph has
        no symbolic sizes or such a translation failed."""
        if not self.symbolic_sizes:
            return None
        symbols = bind_symbols(self.gm, args)
        scalars = self.scalar_values(args)
        graph = next((g for g in self.symbolic if g.admits(scalars, symbols)), None)
        if graph is None:
            if len(self.symbolic) == MAX_SYMBOLIC_GRAPHS:
                return None
            folder = self._folder()
            try:
                graph = _SymbolicGraph(self.gm, args, folder, self.params, scalars)
            except Exception as e:  # noqa: BLE001 - the graph is then translated per shape
                shutil.rmtree(folder, ignore_errors=True)
                self.symbolic_sizes, self.symbolic_failure = False, _cause(e)
                return None
            self.symbolic.append(graph)
        return graph.entry(args)

    def scalar_values(self, args):
        return tuple(args[i].item() for i in sorted(self.scalars))

    def __call__(self, *args):
        entry = self.entry(args)
        model = entry.compiled_model()
        if model is None:
            return self.gm(*args)
        inputs = []
        for position in entry.positions:
            tensor = args[position]
            if tensor.requires_grad:
                tensor = tensor.detach()
            if tensor.device.type != "cpu":
                raise Unsupported("a tensor on %s" % tensor.device)
            inputs.append(tensor.contiguous())
        if entry.tensor_call is None:
            entry.tensor_call = _TensorCall.make(model, entry, inputs)
        if entry.tensor_call:
            return entry.tensor_call(inputs)
        feeds = {"input_%d" % p: t.numpy() for p, t in zip(entry.positions, inputs)}
        results = model.run(feeds)
        return tuple(torch.from_numpy(results[name]) for name, _, _ in entry.outputs)


class _SymbolicGraph:
    """A translation of a graph with symbolic sizes for every size that its
    guards admit (loom.torch_symbolic), compiled as one loom model: a graph
    whose inputs' dims are named by dynamo's symbols, each new set of sizes
    compiling the front end and binding the kernels of its class of shapes
    (a native compile where the kernel cache has none)."""

    def __init__(self, gm, args, folder, params, scalars):
        translator = GraphTranslator(gm, args, folder, OPS, params, symbolic=True)
        self.path = translator.run()
        if not translator.graph.dim_names:
            raise Unsupported("no size stays symbolic")
        self.guards, self.scalars = translator.guards, scalars
        self.positions, self.outputs = translator.inputs, translator.outputs
        self.model = loom.compile(self.path, dims={
            name: (0, _LARGEST_SIZE) for name in sorted(translator.graph.dim_names)})

    def admits(self, scalars, symbols):
        return scalars == self.scalars and self.guards.hold(symbols)

    def entry(self, args):
        inputs = [("input_%d" % p, numpy_dtype(args[p].dtype), tuple(args[p].shape))
                  for p in self.positions]
        return _Entry(lambda: self.model.compile_shapes(inputs), self.path, self.positions,
                      self.outputs, owns_files=False)


class _Piece(torch.nn.Module):
    """A piece of the graph that loom compiles (for each set of shapes, at
    its first call); after a failure, the piece runs eagerly, with one
    warning naming the cause."""

    def __init__(self, gm):
        super().__init__()
        self.gm = gm
        self.compiled = None
        self.failed = None

    def forward(self, *args):
        if self.failed is None:
            try:
                if self.compiled is None:
                    self.compiled = _Compiled(self.gm, args)
                return self.compiled(*args)
            except Exception as e:  # noqa: BLE001 - never into the user's program
                self.failed = _cause(e)
                warnings.warn("loom cannot run a piece of %d nodes of this graph (%s); it "
                              "runs eagerly" % (_count(self.gm), self.failed))
        return self.gm(*args)


def _has_symbolic_sizes(placeholders):
    """Whether dynamo traced the graph with symbolic sizes: a size, or a
    tensor's dim, among its placeholders' example values."""
    for node in placeholders:
        example = node.meta.get("example_value")
        sizes = example.shape if isinstance(example, torch.Tensor) else [example]
        if any(isinstance(d, torch.SymInt) for d in sizes):
            return True
    return False


def _cause(e):
    return str(e) if isinstance(e, (Unsupported, loom.Error)) else "%s: %s" % (
        type(e).__name__, e)


def _is_call(node):
    return node.op in ("call_function", "call_method", "call_module")


def _count(gm):
    return sum(_is_call(n) for n in gm.graph.nodes)


def _mutates(node):
    """Whether node writes over its first argument (x.add_(y), x += y,
    F.relu(x, inplace=True))."""
    name = node.target if node.op == "call_method" else getattr(node.target, "__name__", "")
    return bool(node.kwargs.get("inplace")) or (
        name.endswith("_") and not name.endswith("__")) or name in (
        "iadd", "isub", "imul", "itruediv", "ifloordiv", "iand", "ior")


def _index_tensors_by_method(gm):
    """x[i] of a tensor as torch.Tensor.__getitem__: the partitioner puts an
    operator.getitem with the node it reads, as it should for the results
    of a node with several."""
    for node in gm.graph.nodes:
        if node.target is operator.getitem and isinstance(node.args[0], torch.fx.Node) and (
                isinstance(node.args[0].meta.get("example_value"), torch.Tensor)):
            node.target = torch.Tensor.__getitem__


def _loom_nodes(gm, example_inputs):
    """The nodes loom compiles, and {node: why} for those it leaves to eager."""
    refused = GraphTranslator(gm, example_inputs, None, OPS).probe()
    taken = {n for n in gm.graph.nodes if _is_call(n) and n not in refused}
    for node in list(refused):  # what an eager update reaches stays eager, in order
        if _mutates(node) and node.args and isinstance(node.args[0], torch.fx.Node):
            for user in node.args[0].users:
                if user in taken:
                    taken.discard(user)
                    refused[user] = "reads a tensor an eager node updates"
    changed = True
    while changed:  # a piece hands eager code tensors only
        changed = False
        for node in list(taken):
            if isinstance(node.meta.get("example_value"), torch.Tensor) or all(
                    user in taken for user in node.users):
                continue
            taken.discard(node)
            refused[node] = "a result that is not a tensor"
            for user in node.users:  # the partitioner keeps a node's results with it
                if user.target is operator.getitem and user in taken:
                    taken.discard(user)
                    refused[user] = "an item of a result left to eager"
            changed = True
    return taken, refused


class _Supported(OperatorSupportBase):
    def __init__(self, nodes):
        self.nodes = nodes

    def is_node_supported(self, submodules, node):
        return node in self.nodes


def _partitioned(gm, example_inputs):
    """gm with the nodes loom compiles fused into _Piece modules (its
    loom_pieces), the others left to eager; and the warning that names what
    runs eagerly, or None."""
    split = torch.fx.GraphModule(gm, copy.deepcopy(gm.graph))
    _index_tensors_by_method(split)
    taken, refused = _loom_nodes(split, example_inputs)
    partitioner = CapabilityBasedPartitioner(split, _Supported(taken),
                                             allows_single_node_partition=True)
    partitions = [p.nodes for p in partitioner.propose_partitions()]
    split = fuse_by_partitions(split, partitions, prefix="loom_piece_", always_return_tuple=True)
    pieces = []
    for node in list(split.graph.nodes):
        if node.op == "call_module" and node.target.startswith("loom_piece_"):
            if not node.users:  # no-op calls only (_log_api_usage_once)
                split.graph.erase_node(node)
                continue
            piece = _Piece(getattr(split, node.target))
            setattr(split, node.target, piece)
            pieces.append(piece)
    split.recompile()
    split.loom_pieces = pieces  # for tests and the curious
    total = _count(gm)
    split.loom_coverage = (total - len(refused), total)  # nodes in loom, nodes
    if not refused:
        return split, None
    by_op = collections.defaultdict(list)
    for node, why in refused.items():
        by_op["%s %s" % ("method" if node.op == "call_method" else "op", _target_name(node))
              ].append(why)
    eager = "; ".join("%s (%d node%s: %s)" % (op, len(whys), "s" * (len(whys) > 1), whys[0])
                      for op, whys in sorted(by_op.items(), key=lambda kv: -len(kv[1])))
    return split, ("loom compiles %d of this graph's %d nodes in %d piece%s; these run "
                   "eagerly: %s" % (total - len(refused), total, len(pieces),
                                    "s" * (len(pieces) != 1), eager))


def _target_name(node):
    return node.target if isinstance(node.target, str) else getattr(
        node.target, "__name__", str(node.target))


def loom_backend(gm, example_inputs):
    """The torch.compile backend: the graph's pieces that loom compiles, the
    others eager (with one warning naming them). Whatever fails in the
    backend leaves the graph, or the piece, to eager with a warning: it never
    raises into the caller."""
    if torch.is_grad_enabled() and any(
            isinstance(a, torch.Tensor) and a.requires_grad for a in example_inputs):
        warnings.warn("loom compiles inference: gradients are required here (use "
                      "torch.no_grad()), so this graph runs eagerly")
        return gm.forward
    try:
        split, warning = _partitioned(gm, example_inputs)
    except Exception as e:  # noqa: BLE001 - never into the user's program
        warnings.warn("loom cannot compile this graph (%s); it runs eagerly" % _cause(e))
        return gm.forward
    if warning:
        warnings.warn(warning)
    return split


try:
    from torch._dynamo.backends import registry
    # Installed, the backend is also torch's entry point "loom": torch
    # registers it when it loads the entry point (this import), and a
    # second registration would fail.
    if registry._BACKENDS.get("loom") is None:
        registry.register_backend(name="loom")(loom_backend)
except Exception as e:  # noqa: BLE001 - a torch without the registry
    warnings.warn("loom: could not register the torch.compile backend: %s" % e)
