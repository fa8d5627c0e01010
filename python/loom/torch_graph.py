"""The translation of one of dynamo's FX graphs into loom graph text, for
the torch.compile backend (loom.torch): the graph's inputs and weights, the
loom value of each FX node, shapes and dtypes, and the writing of nodes.
What each torch op becomes is loom.torch_ops' table, which the translator
is given."""

import os
import types

import numpy as np
import torch

import loom
from loom.torch_symbolic import Guards, SymSize, dim_expr, is_size

__all__ = ["GraphTranslator", "Unsupported", "bind_symbols", "is_weight", "loom_dtype",
           "numpy_dtype", "signature", "unknown_op"]


class Unsupported(Exception):
    """Something in the graph loom does not compile."""


def numpy_dtype(dtype):
    """numpy's dtype for a torch dtype: torch names its dtypes as numpy does
    (and as ml_dtypes does those numpy lacks: bfloat16)."""
    return loom._numpy_dtype_named(str(dtype).replace("torch.", ""))


def loom_dtype(dtype):
    """loom's name of numpy's dtype (f32), or None where loom has none."""
    index = loom._dtype_index(dtype)
    return None if index is None else loom._DTYPES[index].name


# The dtypes of torch's tensors a graph takes as inputs, with their names in
# graph text (a weight may have any of loom's but bool, which a weight holds
# as u8 and a cast makes bool).
_INPUT_DTYPES = {getattr(torch, d.torch): d.name.upper() for d in loom._DTYPES if d.torch}
# The dtypes a constant's inline values may have (doubles for the floats,
# int64 for the rest; not u64, whose upper half int64 does not hold).
_CONSTANT_DTYPES = {d.numpy: d.name.upper() for d in loom._DTYPES
                    if d.name in ("f32", "f64", "bool", "i8", "i16", "i32", "i64", "u8", "u16",
                                  "u32")}


class GraphWriter:
    """A loom graph text proto, with the weights' bytes in one file beside it
    (no files without a folder: a dry run, which only checks)."""

    def __init__(self, folder):
        self.folder = folder
        self.lines = []
        self.weights = open(os.path.join(folder, "weights.bin"), "wb") if folder else None
        self.offset = 0
        self.count = 0
        self.computed = set()  # the names nodes write (not inputs or weights)
        # The symbols that name the inputs' dims: what a size computed in
        # the graph may read.
        self.dim_names = set()

    def fresh(self, hint):
        self.count += 1
        return "%s_%d" % (hint, self.count)

    @staticmethod
    def _type(dtype, shape):
        return "type { dtype: %s shape: [%s] }" % (dtype, ", ".join(str(int(d)) for d in shape))

    def input(self, name, tensor, shape=None):
        """An input of `tensor`'s dtype and shape (or `shape`): a dim that is
        one of the graph's symbols (a SymSize of a symbol alone) is named by
        it, the others are their values."""
        if tensor.dtype not in _INPUT_DTYPES:
            raise Unsupported("input of dtype %s" % tensor.dtype)
        shape = list(tensor.shape if shape is None else shape)
        names = [d.expr.name if isinstance(d, SymSize) and d.expr.is_Symbol else "" for d in shape]
        text = 'input { name: "%s" %s' % (name, self._type(
            _INPUT_DTYPES[tensor.dtype], [-1 if n else d for n, d in zip(names, shape)]))
        if any(names):
            text += " dim_names: [%s]" % ", ".join('"%s"' % n for n in names)
            self.dim_names.update(n for n in names if n)
        self.lines.append(text + " }")

    def weight(self, hint, array, params=None, key=None):
        """A new weight holding `array`; its name. With a ParamFile, the
        data is `params`' under `key`, written there the first time. A
        single value of the translation's own (no ParamFile: a Python
        scalar, an epsilon) is a constant instead, as ONNX's importer makes
        one: a literal the compiler folds into the code that reads it (x **
        3.0 becomes products, not a call of powf for each element)."""
        array = np.ascontiguousarray(array)
        if params is None and array.size == 1 and array.dtype in _CONSTANT_DTYPES:
            return self._constant(hint, array)
        if array.dtype == np.bool_:
            return self.node("cast", [self.weight(hint, array.astype(np.uint8))], to="bool")
        dtype = loom_dtype(array.dtype)
        if dtype is None:
            raise Unsupported("a weight of dtype %s" % array.dtype)
        name = self.fresh(hint)
        if params is not None and self.folder:
            file, offset = os.path.relpath(params.path, self.folder), params.offset(key, array)
        else:
            file, offset = "weights.bin", self.offset
            if self.weights:
                self.weights.write(_little_endian(array))
            self.offset += array.nbytes
        self.lines.append('weight { name: "%s" %s external { file: "%s" offset: %d } }' % (
            name, self._type(dtype.upper(), array.shape), file, offset))
        return name

    def _constant(self, hint, array):
        name = self.fresh(hint)
        value = array.reshape(()).item()
        values = ("floats: [%r]" % float(value) if array.dtype.kind == "f"
                  else "ints: [%d]" % int(value))
        self.lines.append('constant { name: "%s" %s values { %s } }' % (
            name, self._type(_CONSTANT_DTYPES[array.dtype], array.shape), values))
        return name

    def node(self, op, inputs, outputs=1, **attrs):
        """A new node of loom's `op`: the name of its output, or a list of
        `outputs` names."""
        names = [self.fresh(op) for _ in range(outputs)]
        text = ['node { name: "%s" op: "%s"' % (self.fresh(op + "_node"), op)]
        text += ['input: "%s"' % i for i in inputs]
        text += ['output: "%s"' % o for o in names]
        text += [self._attribute(key, value) for key, value in attrs.items()]
        self.lines.append(" ".join(text) + " }")
        self.computed.update(names)
        return names[0] if outputs == 1 else names

    def _attribute(self, key, value):
        if isinstance(value, bool):
            value = int(value)
        if isinstance(value, SymSize):
            text = dim_expr(value, self.dim_names)
            if text is not None:
                return 'attr { name: "%s" i_expr: "%s" }' % (key, text)
        if is_size(value):
            return 'attr { name: "%s" i: %d }' % (key, value)
        if isinstance(value, float):
            return 'attr { name: "%s" f: %r }' % (key, value)
        if isinstance(value, str):
            return 'attr { name: "%s" s: "%s" }' % (key, value)
        if all(is_size(v) for v in value):
            texts = [dim_expr(v, self.dim_names) if isinstance(v, SymSize) else None
                     for v in value]
            if any(texts):
                return 'attr { name: "%s" ints_expr { v: [%s] } }' % (key, ", ".join(
                    '"%s"' % (text or int(v)) for text, v in zip(texts, value)))
            return 'attr { name: "%s" ints { v: [%s] } }' % (key, ", ".join(
                str(int(v)) for v in value))
        return 'attr { name: "%s" floats { v: [%s] } }' % (
            key, ", ".join(repr(float(v)) for v in value))

    def close(self):
        if self.weights:
            self.weights.close()

    def finish(self, outputs):
        """Writes the graph with these outputs; its path."""
        self.close()
        self.lines += ['output: "%s"' % o for o in outputs]
        path = os.path.join(self.folder, "graph.pbtxt")
        with open(path, "w") as f:
            f.write('name: "torch_compile"\n' + "\n".join(self.lines) + "\n")
        return path


def _little_endian(array):
    """The bytes of `array` (contiguous) in little-endian order, to write:
    the array's own memory where it is so already (no copy: an LSTM's 12 MB
    of weights were copied twice)."""
    ordered = array.astype(array.dtype.newbyteorder("<"), copy=False)
    return np.ascontiguousarray(ordered).reshape(-1).view(np.uint8)


class ParamFile:
    """The parameters of one FX graph, in one file that the loom graphs
    translated from it (a model per set of shapes) all read: each written
    once, at its first use."""

    def __init__(self, path):
        self.path = path
        self.offsets = {}
        self.size = 0

    def offset(self, key, array):
        """Where `array`, the parameter `key`, lies in the file."""
        if key not in self.offsets:
            with open(self.path, "ab") as f:
                f.write(_little_endian(array))
            self.offsets[key] = self.size
            self.size += array.nbytes
        return self.offsets[key]


def _concrete(size):
    """A size as a plain int: a symbolic one (a backend's example input) by
    the value it was traced with, read without a guard."""
    return size.node.hint if isinstance(size, torch.SymInt) else size


def scalar_reads(gm):
    """The positions of the placeholders whose .item() the graph reads: with
    dynamic shapes, dynamo passes a module's float attributes (a norm's
    epsilon, an attention's scale) as one-element tensors that the graph
    reads so. A translation takes their values as plain numbers, so they
    belong to the key of what it compiled, as sizes do."""
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    return {position for position, node in enumerate(placeholders)
            if any(user.op == "call_method" and user.target == "item" for user in node.users)}


def is_weight(placeholder, arg):
    """Whether a graph's placeholder is a parameter or buffer of the module
    (a weight, whose shape and values the compile keeps) rather than an input."""
    return isinstance(arg, torch.nn.Parameter) or (
        "_parameters_" in placeholder.name or "_buffers_" in placeholder.name)


class _Opaque:
    """The stand-in for an eager result loom cannot take as an input."""


def _weight_tensor(value):
    """The tensor of a weight not yet written (a placeholder's value until its
    first use), else None."""
    if isinstance(value, tuple) and len(value) == 2 and value[0] == "weight":
        return value[1]
    return None


def signature(names, **defaults):
    """A torch function's parameters, in order, and their defaults, for
    GraphTranslator.bind."""
    return names.split(), defaults


class GraphTranslator:
    """Translates an FX graph, for these arguments, into a loom graph in
    `folder`, each node by the translator `ops` has for its target (a torch
    function for call_function nodes, a method's name for call_method
    ones): translator(self, node) writes the node's loom nodes and returns
    its loom value name, a tuple of them, or a plain Python value."""

    def __init__(self, gm, args, folder, ops, params=None, symbolic=False):
        self.gm = gm
        self.params = params  # a ParamFile for the graph's parameters, or None
        self.args = args
        self.ops = ops
        self.graph = GraphWriter(folder)
        # Each FX node's value: a loom value name; ("weight", tensor) for a
        # weight not written yet; a tuple for a node with several results;
        # or a plain Python value (a symbolic size, a translator's marker).
        self.env = {}
        self.inputs = []  # positions of the args that are the loom graph's inputs
        self.outputs = []  # (loom name, numpy dtype, shape) of the graph's outputs
        self.refused = {}  # probe()'s: the nodes loom does not translate, and why
        # The values of the one-element inputs whose .item() the graph reads
        # (scalar_reads): plain values to the translation, as sizes are.
        self.scalars = {}
        # The symbolic sizes of a graph dynamo traced with dynamic shapes,
        # bound to this translation's sizes (bind_symbols).
        self.symbols = {}
        # symbolic: a translation for every size its guards admit, its sizes
        # SymSizes (loom.torch_symbolic), else for this call's sizes.
        self.guards = Guards() if symbolic else None

    def run(self):
        """Translates the graph; the path of the loom graph."""
        try:
            self._bind_placeholders()
            return self._translate_nodes()
        finally:
            self.graph.close()  # finish() closed it, unless a node was refused

    def probe(self):
        """A dry run over every node: {node: why} for the nodes loom does not
        translate. What follows such a node reads its result as an input, as
        it would from an eager piece of the graph."""
        self._bind_placeholders()
        for node in self.gm.graph.nodes:
            if node.op in ("placeholder", "output"):
                continue
            try:
                self.env[node] = self.translate(node)
            except Exception as e:  # noqa: BLE001 - a refusal, or a translator's bug
                self.refused[node] = str(e) if isinstance(e, Unsupported) else "%s: %s" % (
                    type(e).__name__, e)
                self.env[node] = self._stand_in(node.meta.get("example_value"))
        return self.refused

    def _stand_in(self, example):
        """An input for an eager node's result (its example value)."""
        if isinstance(example, torch.Tensor) and example.dtype in _INPUT_DTYPES:
            name = self.graph.fresh("eager")
            self.graph.input(name, example, [self.size(d) for d in example.shape])
            return name
        if isinstance(example, (tuple, list)):
            return tuple(self._stand_in(e) for e in example)
        return example if isinstance(example, (int, float, bool, type(None))) else _Opaque()

    def _bind_placeholders(self):
        placeholders = [n for n in self.gm.graph.nodes if n.op == "placeholder"]
        scalars = scalar_reads(self.gm)
        self.symbols = bind_symbols(self.gm, self.args)
        for position, (node, arg) in enumerate(zip(placeholders, self.args)):
            example = node.meta.get("example_value")
            if not isinstance(arg, torch.Tensor):
                # A symbolic size: its value for this entry, or all of them.
                self.env[node] = (self.size(example) if isinstance(example, torch.SymInt)
                                  else _concrete(arg))
            elif is_weight(node, arg):
                self.env[node] = ("weight", arg)
            else:
                name = "input_%d" % position
                self.graph.input(name, arg, None if self.guards is None or example is None
                                 else [self.size(d) for d in example.shape])
                self.env[node] = name
                self.inputs.append(position)
                if position in scalars:
                    self.scalars[node] = arg.item()

    def _translate_nodes(self):
        outputs = None
        for node in self.gm.graph.nodes:
            if node.op == "placeholder":
                continue
            if node.op == "output":
                outputs = self._output_names(node.args[0])
                for name, v in zip(outputs, node.args[0]):
                    self.outputs.append((name, self.dtype_of(v), tuple(self.shape_of(v))))
                break
            self.env[node] = self.translate(node)
        return self.graph.finish(outputs)

    def _output_names(self, values):
        """The outputs' names: a copy of an input, a weight or an output
        already listed, each output a value of its own."""
        names = []
        for v in values:
            name = self.value(v)
            if name not in self.graph.computed or name in names:
                name = self.graph.node("reshape", [name], shape=self.shape_of(v))
            names.append(name)
        return names

    def translate(self, node):
        """node's value, by its target's translator."""
        if node.op not in ("call_function", "call_method"):
            raise Unsupported("%s %s" % (node.op, node.target))
        translator = self.ops.get(node.target)
        if translator is None:
            raise unknown_op(node)
        return translator(self, node)

    def value(self, arg):
        """A loom value name for an FX argument (weights written on first use)."""
        v = self.env[arg] if isinstance(arg, torch.fx.Node) else arg
        tensor = _weight_tensor(v)
        if tensor is not None:
            name = self.graph.weight("w", tensor.detach().cpu().numpy(), self.params,
                                     (tensor.data_ptr(), tuple(tensor.shape), tensor.dtype,
                                      tuple(tensor.stride())))
            if isinstance(arg, torch.fx.Node):
                self.env[arg] = name
            return name
        if not isinstance(v, str):
            raise Unsupported("a value of type %s where a tensor goes" % type(v).__name__)
        return v

    def raw(self, arg):
        """A weight's array, or a plain Python value."""
        v = self.env[arg] if isinstance(arg, torch.fx.Node) else arg
        tensor = _weight_tensor(v)
        if tensor is not None:
            return tensor.detach().cpu().numpy()
        if isinstance(v, (list, tuple)):
            return type(v)(self.raw(a) for a in v)
        return v

    def size(self, d):
        """A dim of an example value, for this translation: a symbolic size
        evaluated with the symbols its placeholders bound, never read as
        int(d), which would make dynamo guard it and compile the graph again
        for every new size."""
        if not isinstance(d, torch.SymInt):
            return int(d)
        value = d.node.expr
        if not isinstance(value, int):
            value = value.xreplace(self.symbols)  # a symbol alone gives its int
        if not (isinstance(value, int) or value.is_number):
            raise Unsupported("a size of unbound symbols (%s)" % d.node.expr)
        if self.guards is not None:
            return SymSize.make(value, d.node.expr, self.guards)
        return int(value)

    def shape_of(self, arg):
        meta = arg.meta.get("example_value") if isinstance(arg, torch.fx.Node) else None
        if meta is None:
            raise Unsupported("a value of unknown shape")
        return [self.size(d) for d in meta.shape]

    @staticmethod
    def dtype_of(arg):
        return numpy_dtype(arg.meta["example_value"].dtype)

    def ints(self, values):
        """Sizes or indexes: plain ints, or SymSizes."""
        return [v if isinstance(v, SymSize) else int(v) for v in map(self.raw, values)]

    def bind(self, node, signature):
        """node's arguments by parameter name, defaults filled in; plain
        values (not tensors) resolved."""
        names, defaults = signature
        what = getattr(node.target, "__name__", node.target)
        unknown = [k for k in node.kwargs if k not in names]
        if len(node.args) > len(names) or unknown:
            raise Unsupported("%s with arguments %s" % (what, unknown or node.args[len(names):]))
        values = dict(defaults, **dict(zip(names, node.args)), **node.kwargs)
        missing = [n for n in names if n not in values]
        if missing:
            raise Unsupported("%s without %s" % (what, ", ".join(missing)))
        return types.SimpleNamespace(**{
            k: v if isinstance(v, torch.fx.Node) and not isinstance(self.env[v],
                                                                     (int, float, SymSize))
            else self.raw(v) for k, v in values.items()})


def bind_symbols(gm, args):
    """{symbol: int}: the symbolic sizes of the graph's placeholders (a size,
    or a tensor's dims), bound to these arguments."""
    symbols = {}

    def bind(example, arg):
        if isinstance(example, torch.SymInt) and example.node.expr.is_Symbol:
            symbols[example.node.expr] = _concrete(arg)
        elif isinstance(example, torch.Tensor) and isinstance(arg, torch.Tensor):
            for d, size in zip(example.shape, arg.shape):
                bind(d, size)

    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    for node, arg in zip(placeholders, args):
        bind(node.meta.get("example_value"), arg)
    return symbols


def unknown_op(node):
    """The refusal of a node whose target (or use of it) loom does not translate."""
    if node.op == "call_method":
        return Unsupported("method %s" % node.target)
    return Unsupported("op %s" % getattr(node.target, "__name__", node.target))
