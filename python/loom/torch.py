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
"""

import operator
import os
import tempfile
import threading
import types
import warnings

import numpy as np
import torch
import torch.nn.functional as F

import loom

__all__ = ["loom_backend"]

_TORCH_DTYPES = {torch.float32: "F32", torch.float64: "F64", torch.int32: "I32",
                 torch.int64: "I64", torch.bool: "BOOL", torch.int8: "I8",
                 torch.int16: "I16", torch.uint8: "U8"}


def _numpy_dtype(dtype):
    return np.dtype(str(dtype).replace("torch.", ""))


_TORCH_OF_NUMPY = {_numpy_dtype(t): t for t in _TORCH_DTYPES}


class Unsupported(Exception):
    """Something in the graph loom does not compile."""


class _Zeros:
    """torch.zeros(...) of the graph: an lstm's or gru's default state."""

    def __init__(self, shape):
        self.shape = tuple(shape)


class _Writer:
    """A loom graph text proto, with the weights' bytes in one file beside it."""

    def __init__(self, folder):
        self.folder = folder
        self.lines = []
        self.weights = open(os.path.join(folder, "weights.bin"), "wb")
        self.offset = 0
        self.count = 0

    def fresh(self, hint):
        self.count += 1
        return "%s_%d" % (hint, self.count)

    @staticmethod
    def _type(dtype, shape):
        return "type { dtype: %s shape: [%s] }" % (dtype, ", ".join(str(int(d)) for d in shape))

    def input(self, name, tensor):
        if tensor.dtype not in _TORCH_DTYPES:
            raise Unsupported("input of dtype %s" % tensor.dtype)
        self.lines.append('input { name: "%s" %s }' % (
            name, self._type(_TORCH_DTYPES[tensor.dtype], tensor.shape)))

    def weight(self, hint, array):
        array = np.ascontiguousarray(array)
        dtype = {np.dtype(np.float32): "F32", np.dtype(np.float64): "F64",
                 np.dtype(np.int32): "I32", np.dtype(np.int64): "I64",
                 np.dtype(np.int8): "I8", np.dtype(np.int16): "I16",
                 np.dtype(np.uint8): "U8", np.dtype(np.uint16): "U16",
                 np.dtype(np.uint32): "U32", np.dtype(np.uint64): "U64"}.get(array.dtype)
        if dtype is None:
            raise Unsupported("a weight of dtype %s" % array.dtype)
        name = self.fresh(hint)
        self.weights.write(array.astype(array.dtype.newbyteorder("<")).tobytes())
        self.lines.append('weight { name: "%s" %s external { file: "weights.bin" offset: %d } }' % (
            name, self._type(dtype, array.shape), self.offset))
        self.offset += array.nbytes
        return name

    def node(self, op, inputs, outputs=1, **attrs):
        names = [self.fresh(op) for _ in range(outputs)]
        text = ['node { name: "%s" op: "%s"' % (self.fresh(op + "_node"), op)]
        text += ['input: "%s"' % i for i in inputs]
        text += ['output: "%s"' % o for o in names]
        for key, value in attrs.items():
            if isinstance(value, bool):
                value = int(value)
            if isinstance(value, int):
                text.append('attr { name: "%s" i: %d }' % (key, value))
            elif isinstance(value, float):
                text.append('attr { name: "%s" f: %r }' % (key, value))
            elif isinstance(value, str):
                text.append('attr { name: "%s" s: "%s" }' % (key, value))
            elif all(isinstance(v, int) for v in value):
                text.append('attr { name: "%s" ints { v: [%s] } }' % (
                    key, ", ".join(str(v) for v in value)))
            else:
                text.append('attr { name: "%s" floats { v: [%s] } }' % (
                    key, ", ".join(repr(float(v)) for v in value)))
        self.lines.append(" ".join(text) + " }")
        return names[0] if outputs == 1 else names

    def finish(self, outputs):
        self.weights.close()
        self.lines += ['output: "%s"' % o for o in outputs]
        path = os.path.join(self.folder, "graph.pbtxt")
        with open(path, "w") as f:
            f.write('name: "torch_compile"\n' + "\n".join(self.lines) + "\n")
        return path


def _gates(weight, order, hidden):
    """PyTorch's gate blocks in loom's (ONNX's) order."""
    return np.concatenate([weight[g * hidden:(g + 1) * hidden] for g in order])


def _signature(names, **defaults):
    """A torch function's parameters, in order, and their defaults."""
    return names.split(), defaults


_CONV = _signature("input weight bias stride padding dilation groups",
                   bias=None, stride=1, padding=0, dilation=1, groups=1)
_CONV_TRANSPOSE = _signature("input weight bias stride padding output_padding groups dilation",
                             bias=None, stride=1, padding=0, output_padding=0, groups=1,
                             dilation=1)
_CONVOLUTION = _signature(
    "input weight bias stride padding dilation transposed output_padding groups")
_MAX_POOL = _signature("input kernel_size stride padding dilation ceil_mode return_indices",
                       stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False)
_AVG_POOL = _signature(
    "input kernel_size stride padding ceil_mode count_include_pad divisor_override",
    stride=None, padding=0, ceil_mode=False, count_include_pad=True, divisor_override=None)
_ADAPTIVE_POOL = _signature("input output_size")
_BATCH_NORM = _signature("input running_mean running_var weight bias training momentum eps",
                         weight=None, bias=None, training=False, momentum=0.1, eps=1e-5)
_EMBEDDING = _signature(
    "input weight padding_idx max_norm norm_type scale_grad_by_freq sparse",
    padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False, sparse=False)
_PAD = _signature("input pad mode value", mode="constant", value=None)
_INTERPOLATE = _signature(
    "input size scale_factor mode align_corners recompute_scale_factor antialias",
    size=None, scale_factor=None, mode="nearest", align_corners=None,
    recompute_scale_factor=None, antialias=False)

# The attention functions nn.MultiheadAttention and nn.TransformerEncoderLayer
# call (their parameters as torch names them).
_MULTI_HEAD_ATTENTION = _signature(
    "query key value embed_dim_to_check num_heads in_proj_weight in_proj_bias bias_k bias_v "
    "add_zero_attn dropout_p out_proj_weight out_proj_bias training key_padding_mask "
    "need_weights attn_mask use_separate_proj_weight q_proj_weight k_proj_weight v_proj_weight "
    "static_k static_v average_attn_weights is_causal",
    training=True, key_padding_mask=None, need_weights=True, attn_mask=None,
    use_separate_proj_weight=False, q_proj_weight=None, k_proj_weight=None, v_proj_weight=None,
    static_k=None, static_v=None, average_attn_weights=True, is_causal=False)
_SDPA = _signature("query key value attn_mask dropout_p is_causal scale enable_gqa",
                   attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False)
_DROPOUT = _signature("input p training inplace", p=0.5, training=True, inplace=False)
_ENCODER_LAYER = _signature(
    "src embed_dim num_heads qkv_weight qkv_bias proj_weight proj_bias use_gelu norm_first eps "
    "norm_weight_1 norm_bias_1 norm_weight_2 norm_bias_2 ffn_weight_1 ffn_bias_1 ffn_weight_2 "
    "ffn_bias_2 mask mask_type", mask=None, mask_type=None)


def _spatial(value, dims, kind=int):
    """An int-or-tuple argument of a sliding-window op: one per spatial dim."""
    values = list(value) if isinstance(value, (list, tuple)) else [value]
    if len(values) == 1:
        values *= dims
    if len(values) != dims:
        raise Unsupported("%s where %d spatial dims take one value each" % (value, dims))
    return [kind(v) for v in values]


def _is_weight(placeholder, arg):
    """Whether a graph's placeholder is a parameter or buffer of the module
    (a weight, whose shape and values the compile keeps) rather than an input."""
    return isinstance(arg, torch.nn.Parameter) or (
        "_parameters_" in placeholder.name or "_buffers_" in placeholder.name)


_VIEW_METHODS = ("view", "reshape", "flatten", "unsqueeze", "squeeze", "expand", "permute",
                 "transpose", "split", "chunk", "contiguous")
_VIEW_FUNCTIONS = (torch.flatten, torch.reshape, torch.unsqueeze, torch.squeeze, torch.split,
                   torch.chunk, operator.getitem)


def _is_view(node):
    """Whether FX `node` may share its operand's memory (a view op)."""
    if node.op == "call_method":
        return node.target in _VIEW_METHODS
    return node.op == "call_function" and node.target in _VIEW_FUNCTIONS


class _Translator:
    def __init__(self, gm, args, folder):
        self.gm = gm
        self.args = args
        self.out = _Writer(folder)
        self.env = {}
        self.inputs = []  # positions of the args that are the loom graph's inputs
        self.outputs = []  # (loom name, numpy dtype, shape) of the graph's outputs
        self.macs = 0  # multiply-adds of its matrix products and recurrences

    def run(self):
        try:
            return self._run()
        finally:
            self.out.weights.close()  # finish() closed it, unless a node was refused

    def _run(self):
        placeholders = [n for n in self.gm.graph.nodes if n.op == "placeholder"]
        for position, (node, arg) in enumerate(zip(placeholders, self.args)):
            if not isinstance(arg, torch.Tensor):
                self.env[node] = arg  # a symbolic size: its value for this entry
            elif _is_weight(node, arg):
                self.env[node] = ("weight", arg)
            else:
                name = "input_%d" % position
                self.out.input(name, arg)
                self.env[node] = name
                self.inputs.append(position)
        outputs = None
        for node in self.gm.graph.nodes:
            if node.op == "placeholder":
                continue
            if node.op == "output":
                outputs = [self.value(v) for v in node.args[0]]
                for name, v in zip(outputs, node.args[0]):
                    self.outputs.append((name, self.dtype_of(v), tuple(self.shape_of(v))))
                break
            self.env[node] = self.translate(node)
        return self.out.finish(outputs)

    def value(self, arg):
        """A loom value name for an FX argument (weights written on first use)."""
        if isinstance(arg, torch.fx.Node):
            v = self.env[arg]
        else:
            v = arg
        if isinstance(v, tuple) and len(v) == 2 and v[0] == "weight":
            name = self.out.weight("w", v[1].detach().cpu().numpy())
            if isinstance(arg, torch.fx.Node):
                self.env[arg] = name
            return name
        if not isinstance(v, str):
            raise Unsupported("a value of type %s where a tensor goes" % type(v).__name__)
        return v

    def raw(self, arg):
        """A weight's array, or a plain Python value."""
        v = self.env[arg] if isinstance(arg, torch.fx.Node) else arg
        if isinstance(v, tuple) and len(v) == 2 and v[0] == "weight":
            return v[1].detach().cpu().numpy()
        if isinstance(v, (list, tuple)):
            return type(v)(self.raw(a) for a in v)
        return v

    def shape_of(self, arg):
        meta = arg.meta.get("example_value") if isinstance(arg, torch.fx.Node) else None
        if meta is None:
            raise Unsupported("a value of unknown shape")
        return [int(d) for d in meta.shape]

    @staticmethod
    def dtype_of(arg):
        return _numpy_dtype(arg.meta["example_value"].dtype)

    def ints(self, values):
        return [int(self.raw(v)) for v in values]

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
            k: v if isinstance(v, torch.fx.Node) and not isinstance(self.env[v], int)
            else self.raw(v) for k, v in values.items()})

    def spatial_input(self, node, x, dims):
        """x's shape, which must be [N, C, spatial...] with `dims` spatial dims."""
        shape = self.shape_of(x)
        if len(shape) != dims + 2:
            raise Unsupported("%s of a %d-D input (loom takes it batched: [N, C, %d spatial dims])"
                              % (getattr(node.target, "__name__", node.target), len(shape), dims))
        return shape

    # --- convolutions and pools (loom's conv, conv_transpose, max_pool and
    # average_pool: ONNX's, with the pads as all begins, then all ends) ---

    def conv(self, node):
        return self.emit_conv(node, self.bind(node, _CONV))

    def conv_transpose(self, node):
        return self.emit_conv_transpose(node, self.bind(node, _CONV_TRANSPOSE))

    def convolution(self, node):
        a = self.bind(node, _CONVOLUTION)
        return (self.emit_conv_transpose if a.transposed else self.emit_conv)(node, a)

    def emit_conv(self, node, a):
        weight = self.shape_of(a.weight)  # [M, C / groups, kernel...]
        dims = len(weight) - 2
        self.spatial_input(node, a.input, dims)
        strides, dilations = _spatial(a.stride, dims), _spatial(a.dilation, dims)
        if a.padding == "valid":
            pads = [0] * (2 * dims)
        elif a.padding == "same":  # the odd position at the end, as torch pads
            total = [d * (k - 1) for d, k in zip(dilations, weight[2:])]
            pads = [t // 2 for t in total] + [t - t // 2 for t in total]
        else:
            pads = _spatial(a.padding, dims) * 2
        self.macs += np.prod(self.shape_of(node), dtype=np.float64) * np.prod(weight[1:])
        return self.out.node("conv", self.conv_inputs(a), strides=strides, dilations=dilations,
                             pads=pads, group=int(a.groups))

    def emit_conv_transpose(self, node, a):
        weight = self.shape_of(a.weight)  # [C, M / groups, kernel...]
        dims = len(weight) - 2
        x = self.spatial_input(node, a.input, dims)
        self.macs += np.prod(x, dtype=np.float64) * np.prod(weight[1:])
        return self.out.node("conv_transpose", self.conv_inputs(a),
                             strides=_spatial(a.stride, dims), dilations=_spatial(a.dilation, dims),
                             pads=_spatial(a.padding, dims) * 2,
                             output_padding=_spatial(a.output_padding, dims), group=int(a.groups))

    def conv_inputs(self, a):
        inputs = [self.value(a.input), self.value(a.weight)]
        return inputs if a.bias is None else inputs + [self.value(a.bias)]

    def window(self, node, a, dims):
        """A pool's attributes; torch's stride defaults to the kernel."""
        self.spatial_input(node, a.input, dims)
        kernel = _spatial(a.kernel_size, dims)
        strides = kernel if a.stride in (None, [], ()) else _spatial(a.stride, dims)
        return dict(kernel_shape=kernel, strides=strides, pads=_spatial(a.padding, dims) * 2,
                    ceil_mode=bool(a.ceil_mode))

    def max_pool(self, node, dims):
        a = self.bind(node, _MAX_POOL)
        attrs = self.window(node, a, dims)
        x = self.value(a.input)
        if not a.return_indices:
            return self.out.node("max_pool", [x], dilations=_spatial(a.dilation, dims), **attrs)
        values, indices = self.out.node("max_pool", [x], outputs=2,
                                        dilations=_spatial(a.dilation, dims), **attrs)
        # loom's indices count over all of x [N, C, spatial...], torch's in one channel's plane.
        plane = np.array(np.prod(self.shape_of(a.input)[2:]), np.int64)
        return values, self.out.node("mod", [indices, self.out.weight("plane", plane)])

    def avg_pool(self, node, dims):
        a = self.bind(node, _AVG_POOL)
        if a.divisor_override is not None:
            raise Unsupported("avg_pool with divisor_override")
        return self.out.node("average_pool", [self.value(a.input)],
                             count_include_pad=bool(a.count_include_pad),
                             **self.window(node, a, dims))

    def adaptive_avg_pool(self, node, dims):
        """Global (output size 1), or windows that tile the input exactly."""
        a = self.bind(node, _ADAPTIVE_POOL)
        sizes = self.spatial_input(node, a.input, dims)[2:]
        out = self.shape_of(node)[2:]
        x = self.value(a.input)
        if all(o == 1 for o in out):
            return self.out.node("reduce_mean", [x], axes=list(range(2, dims + 2)), keepdims=1)
        if any(s % o for s, o in zip(sizes, out)):
            raise Unsupported("adaptive_avg_pool from %s to %s (windows of unequal sizes)"
                              % (sizes, out))
        kernel = [s // o for s, o in zip(sizes, out)]
        return self.out.node("average_pool", [x], kernel_shape=kernel, strides=kernel)

    # --- normalisation, lookup, padding, resizing ---

    def batch_norm(self, node):
        """Inference: loom's fold-batch-norm folds it into a conv before it."""
        a = self.bind(node, _BATCH_NORM)
        if a.training or a.running_mean is None or a.running_var is None:
            raise Unsupported("batch_norm in training mode (loom compiles inference; "
                              "call model.eval())")
        channels, dtype = self.shape_of(a.input)[1], self.dtype_of(a.input)
        scale = (self.out.weight("ones", np.ones(channels, dtype)) if a.weight is None
                 else self.value(a.weight))
        bias = (self.out.weight("zeros", np.zeros(channels, dtype)) if a.bias is None
                else self.value(a.bias))
        return self.out.node("batch_norm", [self.value(a.input), scale, bias,
                                            self.value(a.running_mean),
                                            self.value(a.running_var)], epsilon=float(a.eps))

    def embedding(self, node):
        a = self.bind(node, _EMBEDDING)  # padding_idx and the rest matter only to training
        if a.max_norm is not None:
            raise Unsupported("embedding with max_norm (it renormalises the table's rows in place)")
        return self.out.node("gather", [self.value(a.weight), self.value(a.input)], axis=0)

    def pad(self, node):
        """torch lists (begin, end) pairs from the last dim backwards."""
        a = self.bind(node, _PAD)
        rank = len(self.shape_of(a.input))
        pad = self.ints(a.pad)
        modes = {"constant": "constant", "reflect": "reflect", "replicate": "edge"}
        if a.mode not in modes:
            raise Unsupported("pad mode '%s' (loom pads constant, reflect or replicate)" % a.mode)
        if len(pad) % 2 or len(pad) > 2 * rank or min(pad) < 0:
            raise Unsupported("pad %s of a %d-D input (negative pads crop)" % (pad, rank))
        begins, ends = [0] * rank, [0] * rank
        for i in range(len(pad) // 2):
            begins[rank - 1 - i], ends[rank - 1 - i] = pad[2 * i], pad[2 * i + 1]
        return self.out.node("pad", [self.value(a.input)], pads=begins + ends,
                             mode=modes[a.mode], value=float(a.value or 0))

    def interpolate(self, node):
        a = self.bind(node, _INTERPOLATE)
        if a.antialias:
            raise Unsupported("interpolate with antialias")
        if a.mode == "nearest":
            attrs = self.nearest(a, self.shape_of(a.input), self.shape_of(node))
        elif a.mode in ("linear", "bilinear", "trilinear"):
            attrs = self.linear(a, self.shape_of(a.input), self.shape_of(node))
        else:
            raise Unsupported("interpolate mode '%s' (loom matches torch's nearest, linear, "
                              "bilinear and trilinear)" % a.mode)
        return self.out.node("resize", [self.value(a.input)], **attrs)

    def scale_factors(self, a, rank):
        """torch's scale factors, where it computes with them rather than
        with output size / input size."""
        if a.scale_factor is None or a.recompute_scale_factor:
            return None
        return [float(f) for f in _spatial(a.scale_factor, rank - 2, float)]

    def nearest(self, a, shape, out):
        # torch's source index is floor(x * scale) in float32, with scale
        # 1 / scale_factor or input / output size: floor(x / k), as loom's
        # asymmetric floor, for whole upscaling factors k only.
        factors = [o // i for i, o in zip(shape[2:], out[2:])]
        given = self.scale_factors(a, len(shape))
        if any(o % i for i, o in zip(shape[2:], out[2:])) or given not in (None, factors):
            raise Unsupported("nearest interpolation from %s to %s (loom matches torch only "
                              "for whole upscaling factors)" % (shape[2:], out[2:]))
        return dict(mode="nearest", coordinate_transformation_mode="asymmetric",
                    nearest_mode="floor", sizes=out)

    def linear(self, a, shape, out):
        # torch's source coordinate is (x + 0.5) / scale - 0.5, clamped at 0
        # (loom's half_pixel clamps the taps instead: the same values), or
        # with align_corners x (input - 1) / (output - 1), from the sizes.
        if a.align_corners:
            return dict(mode="linear", coordinate_transformation_mode="align_corners", sizes=out)
        given = self.scale_factors(a, len(shape))
        size = dict(sizes=out) if given is None else dict(scales=[1.0, 1.0] + given)
        return dict(mode="linear", coordinate_transformation_mode="half_pixel", **size)

    def translate(self, node):
        target, args, kwargs = node.target, node.args, node.kwargs
        if node.op == "call_method":
            return self.method(node, target, args, kwargs)
        if node.op != "call_function":
            raise Unsupported("%s %s" % (node.op, target))
        if target in _HANDLERS:
            method, *dims = _HANDLERS[target]
            return getattr(self, method)(node, *dims)
        if target in _ACTIVATIONS:
            op, signature, attrs = _ACTIVATIONS[target]
            a = self.bind(node, signature)
            result = self.out.node(op, [self.value(a.input)], **attrs(a))
            return self.written_in_place(a.input, result) if getattr(a, "inplace", False) else result
        if target is operator.getitem:
            if not isinstance(self.env[args[0]], tuple):
                raise Unsupported("indexing a tensor")
            return self.env[args[0]][args[1]]
        if target in (torch.flatten, torch.reshape):
            return self.out.node("reshape", [self.value(args[0])], shape=self.shape_of(node))
        if target is torch.zeros:
            return _Zeros(self.ints(args[0] if isinstance(args[0], (list, tuple)) else args))
        if target in (torch.split, torch.chunk):
            return self.split(node, *args, **kwargs)
        if target in (torch.unsqueeze, torch.squeeze):
            return self.out.node("reshape", [self.value(args[0])], shape=self.shape_of(node))
        if target is torch.arange:  # positions, a constant for these shapes
            return self.out.weight("arange", np.arange(*self.ints(args), dtype=self.dtype_of(node)))
        if target is torch.zeros_like:  # as torch makes a float mask of a bool one
            return self.out.weight("zeros", np.zeros(self.shape_of(node), self.dtype_of(node)))
        if target is torch.masked_fill:
            return self.masked_fill(node, *args)
        if target in (torch.lstm, torch.gru):
            return self.recurrent(node, target is torch.lstm, *args)
        if target is F.dropout:
            a = self.bind(node, _DROPOUT)
            if a.training and a.p > 0:
                raise Unsupported("dropout in training mode")
            return self.value(a.input)
        if target is F.multi_head_attention_forward:
            return self.multi_head_attention(self.bind(node, _MULTI_HEAD_ATTENTION))
        if target is F.scaled_dot_product_attention:
            return self.scaled_dot_product_attention(self.bind(node, _SDPA))
        if target is torch._transformer_encoder_layer_fwd:
            return self.encoder_layer(self.bind(node, _ENCODER_LAYER))
        if target is F.group_norm:
            x, groups, w, b, eps = (list(args) + [None, None, 1e-5])[:5]
            return self.out.node("group_norm", [self.value(x), self.value(w), self.value(b)],
                                 num_groups=int(groups), epsilon=float(kwargs.get("eps", eps)))
        if target is F.layer_norm:
            x, shape, w, b, eps = (list(args) + [None, None, 1e-5])[:5]
            if w is None or b is None:
                raise Unsupported("layer_norm without affine parameters")
            return self.out.node("layer_norm", [self.value(x), self.value(w), self.value(b)],
                                 axis=-len(shape), epsilon=float(kwargs.get("eps", eps)))
        if target is F.linear:
            x, w = args[0], args[1]
            b = args[2] if len(args) > 2 else kwargs.get("bias")
            self.macs += np.prod(self.shape_of(node), dtype=np.float64) * self.shape_of(x)[-1]
            if b is None:  # x w^T
                w_t = self.out.node("transpose", [self.value(w)], perm=[1, 0])
                return self.out.node("matmul", [self.value(x), w_t])
            return self.out.node("linear", [self.value(x), self.value(w), self.value(b)])
        if target in (torch.softmax, F.softmax, torch.log_softmax, F.log_softmax):
            dim = kwargs.get("dim", args[1] if len(args) > 1 else None)
            if dim is None or kwargs.get("dtype") is not None or (
                    len(args) > 3 and args[3] is not None):
                raise Unsupported("softmax without a dim, or with a dtype")
            op = "log_softmax" if target in (torch.log_softmax, F.log_softmax) else "softmax"
            return self.out.node(op, [self.value(args[0])], axis=int(dim))
        unary = {torch.relu: "relu", F.relu: "relu", torch.tanh: "tanh", torch.sigmoid: "sigmoid",
                 F.gelu: "gelu", torch.exp: "exp", torch.neg: "neg", F.silu: "silu"}
        if target in unary:
            extra = {k: v for k, v in kwargs.items() if k not in ("inplace", "approximate")}
            if extra or len(args) > 1:
                raise Unsupported("%s with arguments %s" % (unary[target], list(extra) or args[1:]))
            if target is F.gelu:
                return self.out.node("gelu", [self.value(args[0])],
                                     approximate=kwargs.get("approximate", "none"))
            result = self.out.node(unary[target], [self.value(args[0])])
            return self.written_in_place(args[0], result) if kwargs.get("inplace") else result
        if target in (torch.cat, torch.concat, getattr(torch, "concatenate", torch.cat)):
            tensors = args[0]
            dim = kwargs.get("dim", args[1] if len(args) > 1 else 0)
            axis = int(self.raw(dim)) % len(self.shape_of(node))
            return self.out.node("concat", [self.value(t) for t in tensors], axis=axis)
        in_place = {operator.iadd: "add", operator.isub: "sub", operator.imul: "mul",
                    operator.itruediv: "div"}
        binary = {operator.add: "add", torch.add: "add", operator.mul: "mul", torch.mul: "mul",
                  operator.sub: "sub", torch.sub: "sub", operator.truediv: "div",
                  torch.div: "div", torch.matmul: "matmul", operator.matmul: "matmul",
                  torch.bmm: "matmul", torch.mm: "matmul", **in_place}
        if target in binary and not kwargs:
            if binary[target] == "matmul":
                self.macs += np.prod(self.shape_of(node), dtype=np.float64) * self.shape_of(args[0])[-1]
            result = self.out.node(binary[target], [self.value(a) for a in args[:2]])
            return self.written_in_place(args[0], result) if target in in_place else result
        raise Unsupported("op %s" % getattr(target, "__name__", target))

    def written_in_place(self, x, result):
        """`result` written over x (`inplace=True`, `+=`, `masked_fill_`):
        later readers of x read it. Over a graph input or a parameter it would
        not reach the caller's tensor, and over a view, or a tensor with a
        view, not the other tensor sharing its memory: such graphs run
        eagerly."""
        if not isinstance(x, torch.fx.Node):
            raise Unsupported("an in-place update of a constant")
        if x.op in ("placeholder", "get_attr"):
            raise Unsupported("an in-place update of an input or a parameter")
        if _is_view(x) or any(_is_view(user) for user in x.users):
            raise Unsupported("an in-place update of a tensor that shares memory with a view")
        self.env[x] = result
        return result

    def method(self, node, name, args, kwargs):
        x = args[0]
        if name in ("view", "reshape", "flatten"):
            return self.out.node("reshape", [self.value(x)], shape=self.shape_of(node))
        if name == "contiguous":
            return self.value(x)
        if name in ("unsqueeze", "squeeze"):
            return self.out.node("reshape", [self.value(x)], shape=self.shape_of(node))
        if name == "expand":
            return self.out.node("expand", [self.value(x)], shape=self.shape_of(node))
        if name in ("split", "chunk"):
            return self.split(node, x, *args[1:], **kwargs)
        if name in ("masked_fill", "masked_fill_"):
            filled = self.masked_fill(node, *args)
            return self.written_in_place(x, filled) if name == "masked_fill_" else filled
        if name == "permute":
            dims = args[1] if isinstance(args[1], (list, tuple)) else args[1:]
            return self.out.node("transpose", [self.value(x)], perm=self.ints(dims))
        if name == "transpose":
            rank = len(self.shape_of(x))
            a, b = (int(self.raw(d)) % rank for d in args[1:3])
            perm = list(range(rank))
            perm[a], perm[b] = perm[b], perm[a]
            return self.out.node("transpose", [self.value(x)], perm=perm)
        raise Unsupported("method %s" % name)

    # --- attention (nn.MultiheadAttention and nn.TransformerEncoderLayer,
    # which torch calls as one function each, and scaled_dot_product_attention:
    # decomposed here into loom's linear, matmul, softmax, where and
    # layer_norm) ---

    def masked(self, scores, dtype, mask, shape, excluded_where_true):
        """`scores` (of `dtype`) with the FX value `mask` applied, reshaped to
        `shape` (which broadcasts to the scores'): a float mask is added; a
        bool one leaves out (-inf) where it is true (`excluded_where_true`,
        as nn.MultiheadAttention reads it) or where it is false (as
        scaled_dot_product_attention does)."""
        value = self.value(mask)
        if self.shape_of(mask) != list(shape):
            value = self.out.node("reshape", [value], shape=list(shape))
        if self.dtype_of(mask) != np.bool_:
            return self.out.node("add", [scores, value])
        minus_infinity = self.out.weight("minus_inf", np.array([-np.inf], dtype))
        branches = [minus_infinity, scores] if excluded_where_true else [scores, minus_infinity]
        return self.out.node("where", [value] + branches)

    def attention(self, query, key, value, shapes, heads, in_weight, in_bias, out_weight,
                  out_bias, need_weights=False, average_weights=True, masks=()):
        """Attention of loom values in batch-first layout, query [N, L, E] and
        key and value [N, S, E] (`shapes`: the query's and the key's; the
        same name thrice for self-attention), the scores [N, H, L, S] masked
        by each (mask, its shape there) of nn.MultiheadAttention's `masks`:
        (out [N, L, E], the weights [N, L, S] averaged over the heads or
        [N, H, L, S], or None)."""
        (batch, length, embed), source = shapes[0], shapes[1][1]
        heads = int(heads)
        head = embed // heads
        w, b = self.raw(in_weight), self.raw(in_bias)
        if b is None or self.raw(out_bias) is None:
            raise Unsupported("attention without projection biases")
        if query == key == value:  # self-attention: one product for q, k and v
            qkv = self.out.node("linear", [query, self.out.weight("w_qkv", w),
                                           self.out.weight("b_qkv", b)])
            q, k, v = self.out.node("split", [qkv], outputs=3, axis=-1, split=[embed] * 3)
        else:
            q, k, v = (self.out.node("linear", [x, self.out.weight("w_" + part, w[i:i + embed]),
                                                self.out.weight("b_" + part, b[i:i + embed])])
                       for x, part, i in ((query, "q", 0), (key, "k", embed),
                                          (value, "v", 2 * embed)))

        def split_heads(x, rows, perm):
            return self.out.node("transpose", [self.out.node(
                "reshape", [x], shape=[batch, rows, heads, head])], perm=perm)

        # q [N, H, L, D] scaled, k^T [N, H, D, S], v [N, H, S, D].
        scale = self.out.weight("scale", np.array([head ** -0.5], w.dtype))
        q = self.out.node("mul", [split_heads(q, length, [0, 2, 1, 3]), scale])
        scores = self.out.node("matmul", [q, split_heads(k, source, [0, 2, 3, 1])])
        for mask, shape in masks:
            scores = self.masked(scores, w.dtype, mask, shape, excluded_where_true=True)
        weights = self.out.node("softmax", [scores], axis=-1)
        context = self.out.node("matmul", [weights, split_heads(v, source, [0, 2, 1, 3])])
        context = self.out.node("reshape", [self.out.node("transpose", [context], perm=[0, 2, 1, 3])],
                                shape=[batch, length, embed])
        out = self.out.node("linear", [context, self.value(out_weight), self.value(out_bias)])
        self.macs += float(batch) * embed * (2 * length * embed + 2 * source * embed
                                             + 2 * length * source)
        if not need_weights:
            return out, None
        if average_weights:
            weights = self.out.node("reduce_mean", [weights], axes=[1])
        return out, weights

    @staticmethod
    def unsupported_attention(a):
        """Why loom does not compile this F.multi_head_attention_forward, or None."""
        if a.is_causal and a.attn_mask is None:
            return "causal attention without its mask"
        if a.bias_k is not None or a.bias_v is not None or a.add_zero_attn:
            return "attention with bias_k, bias_v or add_zero_attn"
        if a.use_separate_proj_weight:
            return "attention with separate projection weights"
        if a.training and a.dropout_p > 0:
            return "attention with dropout in training mode"
        return None

    def multi_head_attention(self, a):
        """F.multi_head_attention_forward, sequence first: [L, N, E]."""
        reason = self.unsupported_attention(a)
        if reason:
            raise Unsupported(reason)
        inputs = [a.query, a.key, a.value]
        names = {}
        for x in inputs:  # each distinct input to batch first, once
            if x not in names:
                names[x] = self.out.node("transpose", [self.value(x)], perm=[1, 0, 2])
        shapes = [[s[1], s[0], s[2]] for s in (self.shape_of(a.query), self.shape_of(a.key))]
        (batch, length, _), source = shapes[0], shapes[1][1]
        heads = int(a.num_heads)
        masks = []
        if a.attn_mask is not None:  # [L, S] or [N * H, L, S]
            rank = len(self.shape_of(a.attn_mask))
            masks.append((a.attn_mask, [length, source] if rank == 2
                          else [batch, heads, length, source]))
        if a.key_padding_mask is not None:  # [N, S]
            masks.append((a.key_padding_mask, [batch, 1, 1, source]))
        out, weights = self.attention(*(names[x] for x in inputs), shapes, heads,
                                      a.in_proj_weight, a.in_proj_bias, a.out_proj_weight,
                                      a.out_proj_bias, a.need_weights, a.average_attn_weights,
                                      masks)
        return self.out.node("transpose", [out], perm=[1, 0, 2]), weights

    def scaled_dot_product_attention(self, a):
        """softmax(q k^T * scale + mask) v over the last two dims."""
        if a.dropout_p > 0:
            raise Unsupported("attention with dropout")
        q_shape, k_shape = self.shape_of(a.query), self.shape_of(a.key)
        if a.enable_gqa and q_shape[-3:-2] != k_shape[-3:-2]:
            raise Unsupported("grouped-query attention")
        length, source, depth = q_shape[-2], k_shape[-2], q_shape[-1]
        scale = self.out.weight("scale", np.array(
            [a.scale if a.scale is not None else depth ** -0.5], self.dtype_of(a.query)))
        rank = len(k_shape)
        key_t = self.out.node("transpose", [self.value(a.key)],
                              perm=list(range(rank - 2)) + [rank - 1, rank - 2])
        scores = self.out.node("matmul", [self.out.node("mul", [self.value(a.query), scale]),
                                          key_t])
        if a.is_causal:  # the lower triangle, as torch.ones(L, S).tril()
            causal = np.where(np.tri(length, source, dtype=bool), 0, -np.inf)
            scores = self.out.node("add", [scores, self.out.weight(
                "causal", causal.astype(self.dtype_of(a.query)))])
        if a.attn_mask is not None:
            scores = self.masked(scores, self.dtype_of(a.query), a.attn_mask,
                                 self.shape_of(a.attn_mask), excluded_where_true=False)
        self.macs += 2.0 * np.prod(q_shape[:-1], dtype=np.float64) * source * depth
        weights = self.out.node("softmax", [scores], axis=-1)
        return self.out.node("matmul", [weights, self.value(a.value)])

    def encoder_layer(self, a):
        """torch._transformer_encoder_layer_fwd, nn.TransformerEncoderLayer's
        inference fast path, batch first: [N, L, E]."""
        if a.mask is not None:
            raise Unsupported("an encoder layer with a mask")
        shape = self.shape_of(a.src)
        x = self.value(a.src)

        def norm(y, w, b):
            return self.out.node("layer_norm", [y, self.value(w), self.value(b)], axis=-1,
                                 epsilon=float(a.eps))

        def self_attention(y):
            return self.attention(y, y, y, [shape, shape], a.num_heads, a.qkv_weight, a.qkv_bias,
                                  a.proj_weight, a.proj_bias)[0]

        def feed_forward(y):
            hidden = self.out.node("linear", [y, self.value(a.ffn_weight_1),
                                              self.value(a.ffn_bias_1)])
            hidden = self.out.node("gelu" if a.use_gelu else "relu", [hidden])
            self.macs += 2.0 * np.prod(shape) * self.shape_of(a.ffn_weight_1)[0]
            return self.out.node("linear", [hidden, self.value(a.ffn_weight_2),
                                            self.value(a.ffn_bias_2)])

        if a.norm_first:
            x = self.out.node("add", [x, self_attention(norm(x, a.norm_weight_1, a.norm_bias_1))])
            return self.out.node("add", [x, feed_forward(norm(x, a.norm_weight_2, a.norm_bias_2))])
        x = norm(self.out.node("add", [x, self_attention(x)]), a.norm_weight_1, a.norm_bias_1)
        return norm(self.out.node("add", [x, feed_forward(x)]), a.norm_weight_2, a.norm_bias_2)

    def split(self, node, x, _sizes, dim=0):
        """x.split(size or sizes, dim) or x.chunk(count, dim): parts along dim,
        each of the size torch gave it (its meta)."""
        rank = len(self.shape_of(x))
        axis = int(self.raw(dim)) % rank
        parts = [int(v.shape[axis]) for v in node.meta["example_value"]]
        names = self.out.node("split", [self.value(x)], outputs=len(parts), axis=axis,
                              split=parts)
        return tuple(names) if len(parts) > 1 else (names,)

    def masked_fill(self, node, x, mask, value):
        """x with `value` where `mask` is true."""
        fill = self.out.weight("fill", np.array([self.raw(value)], self.dtype_of(node)))
        return self.out.node("where", [self.value(mask), fill, self.value(x)])

    def recurrent(self, node, lstm, x, hx, params, has_biases, layers, dropout, train,
                  bidirectional, batch_first):
        states = hx if lstm else (hx,)
        if not all(isinstance(self.env.get(s, s), _Zeros) for s in states):
            raise Unsupported("%s with a given initial state" % ("lstm" if lstm else "gru"))
        if not has_biases:
            raise Unsupported("%s without biases" % ("lstm" if lstm else "gru"))
        if train and dropout > 0:
            raise Unsupported("a recurrence with dropout in training mode")
        weights = [self.raw(p) for p in params]
        directions = 2 if bidirectional else 1
        per_layer = 4 * directions
        if len(weights) != int(layers) * per_layer:  # e.g. an LSTM's proj_size
            raise Unsupported("a recurrence with %d weights for %d layers" % (len(weights), layers))
        hidden = weights[1].shape[1]
        order = [0, 3, 1, 2] if lstm else [1, 0, 2]  # (i,f,g,o) -> (i,o,f,c); (r,z,n) -> (z,r,h)
        shape = self.shape_of(x)
        batch, seq = (shape[0], shape[1]) if batch_first else (shape[1], shape[0])
        y = self.value(x)
        self.macs += float(batch * seq * layers * directions) * sum(w.size for w in weights) / (
            layers * directions)
        finals_h, finals_c = [], []
        for layer in range(int(layers)):
            w, r, b = [], [], []
            for d in range(directions):
                w_ih, w_hh, b_ih, b_hh = weights[layer * per_layer + 4 * d:][:4]
                w.append(_gates(w_ih, order, hidden))
                r.append(_gates(w_hh, order, hidden))
                b.append(np.concatenate([_gates(b_ih, order, hidden), _gates(b_hh, order, hidden)]))
            inputs = [y, self.out.weight("W", np.stack(w)), self.out.weight("R", np.stack(r)),
                      self.out.weight("B", np.stack(b))]
            attrs = dict(hidden_size=int(hidden), layout=1 if batch_first else 0,
                         direction="bidirectional" if bidirectional else "forward")
            if not lstm:
                attrs["linear_before_reset"] = 1
            outs = self.out.node("lstm" if lstm else "gru", inputs, outputs=3 if lstm else 2,
                                 **attrs)
            finals_h.append(outs[1])
            if lstm:
                finals_c.append(outs[2])
            # Y: [batch, seq, dirs, hidden] (layout 1) or [seq, dirs, batch, hidden].
            seq_out = outs[0]
            if not batch_first:
                seq_out = self.out.node("transpose", [seq_out], perm=[0, 2, 1, 3])
            y = self.out.node("reshape", [seq_out],
                              shape=[batch, seq, directions * hidden] if batch_first
                              else [seq, batch, directions * hidden])

        def stacked(finals):
            # Y_h: [batch, dirs, hidden] (layout 1) or [dirs, batch, hidden]:
            # PyTorch's h_n is [layers * dirs, batch, hidden].
            axis = 1 if batch_first else 0
            v = finals[0] if len(finals) == 1 else self.out.node("concat", finals, axis=axis)
            return self.out.node("transpose", [v], perm=[1, 0, 2]) if batch_first else v

        # torch.lstm's results are (output, h_n, c_n); torch.gru's (output, h_n).
        return (y, stacked(finals_h), stacked(finals_c)) if lstm else (y, stacked(finals_h))


# torch functions by the translator's method for them, and for the pools
# the spatial dims they take.
_HANDLERS = {
    torch.conv1d: ("conv",), torch.conv2d: ("conv",), torch.conv3d: ("conv",),
    torch.conv_transpose1d: ("conv_transpose",), torch.conv_transpose2d: ("conv_transpose",),
    torch.conv_transpose3d: ("conv_transpose",), torch.convolution: ("convolution",),
    F.max_pool1d: ("max_pool", 1), F.max_pool2d: ("max_pool", 2), F.max_pool3d: ("max_pool", 3),
    torch.max_pool1d: ("max_pool", 1), torch.max_pool2d: ("max_pool", 2),
    torch.max_pool3d: ("max_pool", 3),
    F.avg_pool1d: ("avg_pool", 1), F.avg_pool2d: ("avg_pool", 2), F.avg_pool3d: ("avg_pool", 3),
    F.adaptive_avg_pool1d: ("adaptive_avg_pool", 1),
    F.adaptive_avg_pool2d: ("adaptive_avg_pool", 2),
    F.adaptive_avg_pool3d: ("adaptive_avg_pool", 3),
    F.batch_norm: ("batch_norm",), F.embedding: ("embedding",), F.pad: ("pad",),
    torch._C._nn.pad: ("pad",), F.interpolate: ("interpolate",),
}

# Activations with parameters: loom's op, torch's signature, loom's attributes.
_ACTIVATIONS = {
    F.leaky_relu: ("leaky_relu", _signature("input negative_slope inplace", negative_slope=0.01,
                                            inplace=False),
                   lambda a: dict(alpha=float(a.negative_slope))),
    F.elu: ("elu", _signature("input alpha inplace", alpha=1.0, inplace=False),
            lambda a: dict(alpha=float(a.alpha))),
    F.hardtanh: ("clip", _signature("input min_val max_val inplace", min_val=-1.0, max_val=1.0,
                                    inplace=False),
                 lambda a: dict(min=float(a.min_val), max=float(a.max_val))),
    F.relu6: ("clip", _signature("input inplace", inplace=False),
              lambda a: dict(min=0.0, max=6.0)),
    F.hardswish: ("hard_swish", _signature("input inplace", inplace=False), lambda a: {}),
    F.hardsigmoid: ("hard_sigmoid", _signature("input inplace", inplace=False),
                    lambda a: dict(alpha=1 / 6, beta=0.5)),
}

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
        self.call = model.raw_call([("input_%d" % p, _numpy_dtype(t.dtype), tuple(t.shape))
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
                        if not (isinstance(arg, torch.Tensor) and _is_weight(node, arg))]

    def key(self, args):
        return tuple((args[i].shape, args[i].dtype) if isinstance(args[i], torch.Tensor)
                     else int(args[i]) for i in self.varying)

    def entry(self, args):
        key = self.key(args)
        if key not in self.entries:
            folder = os.path.join(self.folder, str(len(self.entries)))
            os.makedirs(folder)
            translator = _Translator(self.gm, args, folder)
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
