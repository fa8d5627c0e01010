"""What each torch op of dynamo's FX graphs becomes in loom, for the
torch.compile backend (loom.torch). OPS, the one table, maps every target
the translation knows (a torch function, or a tensor method's name) to its
translator: translator(t, node), with t the GraphTranslator
(loom.torch_graph), writes the loom nodes of FX `node` and returns its
value. The translators follow torch's defaults and semantics."""

import functools
import math
import operator
from functools import partial

import numpy as np
import torch
import torch.nn.functional as F

from loom.torch_graph import Unsupported, loom_dtype, numpy_dtype, signature, unknown_op
from loom.torch_symbolic import SymSize, is_size

__all__ = ["OPS"]

_CONV = signature("input weight bias stride padding dilation groups",
                  bias=None, stride=1, padding=0, dilation=1, groups=1)
_CONV_TRANSPOSE = signature("input weight bias stride padding output_padding groups dilation",
                            bias=None, stride=1, padding=0, output_padding=0, groups=1,
                            dilation=1)
_CONVOLUTION = signature(
    "input weight bias stride padding dilation transposed output_padding groups")
_MAX_POOL = signature("input kernel_size stride padding dilation ceil_mode return_indices",
                      stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False)
_AVG_POOL = signature(
    "input kernel_size stride padding ceil_mode count_include_pad divisor_override",
    stride=None, padding=0, ceil_mode=False, count_include_pad=True, divisor_override=None)
_ADAPTIVE_POOL = signature("input output_size")
_BATCH_NORM = signature("input running_mean running_var weight bias training momentum eps",
                        weight=None, bias=None, training=False, momentum=0.1, eps=1e-5)
_EMBEDDING = signature(
    "input weight padding_idx max_norm norm_type scale_grad_by_freq sparse",
    padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False, sparse=False)
_PAD = signature("input pad mode value", mode="constant", value=None)
_INTERPOLATE = signature(
    "input size scale_factor mode align_corners recompute_scale_factor antialias",
    size=None, scale_factor=None, mode="nearest", align_corners=None,
    recompute_scale_factor=None, antialias=False)
_DROPOUT = signature("input p training inplace", p=0.5, training=True, inplace=False)
_GROUP_NORM = signature("input num_groups weight bias eps", weight=None, bias=None, eps=1e-5)
_LAYER_NORM = signature("input normalized_shape weight bias eps", weight=None, bias=None,
                        eps=1e-5)
_RMS_NORM = signature("input normalized_shape weight eps", weight=None, eps=None)
_MASKED_FILL = signature("input mask value")
_REDUCTION = signature("input dim keepdim dtype", dim=None, keepdim=False, dtype=None)
_ADDMM = signature("input mat1 mat2 beta alpha", beta=1, alpha=1)
_GATHER = signature("input dim index sparse_grad", sparse_grad=False)
_TRIANGLE = signature("input diagonal", diagonal=0)
_UNBIND = signature("input dim", dim=0)

# The attention functions nn.MultiheadAttention and nn.TransformerEncoderLayer
# call (their parameters as torch names them).
_MULTI_HEAD_ATTENTION = signature(
    "query key value embed_dim_to_check num_heads in_proj_weight in_proj_bias bias_k bias_v "
    "add_zero_attn dropout_p out_proj_weight out_proj_bias training key_padding_mask "
    "need_weights attn_mask use_separate_proj_weight q_proj_weight k_proj_weight v_proj_weight "
    "static_k static_v average_attn_weights is_causal",
    training=True, key_padding_mask=None, need_weights=True, attn_mask=None,
    use_separate_proj_weight=False, q_proj_weight=None, k_proj_weight=None, v_proj_weight=None,
    static_k=None, static_v=None, average_attn_weights=True, is_causal=False)
_SDPA = signature("query key value attn_mask dropout_p is_causal scale enable_gqa",
                  attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False)
_ENCODER_LAYER = signature(
    "src embed_dim num_heads qkv_weight qkv_bias proj_weight proj_bias use_gelu norm_first eps "
    "norm_weight_1 norm_bias_1 norm_weight_2 norm_bias_2 ffn_weight_1 ffn_bias_1 ffn_weight_2 "
    "ffn_bias_2 mask mask_type", mask=None, mask_type=None)

# Activations with parameters.
_WITH_NEGATIVE_SLOPE = signature("input negative_slope inplace", negative_slope=0.01,
                                 inplace=False)
_WITH_ALPHA = signature("input alpha inplace", alpha=1.0, inplace=False)
_WITH_BOUNDS = signature("input min_val max_val inplace", min_val=-1.0, max_val=1.0,
                         inplace=False)
_INPUT_ONLY = signature("input inplace", inplace=False)


def _spatial(value, dims, kind=int):
    """An int-or-tuple argument of a sliding-window op: one per spatial dim."""
    values = list(value) if isinstance(value, (list, tuple)) else [value]
    if len(values) == 1:
        values *= dims
    if len(values) != dims:
        raise Unsupported("%s where %d spatial dims take one value each" % (value, dims))
    return [kind(v) for v in values]


def _spatial_input(t, node, x, dims):
    """x's shape, which must be [N, C, spatial...] with `dims` spatial dims."""
    shape = t.shape_of(x)
    if len(shape) != dims + 2:
        raise Unsupported("%s of a %d-D input (loom takes it batched: [N, C, %d spatial dims])"
                          % (getattr(node.target, "__name__", node.target), len(shape), dims))
    return shape


# --- in-place updates ---

_VIEW_METHODS = ("view", "reshape", "flatten", "unsqueeze", "squeeze", "expand", "permute",
                 "transpose", "split", "chunk", "contiguous")
_VIEW_FUNCTIONS = (torch.flatten, torch.reshape, torch.unsqueeze, torch.squeeze, torch.split,
                   torch.chunk, operator.getitem, torch.Tensor.__getitem__)


def _is_view(node):
    """Whether FX `node` may share its operand's memory (a view op)."""
    if node.op == "call_method":
        return node.target in _VIEW_METHODS
    return node.op == "call_function" and node.target in _VIEW_FUNCTIONS


def _written_in_place(t, x, result):
    """`result` written over x (`inplace=True`, `+=`, `masked_fill_`):
    later readers of x read it. Over a graph input or a parameter it would
    not reach the caller's tensor, and over a view, or a tensor with a
    view, not the other tensor sharing its memory: such graphs run
    eagerly."""
    if not isinstance(x, torch.fx.Node):
        raise Unsupported("an in-place update of a constant")
    if x.op in ("placeholder", "get_attr") or x in t.refused:
        raise Unsupported("an in-place update of an input or a parameter")
    if _is_view(x) or any(_is_view(user) for user in x.users):
        raise Unsupported("an in-place update of a tensor that shares memory with a view")
    t.env[x] = result
    return result


# --- convolutions and pools (loom's conv, conv_transpose, max_pool and
# average_pool: ONNX's, with the pads as all begins, then all ends) ---

def conv(t, node):
    return _emit_conv(t, node, t.bind(node, _CONV))


def conv_transpose(t, node):
    return _emit_conv_transpose(t, node, t.bind(node, _CONV_TRANSPOSE))


def convolution(t, node):
    a = t.bind(node, _CONVOLUTION)
    return (_emit_conv_transpose if a.transposed else _emit_conv)(t, node, a)


def _emit_conv(t, node, a):
    weight = t.shape_of(a.weight)  # [M, C / groups, kernel...]
    dims = len(weight) - 2
    _spatial_input(t, node, a.input, dims)
    strides, dilations = _spatial(a.stride, dims), _spatial(a.dilation, dims)
    if a.padding == "valid":
        pads = [0] * (2 * dims)
    elif a.padding == "same":  # the odd position at the end, as torch pads
        total = [d * (k - 1) for d, k in zip(dilations, weight[2:])]
        pads = [p // 2 for p in total] + [p - p // 2 for p in total]
    else:
        pads = _spatial(a.padding, dims) * 2
    return t.graph.node("conv", _conv_inputs(t, a), strides=strides, dilations=dilations,
                        pads=pads, group=int(a.groups))


def _emit_conv_transpose(t, node, a):
    weight = t.shape_of(a.weight)  # [C, M / groups, kernel...]
    dims = len(weight) - 2
    _spatial_input(t, node, a.input, dims)
    return t.graph.node("conv_transpose", _conv_inputs(t, a),
                        strides=_spatial(a.stride, dims), dilations=_spatial(a.dilation, dims),
                        pads=_spatial(a.padding, dims) * 2,
                        output_padding=_spatial(a.output_padding, dims), group=int(a.groups))


def _conv_inputs(t, a):
    inputs = [t.value(a.input), t.value(a.weight)]
    return inputs if a.bias is None else inputs + [t.value(a.bias)]


def _window(t, node, a, dims):
    """A pool's attributes; torch's stride defaults to the kernel."""
    _spatial_input(t, node, a.input, dims)
    kernel = _spatial(a.kernel_size, dims)
    strides = kernel if a.stride in (None, [], ()) else _spatial(a.stride, dims)
    return dict(kernel_shape=kernel, strides=strides, pads=_spatial(a.padding, dims) * 2,
                ceil_mode=bool(a.ceil_mode))


def max_pool(t, node, dims):
    a = t.bind(node, _MAX_POOL)
    attrs = _window(t, node, a, dims)
    x = t.value(a.input)
    if not a.return_indices:
        return t.graph.node("max_pool", [x], dilations=_spatial(a.dilation, dims), **attrs)
    values, indices = t.graph.node("max_pool", [x], outputs=2,
                                   dilations=_spatial(a.dilation, dims), **attrs)
    # loom's indices count over all of x [N, C, spatial...], torch's in one channel's plane.
    plane = np.array(np.prod(t.shape_of(a.input)[2:]), np.int64)
    return values, t.graph.node("mod", [indices, t.graph.weight("plane", plane)])


def avg_pool(t, node, dims):
    a = t.bind(node, _AVG_POOL)
    if a.divisor_override is not None:
        raise Unsupported("avg_pool with divisor_override")
    return t.graph.node("average_pool", [t.value(a.input)],
                        count_include_pad=bool(a.count_include_pad),
                        **_window(t, node, a, dims))


def adaptive_avg_pool(t, node, dims):
    """Global (output size 1), or windows that tile the input exactly."""
    a = t.bind(node, _ADAPTIVE_POOL)
    sizes = _spatial_input(t, node, a.input, dims)[2:]
    out = t.shape_of(node)[2:]
    x = t.value(a.input)
    if all(o == 1 for o in out):
        return t.graph.node("reduce_mean", [x], axes=list(range(2, dims + 2)), keepdims=1)
    if any(s % o for s, o in zip(sizes, out)):
        raise Unsupported("adaptive_avg_pool from %s to %s (windows of unequal sizes)"
                          % (sizes, out))
    kernel = [s // o for s, o in zip(sizes, out)]
    return t.graph.node("average_pool", [x], kernel_shape=kernel, strides=kernel)


# --- normalisation, lookup, padding, resizing ---

def batch_norm(t, node):
    """Inference: loom's fold-batch-norm folds it into a conv before it."""
    a = t.bind(node, _BATCH_NORM)
    if a.training or a.running_mean is None or a.running_var is None:
        raise Unsupported("batch_norm in training mode (loom compiles inference; "
                          "call model.eval())")
    channels, dtype = t.shape_of(a.input)[1], t.dtype_of(a.input)
    scale = (t.graph.weight("ones", np.ones(channels, dtype)) if a.weight is None
             else t.value(a.weight))
    bias = (t.graph.weight("zeros", np.zeros(channels, dtype)) if a.bias is None
            else t.value(a.bias))
    return t.graph.node("batch_norm", [t.value(a.input), scale, bias,
                                       t.value(a.running_mean),
                                       t.value(a.running_var)], epsilon=float(a.eps))


def _affine(t, parameter, shape, dtype, fill):
    """A norm's scale or bias: the parameter, or `fill` where it is None."""
    if parameter is None:
        return t.graph.weight("affine", np.full(shape, fill, dtype))
    return t.value(parameter)


def group_norm(t, node):
    a = t.bind(node, _GROUP_NORM)
    channels, dtype = t.shape_of(a.input)[1], t.dtype_of(a.input)
    return t.graph.node("group_norm", [t.value(a.input), _affine(t, a.weight, [channels], dtype, 1),
                                       _affine(t, a.bias, [channels], dtype, 0)],
                        num_groups=int(a.num_groups), epsilon=float(a.eps))


def layer_norm(t, node):
    a = t.bind(node, _LAYER_NORM)
    shape, dtype = t.ints(a.normalized_shape), t.dtype_of(a.input)
    return t.graph.node("layer_norm", [t.value(a.input), _affine(t, a.weight, shape, dtype, 1),
                                       _affine(t, a.bias, shape, dtype, 0)],
                        axis=-len(shape), epsilon=float(a.eps))


def rms_norm(t, node):
    """x / sqrt(mean(x^2) + eps) * weight over the last dims."""
    a = t.bind(node, _RMS_NORM)
    dims, dtype = len(t.ints(a.normalized_shape)), t.dtype_of(a.input)
    eps = float(np.finfo(dtype).eps if a.eps is None else a.eps)
    x = t.value(a.input)
    mean = t.graph.node("reduce_mean", [t.graph.node("mul", [x, x])],
                        axes=list(range(-dims, 0)), keepdims=1)
    scale = t.graph.node("rsqrt", [t.graph.node("add", [mean, t.graph.weight(
        "eps", np.array(eps, dtype))])])
    y = t.graph.node("mul", [x, scale])
    return y if a.weight is None else t.graph.node("mul", [y, t.value(a.weight)])


def embedding(t, node):
    a = t.bind(node, _EMBEDDING)  # padding_idx and the rest matter only to training
    if a.max_norm is not None:
        raise Unsupported("embedding with max_norm (it renormalises the table's rows in place)")
    return t.graph.node("gather", [t.value(a.weight), t.value(a.input)], axis=0)


def pad(t, node):
    """torch lists (begin, end) pairs from the last dim backwards."""
    a = t.bind(node, _PAD)
    rank = len(t.shape_of(a.input))
    pads = t.ints(a.pad)
    modes = {"constant": "constant", "reflect": "reflect", "replicate": "edge"}
    if a.mode not in modes:
        raise Unsupported("pad mode '%s' (loom pads constant, reflect or replicate)" % a.mode)
    if len(pads) % 2 or len(pads) > 2 * rank or min(pads) < 0:
        raise Unsupported("pad %s of a %d-D input (negative pads crop)" % (pads, rank))
    begins, ends = [0] * rank, [0] * rank
    for i in range(len(pads) // 2):
        begins[rank - 1 - i], ends[rank - 1 - i] = pads[2 * i], pads[2 * i + 1]
    return t.graph.node("pad", [t.value(a.input)], pads=begins + ends,
                        mode=modes[a.mode], value=float(a.value or 0))


def interpolate(t, node):
    a = t.bind(node, _INTERPOLATE)
    if a.antialias:
        raise Unsupported("interpolate with antialias")
    if a.mode == "nearest":
        attrs = _nearest_resize(a, t.shape_of(a.input), t.shape_of(node))
    elif a.mode in ("linear", "bilinear", "trilinear"):
        attrs = _linear_resize(a, t.shape_of(a.input), t.shape_of(node))
    else:
        raise Unsupported("interpolate mode '%s' (loom matches torch's nearest, linear, "
                          "bilinear and trilinear)" % a.mode)
    return t.graph.node("resize", [t.value(a.input)], **attrs)


def _scale_factors(a, rank):
    """torch's scale factors, where it computes with them rather than
    with output size / input size."""
    if a.scale_factor is None or a.recompute_scale_factor:
        return None
    return [float(f) for f in _spatial(a.scale_factor, rank - 2, float)]


def _nearest_resize(a, shape, out):
    """loom's resize attributes for interpolate's nearest mode."""
    # torch's source index is floor(x * scale) in float32, with scale
    # 1 / scale_factor or input / output size: floor(x / k), as loom's
    # asymmetric floor, for whole upscaling factors k only.
    factors = [o // i for i, o in zip(shape[2:], out[2:])]
    given = _scale_factors(a, len(shape))
    if any(o % i for i, o in zip(shape[2:], out[2:])) or given not in (None, factors):
        raise Unsupported("nearest interpolation from %s to %s (loom matches torch only "
                          "for whole upscaling factors)" % (shape[2:], out[2:]))
    return dict(mode="nearest", coordinate_transformation_mode="asymmetric",
                nearest_mode="floor", sizes=out)


def _linear_resize(a, shape, out):
    """loom's resize attributes for interpolate's (bi/tri)linear modes."""
    # torch's source coordinate is (x + 0.5) / scale - 0.5, clamped at 0
    # (loom's half_pixel clamps the taps instead: the same values), or
    # with align_corners x (input - 1) / (output - 1), from the sizes.
    if a.align_corners:
        return dict(mode="linear", coordinate_transformation_mode="align_corners", sizes=out)
    given = _scale_factors(a, len(shape))
    size = dict(sizes=out) if given is None else dict(scales=[1.0, 1.0] + given)
    return dict(mode="linear", coordinate_transformation_mode="half_pixel", **size)


# --- pointwise ops, activations, products ---

def _refuse_extra_arguments(node, op):
    """A one-tensor function takes no arguments but inplace (and gelu's
    approximate)."""
    extra = [k for k in node.kwargs if k not in ("inplace", "approximate")]
    if extra or len(node.args) > 1:
        raise Unsupported("%s with arguments %s" % (op, extra or node.args[1:]))


def pointwise(t, node, op):
    """A function of one tensor that is loom's `op`."""
    _refuse_extra_arguments(node, op)
    result = t.graph.node(op, [t.value(node.args[0])])
    return _written_in_place(t, node.args[0], result) if node.kwargs.get("inplace") else result


def gelu(t, node):
    _refuse_extra_arguments(node, "gelu")
    return t.graph.node("gelu", [t.value(node.args[0])],
                        approximate=node.kwargs.get("approximate", "none"))


def activation(t, node, op, parameters, attributes):
    """An activation with parameters (torch's, a signature): loom's `op`,
    with the attributes `attributes` makes of the bound arguments."""
    a = t.bind(node, parameters)
    result = t.graph.node(op, [t.value(a.input)], **attributes(a))
    return _written_in_place(t, a.input, result) if a.inplace else result


def softmax(t, node, op):
    """softmax or log_softmax along a given dim, in the input's dtype."""
    args, kwargs = node.args, node.kwargs
    dim = kwargs.get("dim", args[1] if len(args) > 1 else None)
    # F.softmax's fourth argument is its dtype (after _stacklevel).
    if dim is None or kwargs.get("dtype") is not None or (len(args) > 3 and args[3] is not None):
        raise Unsupported("softmax without a dim, or with a dtype")
    return t.graph.node(op, [t.value(args[0])], axis=int(dim))


# Python's operators for loom's, on plain values (sizes, symbolic ints).
_PYTHON_OPS = {"add": operator.add, "sub": operator.sub, "mul": operator.mul,
               "div": operator.truediv, "floor_div": operator.floordiv, "mod": operator.mod,
               "pow": operator.pow, "minimum": min, "maximum": max}


_PYTHON_COMPARISONS = {"greater": operator.gt, "less_equal": operator.le, "equal": operator.eq,
                       "not_equal": operator.ne}


def _is_tensor(arg):
    return isinstance(arg, torch.fx.Node) and isinstance(
        arg.meta.get("example_value"), torch.Tensor)


def _example(t, arg):
    """arg's example tensor, or its plain value, for torch's type promotion."""
    return arg.meta["example_value"] if _is_tensor(arg) else t.raw(arg)


def _operand(t, arg, dtype):
    """A tensor or Python scalar operand as a loom value of `dtype` (torch's
    type promotion: the scalar takes the tensor's type, an integer tensor
    cast where the result is a float)."""
    if not _is_tensor(arg):
        return t.graph.weight("scalar", np.array(t.raw(arg), dtype))
    value = t.value(arg)
    if t.dtype_of(arg) != dtype:
        value = t.graph.node("cast", [value], to=loom_dtype(dtype))
    return value


def binary(t, node, op, in_place=False):
    """A function of two tensors or scalars that is loom's `op`, in the
    result's dtype (`in_place`: written over the first, as `+=`); on two
    plain values (sizes), their plain result."""
    if node.kwargs or len(node.args) != 2:  # torch.add's alpha, an out= tensor
        raise unknown_op(node)
    a, b = node.args
    if not (_is_tensor(a) or _is_tensor(b)):
        if op not in _PYTHON_OPS:
            raise unknown_op(node)
        return _PYTHON_OPS[op](t.raw(a), t.raw(b))
    if op == "floor_div":
        raise Unsupported("floor division of tensors")
    dtype = t.dtype_of(node)
    if op == "pow" and not _is_tensor(b) and t.raw(b) in (2, 0.5):  # a product or a root
        x = _operand(t, a, dtype)
        result = t.graph.node("mul", [x, x]) if t.raw(b) == 2 else t.graph.node("sqrt", [x])
    else:
        result = t.graph.node(op, [_operand(t, a, dtype), _operand(t, b, dtype)])
    return _written_in_place(t, a, result) if in_place else result


def compare(t, node, op, swap=False):
    """A comparison in the operands' promoted type (`swap`: loom's op with
    the operands exchanged, a < b as b > a)."""
    if node.kwargs or len(node.args) != 2:
        raise unknown_op(node)
    a, b = node.args
    if not (_is_tensor(a) or _is_tensor(b)):  # of sizes: a plain value
        x, y = (t.raw(b), t.raw(a)) if swap else (t.raw(a), t.raw(b))
        return _PYTHON_COMPARISONS[op](x, y)
    dtype = numpy_dtype(torch.result_type(_example(t, a), _example(t, b)))
    operands = [_operand(t, a, dtype), _operand(t, b, dtype)]
    return t.graph.node(op, operands[::-1] if swap else operands)


def logical(t, node, op):
    """and / or of bools (a select), or of integers bitwise."""
    a, b = (_operand(t, x, t.dtype_of(node)) for x in node.args)
    if t.dtype_of(node) != np.bool_:
        return t.graph.node("bitwise_" + op, [a, b])
    return t.graph.node("where", [a, b, a] if op == "and" else [a, a, b])


def where(t, node):
    cond, a, b = node.args
    dtype = t.dtype_of(node)
    return t.graph.node("where", [t.value(cond), _operand(t, a, dtype), _operand(t, b, dtype)])


def cast(t, node):
    """to(), float(), type_as(): a cast to the node's dtype, if it differs
    (loom runs on the CPU only)."""
    example = node.meta["example_value"]
    if example.device.type != "cpu":
        raise Unsupported("a tensor moved to %s" % example.device)
    dtype = t.dtype_of(node)
    if loom_dtype(dtype) is None:
        raise Unsupported("a cast to %s" % example.dtype)
    return _operand(t, node.args[0], dtype)


def no_op(t, node):
    """A call without a result loom computes (torch._C._log_api_usage_once)."""
    return None


def reduction(t, node, op):
    """mean or sum over dims (all of them by default), in the result's
    dtype (a sum of bools counts in int64)."""
    a = t.bind(node, _REDUCTION)
    if a.dtype is not None:
        raise Unsupported("%s with a dtype" % op)
    rank = len(t.shape_of(a.input))
    dims = range(rank) if a.dim is None else (a.dim if isinstance(a.dim, (list, tuple))
                                              else [a.dim])
    return t.graph.node(op, [_operand(t, a.input, t.dtype_of(node))],
                        axes=[int(d) % rank for d in dims], keepdims=int(bool(a.keepdim)))


def addmm(t, node):
    """input + mat1 mat2 (GPT-2's Conv1D)."""
    a = t.bind(node, _ADDMM)
    if a.beta != 1 or a.alpha != 1:
        raise Unsupported("addmm with beta or alpha")
    product = t.graph.node("matmul", [t.value(a.mat1), t.value(a.mat2)])
    return t.graph.node("add", [product, t.value(a.input)])


def gather(t, node):
    a = t.bind(node, _GATHER)
    return t.graph.node("gather_elements", [t.value(a.input), t.value(a.index)],
                        axis=int(a.dim) % len(t.shape_of(a.input)))


def triangle(t, node, upper):
    """triu / tril: x where the mask of the last two dims keeps it, else 0."""
    a = t.bind(node, _TRIANGLE)
    rows, columns = t.shape_of(a.input)[-2:]
    keep = _lower_triangle(t, rows, columns, int(a.diagonal) - upper)
    dtype = t.dtype_of(node)
    zero = t.graph.weight("zero", np.zeros((), dtype))
    branches = [zero, t.value(a.input)] if upper else [t.value(a.input), zero]
    return t.graph.node("where", [keep] + branches)


def _lower_triangle(t, rows, columns, diagonal):
    """np.tri(rows, columns, diagonal) of bools: a constant, or where a size
    is symbolic, column - row <= diagonal of the positions."""
    if not any(isinstance(size, SymSize) for size in (rows, columns)):
        return t.graph.weight("triangle", np.tri(rows, columns, diagonal, dtype=bool))
    row = t.graph.node("reshape", [_positions(t, rows, np.int64)], shape=[rows, 1])
    column = t.graph.node("reshape", [_positions(t, columns, np.int64)], shape=[1, columns])
    return t.graph.node("less_equal", [t.graph.node("sub", [column, row]), t.graph.weight(
        "diagonal", np.array(diagonal, np.int64))])


def constant(t, node, fill=None, position=None):
    """A tensor of one value, of the node's shape and dtype: `fill`, or the
    argument `fill_value` (at `position`)."""
    if fill is None:
        fill = node.kwargs.get("fill_value", node.args[position] if position is not None
                               and len(node.args) > position else None)
        fill = t.raw(fill)
    if not isinstance(fill, (int, float, bool)):
        raise Unsupported("a fill value of type %s" % type(fill).__name__)
    shape = t.shape_of(node)
    if any(isinstance(d, SymSize) for d in shape):  # one value, expanded to the sizes
        one = t.graph.weight("constant", np.full((), fill, t.dtype_of(node)))
        return t.graph.node("expand", [one], shape=shape)
    return t.graph.weight("constant", np.full(shape, fill, t.dtype_of(node)))


def make_size(t, node):
    """torch.Size((a, b, ...)) of sizes: a plain value (a tuple where a size
    is symbolic)."""
    sizes = t.ints(node.args[0])
    return tuple(sizes) if any(isinstance(d, SymSize) for d in sizes) else torch.Size(sizes)


def sym_sum(t, node):
    """torch.sym_sum of sizes: a plain value."""
    return sum(t.raw(v) for v in node.args[0])


def item(t, node):
    """x.item() of a one-element input whose value the translation takes
    (GraphTranslator.scalars), or of a weight: a plain value."""
    arg = node.args[0]
    if arg in t.scalars:
        return t.scalars[arg]
    value = t.raw(arg)
    if isinstance(value, np.ndarray) and value.size == 1:
        return value.item()
    raise unknown_op(node)


def sym_math(t, node, fn):
    """A math function of a plain value (a symbolic size, a scalar): a plain value."""
    if node.kwargs or len(node.args) != 1 or _is_tensor(node.args[0]):
        raise unknown_op(node)
    return fn(t.raw(node.args[0]))


def size(t, node):
    """x.size() or x.size(dim): plain values."""
    shape = t.shape_of(node.args[0])
    dim = node.kwargs.get("dim", node.args[1] if len(node.args) > 1 else None)
    return tuple(shape) if dim is None else shape[int(t.raw(dim))]


def matmul(t, node):
    if node.kwargs:
        raise unknown_op(node)
    return t.graph.node("matmul", [t.value(a) for a in node.args[:2]])


def linear(t, node):
    args = node.args
    x, w = args[0], args[1]
    b = args[2] if len(args) > 2 else node.kwargs.get("bias")
    if b is None:  # x w^T
        w_t = t.graph.node("transpose", [t.value(w)], perm=[1, 0])
        return t.graph.node("matmul", [t.value(x), w_t])
    return t.graph.node("linear", [t.value(x), t.value(w), t.value(b)])


def dropout(t, node):
    a = t.bind(node, _DROPOUT)
    if a.training and a.p > 0:
        raise Unsupported("dropout in training mode")
    return t.value(a.input)


def masked_fill(t, node):
    return _filled(t, node, t.bind(node, _MASKED_FILL))


def masked_fill_in_place(t, node):
    a = t.bind(node, _MASKED_FILL)
    return _written_in_place(t, a.input, _filled(t, node, a))


def _filled(t, node, a):
    """The input with `value` (a scalar or a 0-d tensor) where `mask` is true."""
    fill = _operand(t, a.value, t.dtype_of(node))
    return t.graph.node("where", [t.value(a.mask), fill, t.value(a.input)])


# --- shapes, views and constants ---

def reshape(t, node):
    """To the node's shape (a view, reshape, flatten, squeeze or unsqueeze)."""
    return t.graph.node("reshape", [t.value(node.args[0])], shape=t.shape_of(node))


def expand(t, node):
    return t.graph.node("expand", [t.value(node.args[0])], shape=t.shape_of(node))


def contiguous(t, node):
    return t.value(node.args[0])


def permute(t, node):
    args = node.args
    dims = args[1] if isinstance(args[1], (list, tuple)) else args[1:]
    return t.graph.node("transpose", [t.value(args[0])], perm=t.ints(dims))


def transpose(t, node):
    x = node.args[0]
    rank = len(t.shape_of(x))
    a, b = (int(t.raw(d)) % rank for d in node.args[1:3])
    perm = list(range(rank))
    perm[a], perm[b] = perm[b], perm[a]
    return t.graph.node("transpose", [t.value(x)], perm=perm)


def split(t, node):
    return _split(t, node, *node.args, **node.kwargs)


def _split(t, node, x, _sizes, dim=0):
    """x.split(size or sizes, dim) or x.chunk(count, dim): parts along dim,
    each of the size torch gave it (its meta)."""
    rank = len(t.shape_of(x))
    axis = int(t.raw(dim)) % rank
    parts = [t.size(v.shape[axis]) for v in node.meta["example_value"]]
    names = t.graph.node("split", [t.value(x)], outputs=len(parts), axis=axis, split=parts)
    return tuple(names) if len(parts) > 1 else (names,)


def getitem(t, node):
    """A result of a node with several (a split, an lstm, attention), an
    item of a plain value (a size), or x[index] of a tensor."""
    x, index = node.args
    if _is_tensor(x):
        return _indexed(t, node, x, index)
    return t.env[x][t.raw(index)] if isinstance(x, torch.fx.Node) else x[t.raw(index)]


def _indexed(t, node, x, index):
    """x[index] of ints, slices (with steps), None, Ellipsis and int tensors:
    a slice (and a gather at the tensors), then the node's shape."""
    index = list(index) if isinstance(index, tuple) else [index]
    shape = t.shape_of(x)
    if Ellipsis in index:
        at = index.index(Ellipsis)
        indexed = sum(item is not None and item is not Ellipsis for item in index)
        index[at:at + 1] = [slice(None)] * (len(shape) - indexed)
    cuts, gathers = [], []  # (dim, begin, end, step); (dim, index tensor)
    sliced = list(shape)  # the shape after the cuts
    for dim, item in enumerate(item for item in index if item is not None):
        if _is_tensor(item):
            if t.dtype_of(item) not in (np.int64, np.int32):
                raise Unsupported("indexing with a tensor of %s" % t.dtype_of(item))
            gathers.append((dim, item))
            continue
        if isinstance(item, slice):
            begin, end, step = _slice_indices(*(None if v is None else t.ints([v])[0] for v in (
                item.start, item.stop, item.step)), shape[dim])
        else:
            begin = t.ints([item])[0] % shape[dim]
            end, step = begin + 1, 1
        if (begin, end, step) != (0, shape[dim], 1):
            cuts.append((dim, begin, max(end, begin), step))
            sliced[dim] = max((end - begin + step - (1 if step > 0 else -1)) // step, 0)
    value = t.value(x)
    if cuts:
        axes, starts, ends, steps = (list(v) for v in zip(*cuts))
        value = t.graph.node("slice", [value], starts=starts, ends=ends, axes=axes, steps=steps)
    if gathers:
        value = _gathered(t, value, sliced, gathers)
    return t.graph.node("reshape", [value], shape=t.shape_of(node))


def _slice_indices(start, stop, step, length):
    """slice(start, stop, step).indices(length), for sizes that may be
    symbolic (SymSize): begin, end and step, clamped to the length as
    Python clamps them."""
    step = 1 if step is None else step
    if step == 0:
        raise Unsupported("a slice of step 0")
    lower, upper = (-1, length - 1) if step < 0 else (0, length)

    def clamp(v, default):
        if v is None:
            return default
        if v < 0:
            v = v + length
            return lower if v < lower else v
        return upper if v > upper else v

    return (clamp(start, upper if step < 0 else lower), clamp(stop, lower if step < 0 else upper),
            step)


def _size_tensor(t, size, dtype=np.int64):
    """A 0-d tensor of `dtype` holding `size`: its constant, or where the
    size is symbolic, the sum of that many ones."""
    if not isinstance(size, SymSize):
        return t.graph.weight("size", np.array(size, dtype))
    ones = t.graph.node("expand", [t.graph.weight("one", np.ones((), dtype))], shape=[size])
    return t.graph.node("reduce_sum", [ones], axes=[0], keepdims=0)


def _gathered(t, value, shape, gathers):
    """value[..., i, j, ...] at int tensors i, j of consecutive dims (which
    broadcast together): a gather of the flattened dims at the flat index
    sum(index * stride)."""
    dims = [dim for dim, _ in gathers]
    if dims != list(range(dims[0], dims[0] + len(dims))):
        raise Unsupported("indexing with tensors at dims %s, not consecutive" % dims)
    sizes = [shape[d] for d in dims]
    strides = [1]
    for size in sizes[:0:-1]:
        strides.insert(0, strides[0] * size)
    flat = None
    for (dim, item), stride in zip(gathers, strides):
        index = _operand(t, item, np.dtype(np.int64))
        negative = t.graph.node("greater", [t.graph.weight("zero", np.zeros((), np.int64)),
                                            index])  # torch counts a negative index from the end
        index = t.graph.node("where", [negative, t.graph.node("add", [
            index, _size_tensor(t, shape[dim])]), index])
        term = t.graph.node("mul", [index, _size_tensor(t, stride)])
        flat = term if flat is None else t.graph.node("add", [flat, term])
    first = dims[0]
    merged = shape[:first] + [functools.reduce(operator.mul, sizes, 1)] + shape[dims[-1] + 1:]
    value = t.graph.node("reshape", [value], shape=merged)
    return t.graph.node("gather", [value, flat], axis=first)


def unbind(t, node):
    a = t.bind(node, _UNBIND)
    shape = t.shape_of(a.input)
    axis = int(a.dim) % len(shape)
    parts = t.graph.node("split", [t.value(a.input)], outputs=shape[axis], axis=axis,
                         split=[1] * shape[axis])
    parts = parts if isinstance(parts, list) else [parts]
    rest = shape[:axis] + shape[axis + 1:]
    return tuple(t.graph.node("reshape", [p], shape=rest) for p in parts)


def concat(t, node):
    args, kwargs = node.args, node.kwargs
    dim = kwargs.get("dim", args[1] if len(args) > 1 else 0)
    axis = int(t.raw(dim)) % len(t.shape_of(node))
    return t.graph.node("concat", [t.value(x) for x in args[0]], axis=axis)


_CUMSUM = signature("input dim dtype", dtype=None)
_DIFF = signature("input n dim prepend append", n=1, dim=-1, prepend=None, append=None)


def cumsum(t, node):
    """torch.cumsum / x.cumsum(dim), in the result's dtype (bools and
    integers sum in int64)."""
    a = t.bind(node, _CUMSUM)
    axis = int(a.dim) % len(t.shape_of(node))
    return t.graph.node("cumsum", [_operand(t, a.input, t.dtype_of(node))], axis=axis)


def diff(t, node):
    """torch.diff(x, n=1, dim, prepend, append): x[1:] - x[:-1] along dim of
    x with prepend before it and append after it."""
    a = t.bind(node, _DIFF)
    if a.n != 1:
        raise Unsupported("diff of order %s" % a.n)
    shape = t.shape_of(node)
    axis = int(a.dim) % len(shape)
    dtype = t.dtype_of(node)
    parts = [_operand(t, x, dtype) for x in (a.prepend, a.input, a.append) if x is not None]
    whole = parts[0] if len(parts) == 1 else t.graph.node("concat", parts, axis=axis)
    length = shape[axis] + 1
    later, earlier = (t.graph.node("slice", [whole], starts=[first], ends=[first + length - 1],
                                   axes=[axis]) for first in (1, 0))
    return t.graph.node("sub", [later, earlier])


def arange(t, node):
    """Positions: a constant for these shapes; where a bound is a symbolic
    size, start + step * (the running count of ones, less one)."""
    bounds = [t.raw(a) for a in node.args] + [
        t.raw(node.kwargs[k]) for k in ("start", "end", "step") if k in node.kwargs]
    dtype = t.dtype_of(node)
    if not any(isinstance(b, SymSize) for b in bounds):
        return t.graph.weight("arange", np.arange(*bounds).astype(dtype))
    start, end, step = (0, bounds[0], 1) if len(bounds) == 1 else (bounds + [1])[:3]
    if not all(is_size(b) for b in (start, end, step)):
        raise Unsupported("arange of symbolic and float bounds")
    positions = _positions(t, t.shape_of(node)[0], dtype)
    return t.graph.node("add", [t.graph.node("mul", [positions, _size_tensor(t, step, dtype)]),
                                _size_tensor(t, start, dtype)])


def _positions(t, count, dtype):
    """0, 1, ..., count - 1 in `dtype`, for a count that may be symbolic:
    the running sum of that many ones, less one."""
    ones = t.graph.node("expand", [t.graph.weight("one", np.ones((), dtype))], shape=[count])
    return t.graph.node("sub", [t.graph.node("cumsum", [ones], axis=0),
                                t.graph.weight("one", np.ones((), dtype))])


# --- attention (nn.MultiheadAttention and nn.TransformerEncoderLayer,
# which torch calls as one function each, and scaled_dot_product_attention:
# decomposed here into loom's linear, matmul, softmax, where and
# layer_norm) ---

def _masked(t, scores, dtype, mask, shape, excluded_where_true):
    """`scores` (of `dtype`) with the FX value `mask` applied, reshaped to
    `shape` (which broadcasts to the scores'): a float mask is added; a
    bool one leaves out (-inf) where it is true (`excluded_where_true`,
    as nn.MultiheadAttention reads it) or where it is false (as
    scaled_dot_product_attention does)."""
    value = t.value(mask)
    if t.shape_of(mask) != list(shape):
        value = t.graph.node("reshape", [value], shape=list(shape))
    if t.dtype_of(mask) != np.bool_:
        return t.graph.node("add", [scores, value])
    minus_infinity = t.graph.weight("minus_inf", np.array([-np.inf], dtype))
    branches = [minus_infinity, scores] if excluded_where_true else [scores, minus_infinity]
    return t.graph.node("where", [value] + branches)


def _attention(t, query, key, value, shapes, heads, in_weight, in_bias, out_weight, out_bias,
               need_weights=False, average_weights=True, masks=()):
    """Attention of loom values in batch-first layout, query [N, L, E] and
    key and value [N, S, E] (`shapes`: the query's and the key's; the
    same name thrice for self-attention), the scores [N, H, L, S] masked
    by each (mask, its shape there) of nn.MultiheadAttention's `masks`:
    (out [N, L, E], the weights [N, L, S] averaged over the heads or
    [N, H, L, S], or None)."""
    (batch, length, embed), source = shapes[0], shapes[1][1]
    heads = int(heads)
    head = embed // heads
    w, b = t.raw(in_weight), t.raw(in_bias)
    if b is None or t.raw(out_bias) is None:
        raise Unsupported("attention without projection biases")
    if query == key == value:  # self-attention: one product for q, k and v
        qkv = t.graph.node("linear", [query, t.graph.weight("w_qkv", w),
                                      t.graph.weight("b_qkv", b)])
        q, k, v = t.graph.node("split", [qkv], outputs=3, axis=-1, split=[embed] * 3)
    else:
        q, k, v = (t.graph.node("linear", [x, t.graph.weight("w_" + part, w[i:i + embed]),
                                           t.graph.weight("b_" + part, b[i:i + embed])])
                   for x, part, i in ((query, "q", 0), (key, "k", embed),
                                      (value, "v", 2 * embed)))

    def split_heads(x, rows, perm):
        return t.graph.node("transpose", [t.graph.node(
            "reshape", [x], shape=[batch, rows, heads, head])], perm=perm)

    # q [N, H, L, D] scaled, k^T [N, H, D, S], v [N, H, S, D].
    scale = t.graph.weight("scale", np.array([head ** -0.5], w.dtype))
    q = t.graph.node("mul", [split_heads(q, length, [0, 2, 1, 3]), scale])
    scores = t.graph.node("matmul", [q, split_heads(k, source, [0, 2, 3, 1])])
    for mask, shape in masks:
        scores = _masked(t, scores, w.dtype, mask, shape, excluded_where_true=True)
    weights = t.graph.node("softmax", [scores], axis=-1)
    context = t.graph.node("matmul", [weights, split_heads(v, source, [0, 2, 1, 3])])
    context = t.graph.node("reshape", [t.graph.node("transpose", [context], perm=[0, 2, 1, 3])],
                           shape=[batch, length, embed])
    out = t.graph.node("linear", [context, t.value(out_weight), t.value(out_bias)])
    if not need_weights:
        return out, None
    if average_weights:
        weights = t.graph.node("reduce_mean", [weights], axes=[1])
    return out, weights


def _unsupported_attention(a):
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


def multi_head_attention(t, node):
    """F.multi_head_attention_forward, sequence first: [L, N, E]."""
    a = t.bind(node, _MULTI_HEAD_ATTENTION)
    reason = _unsupported_attention(a)
    if reason:
        raise Unsupported(reason)
    inputs = [a.query, a.key, a.value]
    names = {}
    for x in inputs:  # each distinct input to batch first, once
        if x not in names:
            names[x] = t.graph.node("transpose", [t.value(x)], perm=[1, 0, 2])
    shapes = [[s[1], s[0], s[2]] for s in (t.shape_of(a.query), t.shape_of(a.key))]
    (batch, length, _), source = shapes[0], shapes[1][1]
    heads = int(a.num_heads)
    masks = []
    if a.attn_mask is not None:  # [L, S] or [N * H, L, S]
        rank = len(t.shape_of(a.attn_mask))
        masks.append((a.attn_mask, [length, source] if rank == 2
                      else [batch, heads, length, source]))
    if a.key_padding_mask is not None:  # [N, S]
        masks.append((a.key_padding_mask, [batch, 1, 1, source]))
    out, weights = _attention(t, *(names[x] for x in inputs), shapes, heads,
                              a.in_proj_weight, a.in_proj_bias, a.out_proj_weight,
                              a.out_proj_bias, a.need_weights, a.average_attn_weights, masks)
    return t.graph.node("transpose", [out], perm=[1, 0, 2]), weights


def scaled_dot_product_attention(t, node):
    """softmax(q k^T * scale + mask) v over the last two dims."""
    a = t.bind(node, _SDPA)
    if a.dropout_p > 0:
        raise Unsupported("attention with dropout")
    q_shape, k_shape = t.shape_of(a.query), t.shape_of(a.key)
    key, value = t.value(a.key), t.value(a.value)
    if a.enable_gqa and q_shape[-3] != k_shape[-3]:  # each key/value head serves a group
        key, value = (_repeat_heads(t, v, s, q_shape[-3]) for v, s in (
            (key, k_shape), (value, t.shape_of(a.value))))
        k_shape = k_shape[:-3] + [q_shape[-3]] + k_shape[-2:]
    length, source, depth = q_shape[-2], k_shape[-2], q_shape[-1]
    scale = t.graph.weight("scale", np.array(
        [a.scale if a.scale is not None else depth ** -0.5], t.dtype_of(a.query)))
    rank = len(k_shape)
    key_t = t.graph.node("transpose", [key],
                         perm=list(range(rank - 2)) + [rank - 1, rank - 2])
    scores = t.graph.node("matmul", [t.graph.node("mul", [t.value(a.query), scale]), key_t])
    if a.is_causal:  # the lower triangle, as torch.ones(L, S).tril()
        scores = _causal(t, scores, length, source, t.dtype_of(a.query))
    if a.attn_mask is not None:
        scores = _masked(t, scores, t.dtype_of(a.query), a.attn_mask, t.shape_of(a.attn_mask),
                         excluded_where_true=False)
    weights = t.graph.node("softmax", [scores], axis=-1)
    return t.graph.node("matmul", [weights, value])


def _causal(t, scores, length, source, dtype):
    """`scores` with -inf above the diagonal: a constant added, or where a
    size is symbolic, chosen by the triangle of the positions."""
    if not any(isinstance(size, SymSize) for size in (length, source)):
        causal = np.where(np.tri(length, source, dtype=bool), 0, -np.inf).astype(dtype)
        return t.graph.node("add", [scores, t.graph.weight("causal", causal)])
    return t.graph.node("where", [_lower_triangle(t, length, source, 0), scores,
                                  t.graph.weight("minus_inf", np.array(-np.inf, dtype))])


def _repeat_heads(t, x, shape, heads):
    """[..., H_kv, S, D] -> [..., heads, S, D], each head repeated in place."""
    *batch, kv, rows, depth = shape
    grouped = t.graph.node("reshape", [x], shape=batch + [kv, 1, rows, depth])
    grouped = t.graph.node("expand", [grouped], shape=batch + [kv, heads // kv, rows, depth])
    return t.graph.node("reshape", [grouped], shape=batch + [heads, rows, depth])


def encoder_layer(t, node):
    """torch._transformer_encoder_layer_fwd, nn.TransformerEncoderLayer's
    inference fast path, batch first: [N, L, E]."""
    a = t.bind(node, _ENCODER_LAYER)
    if a.mask is not None:
        raise Unsupported("an encoder layer with a mask")
    shape = t.shape_of(a.src)
    x = t.value(a.src)

    def norm(y, w, b):
        return t.graph.node("layer_norm", [y, t.value(w), t.value(b)], axis=-1,
                            epsilon=float(a.eps))

    def self_attention(y):
        return _attention(t, y, y, y, [shape, shape], a.num_heads, a.qkv_weight, a.qkv_bias,
                          a.proj_weight, a.proj_bias)[0]

    def feed_forward(y):
        hidden = t.graph.node("linear", [y, t.value(a.ffn_weight_1), t.value(a.ffn_bias_1)])
        hidden = t.graph.node("gelu" if a.use_gelu else "relu", [hidden])
        return t.graph.node("linear", [hidden, t.value(a.ffn_weight_2), t.value(a.ffn_bias_2)])

    if a.norm_first:
        x = t.graph.node("add", [x, self_attention(norm(x, a.norm_weight_1, a.norm_bias_1))])
        return t.graph.node("add", [x, feed_forward(norm(x, a.norm_weight_2, a.norm_bias_2))])
    x = norm(t.graph.node("add", [x, self_attention(x)]), a.norm_weight_1, a.norm_bias_1)
    return norm(t.graph.node("add", [x, feed_forward(x)]), a.norm_weight_2, a.norm_bias_2)


# --- recurrences ---

def _gates(weight, order, hidden):
    """PyTorch's gate blocks in loom's (ONNX's) order."""
    return weight.reshape(len(order), hidden, -1)[order].reshape(weight.shape)


def lstm(t, node):
    return _recurrence(t, node, True, *node.args)


def gru(t, node):
    return _recurrence(t, node, False, *node.args)


def _recurrence(t, node, is_lstm, x, hx, params, has_biases, layers, dropout_p, train,
                bidirectional, batch_first):
    """torch.lstm's or torch.gru's arguments: loom's lstm or gru, a node per
    layer."""
    states = hx if is_lstm else (hx,)
    if not all(isinstance(s, torch.fx.Node) and s.target is torch.zeros for s in states):
        raise Unsupported("%s with a given initial state" % ("lstm" if is_lstm else "gru"))
    if not has_biases:
        raise Unsupported("%s without biases" % ("lstm" if is_lstm else "gru"))
    if train and dropout_p > 0:
        raise Unsupported("a recurrence with dropout in training mode")
    weights = [t.raw(p) for p in params]
    directions = 2 if bidirectional else 1
    per_layer = 4 * directions
    if len(weights) != int(layers) * per_layer:  # e.g. an LSTM's proj_size
        raise Unsupported("a recurrence with %d weights for %d layers" % (len(weights), layers))
    hidden = weights[1].shape[1]
    order = [0, 3, 1, 2] if is_lstm else [1, 0, 2]  # (i,f,g,o) -> (i,o,f,c); (r,z,n) -> (z,r,h)
    shape = t.shape_of(x)
    batch, seq = (shape[0], shape[1]) if batch_first else (shape[1], shape[0])
    y = t.value(x)
    finals_h, finals_c = [], []
    for layer in range(int(layers)):
        w, r, b = [], [], []
        for d in range(directions):
            w_ih, w_hh, b_ih, b_hh = weights[layer * per_layer + 4 * d:][:4]
            w.append(_gates(w_ih, order, hidden))
            r.append(_gates(w_hh, order, hidden))
            b.append(np.concatenate([_gates(b_ih, order, hidden), _gates(b_hh, order, hidden)]))
        inputs = [y, t.graph.weight("W", np.stack(w)), t.graph.weight("R", np.stack(r)),
                  t.graph.weight("B", np.stack(b))]
        attrs = dict(hidden_size=int(hidden), layout=1 if batch_first else 0,
                     direction="bidirectional" if bidirectional else "forward")
        if not is_lstm:
            attrs["linear_before_reset"] = 1
        outs = t.graph.node("lstm" if is_lstm else "gru", inputs, outputs=3 if is_lstm else 2,
                            **attrs)
        finals_h.append(outs[1])
        if is_lstm:
            finals_c.append(outs[2])
        # Y: [batch, seq, dirs, hidden] (layout 1) or [seq, dirs, batch, hidden].
        seq_out = outs[0]
        if not batch_first:
            seq_out = t.graph.node("transpose", [seq_out], perm=[0, 2, 1, 3])
        y = t.graph.node("reshape", [seq_out],
                         shape=[batch, seq, directions * hidden] if batch_first
                         else [seq, batch, directions * hidden])

    def stacked(finals):
        # Y_h: [batch, dirs, hidden] (layout 1) or [dirs, batch, hidden]:
        # PyTorch's h_n is [layers * dirs, batch, hidden].
        axis = 1 if batch_first else 0
        v = finals[0] if len(finals) == 1 else t.graph.node("concat", finals, axis=axis)
        return t.graph.node("transpose", [v], perm=[1, 0, 2]) if batch_first else v

    # torch.lstm's results are (output, h_n, c_n); torch.gru's (output, h_n).
    return (y, stacked(finals_h), stacked(finals_c)) if is_lstm else (y, stacked(finals_h))


# --- the table ---

# Functions of one tensor that are loom ops of their name, as torch
# functions and as tensor methods.
_UNARY = ("relu", "tanh", "sigmoid", "exp", "neg", "rsqrt", "sqrt", "cos", "sin", "abs", "log",
          "erf", "reciprocal", "floor", "ceil")

# Every target the translation knows, and its translator: torch functions
# (call_function nodes) and tensor methods by name (call_method nodes). dynamo
# inlines modules' forward into these; a module it leaves whole (a
# call_module node) is refused.
OPS = {
    # Convolutions and pools.
    torch.conv1d: conv, torch.conv2d: conv, torch.conv3d: conv,
    torch.conv_transpose1d: conv_transpose, torch.conv_transpose2d: conv_transpose,
    torch.conv_transpose3d: conv_transpose, torch.convolution: convolution,
    F.max_pool1d: partial(max_pool, dims=1), F.max_pool2d: partial(max_pool, dims=2),
    F.max_pool3d: partial(max_pool, dims=3),
    torch.max_pool1d: partial(max_pool, dims=1), torch.max_pool2d: partial(max_pool, dims=2),
    torch.max_pool3d: partial(max_pool, dims=3),
    F.avg_pool1d: partial(avg_pool, dims=1), F.avg_pool2d: partial(avg_pool, dims=2),
    F.avg_pool3d: partial(avg_pool, dims=3),
    F.adaptive_avg_pool1d: partial(adaptive_avg_pool, dims=1),
    F.adaptive_avg_pool2d: partial(adaptive_avg_pool, dims=2),
    F.adaptive_avg_pool3d: partial(adaptive_avg_pool, dims=3),
    # Normalisation, lookup, padding, resizing.
    F.batch_norm: batch_norm, F.group_norm: group_norm, F.layer_norm: layer_norm,
    F.rms_norm: rms_norm, torch.rms_norm: rms_norm,
    F.embedding: embedding, F.pad: pad, torch._C._nn.pad: pad, F.interpolate: interpolate,
    # Pointwise ops and activations.
    **{getattr(torch, op): partial(pointwise, op=op) for op in _UNARY},
    **{op: partial(pointwise, op=op) for op in _UNARY},  # the methods
    F.relu: partial(pointwise, op="relu"), operator.neg: partial(pointwise, op="neg"),
    F.silu: partial(pointwise, op="silu"), F.gelu: gelu,
    F.leaky_relu: partial(activation, op="leaky_relu", parameters=_WITH_NEGATIVE_SLOPE,
                          attributes=lambda a: dict(alpha=float(a.negative_slope))),
    F.elu: partial(activation, op="elu", parameters=_WITH_ALPHA,
                   attributes=lambda a: dict(alpha=float(a.alpha))),
    F.hardtanh: partial(activation, op="clip", parameters=_WITH_BOUNDS,
                        attributes=lambda a: dict(min=float(a.min_val), max=float(a.max_val))),
    F.relu6: partial(activation, op="clip", parameters=_INPUT_ONLY,
                     attributes=lambda a: dict(min=0.0, max=6.0)),
    F.hardswish: partial(activation, op="hard_swish", parameters=_INPUT_ONLY,
                         attributes=lambda a: {}),
    F.hardsigmoid: partial(activation, op="hard_sigmoid", parameters=_INPUT_ONLY,
                           attributes=lambda a: dict(alpha=1 / 6, beta=0.5)),
    torch.softmax: partial(softmax, op="softmax"), F.softmax: partial(softmax, op="softmax"),
    torch.log_softmax: partial(softmax, op="log_softmax"),
    F.log_softmax: partial(softmax, op="log_softmax"),
    F.dropout: dropout,
    torch.masked_fill: masked_fill, "masked_fill": masked_fill,
    "masked_fill_": masked_fill_in_place,
    # Arithmetic and products.
    operator.add: partial(binary, op="add"), torch.add: partial(binary, op="add"),
    operator.sub: partial(binary, op="sub"), torch.sub: partial(binary, op="sub"),
    operator.mul: partial(binary, op="mul"), torch.mul: partial(binary, op="mul"),
    operator.truediv: partial(binary, op="div"), torch.div: partial(binary, op="div"),
    operator.iadd: partial(binary, op="add", in_place=True),
    operator.isub: partial(binary, op="sub", in_place=True),
    operator.imul: partial(binary, op="mul", in_place=True),
    operator.itruediv: partial(binary, op="div", in_place=True),
    operator.pow: partial(binary, op="pow"), torch.pow: partial(binary, op="pow"),
    "pow": partial(binary, op="pow"), operator.floordiv: partial(binary, op="floor_div"),
    operator.mod: partial(binary, op="mod"),
    torch.minimum: partial(binary, op="minimum"), torch.maximum: partial(binary, op="maximum"),
    torch.min: partial(binary, op="minimum"), torch.max: partial(binary, op="maximum"),
    operator.gt: partial(compare, op="greater"), torch.gt: partial(compare, op="greater"),
    operator.lt: partial(compare, op="greater", swap=True),
    torch.lt: partial(compare, op="greater", swap=True),
    operator.le: partial(compare, op="less_equal"), torch.le: partial(compare, op="less_equal"),
    operator.ge: partial(compare, op="less_equal", swap=True),
    torch.ge: partial(compare, op="less_equal", swap=True),
    operator.eq: partial(compare, op="equal"), torch.eq: partial(compare, op="equal"),
    operator.ne: partial(compare, op="not_equal"), torch.ne: partial(compare, op="not_equal"),
    operator.and_: partial(logical, op="and"), torch.logical_and: partial(logical, op="and"),
    operator.or_: partial(logical, op="or"), torch.logical_or: partial(logical, op="or"),
    torch.where: where,
    operator.matmul: matmul, torch.matmul: matmul, torch.bmm: matmul, torch.mm: matmul,
    "matmul": matmul, F.linear: linear, torch.addmm: addmm,
    torch.mean: partial(reduction, op="reduce_mean"), "mean": partial(reduction, op="reduce_mean"),
    torch.sum: partial(reduction, op="reduce_sum"), "sum": partial(reduction, op="reduce_sum"),
    # Casts, and calls loom has nothing to compute for.
    "to": cast, "float": cast, "double": cast, "long": cast, "int": cast, "bool": cast,
    "type_as": cast, torch._C._log_api_usage_once: no_op,
    # Shapes and views.
    torch.flatten: reshape, torch.reshape: reshape, torch.unsqueeze: reshape,
    torch.squeeze: reshape, "view": reshape, "reshape": reshape, "flatten": reshape,
    "unsqueeze": reshape, "squeeze": reshape,
    "expand": expand, "contiguous": contiguous, "permute": permute, "transpose": transpose,
    torch.permute: permute, torch.transpose: transpose, "unbind": unbind, torch.unbind: unbind,
    torch.cumsum: cumsum, "cumsum": cumsum, torch.diff: diff,
    "size": size, torch.Size: make_size, torch.sym_sum: sym_sum, "item": item,
    torch.sym_float: partial(sym_math, fn=float), torch.sym_int: partial(sym_math, fn=int),
    operator.not_: partial(sym_math, fn=operator.not_),
    torch.gather: gather, "gather": gather,
    torch.triu: partial(triangle, upper=True), torch.tril: partial(triangle, upper=False),
    torch.split: split, torch.chunk: split, "split": split, "chunk": split,
    operator.getitem: getitem, torch.Tensor.__getitem__: getitem,
    torch.cat: concat, torch.concat: concat,
    getattr(torch, "concatenate", torch.cat): concat,  # older torch has no concatenate
    # Constants.
    torch.zeros: partial(constant, fill=0), torch.zeros_like: partial(constant, fill=0),
    torch.arange: arange,
    torch.ones_like: partial(constant, fill=1), torch.ones: partial(constant, fill=1),
    "new_ones": partial(constant, fill=1), "new_zeros": partial(constant, fill=0),
    torch.full: partial(constant, position=1), torch.full_like: partial(constant, position=1),
    "new_full": partial(constant, position=2),
    # Attention.
    F.multi_head_attention_forward: multi_head_attention,
    F.scaled_dot_product_attention: scaled_dot_product_attention,
    torch._transformer_encoder_layer_fwd: encoder_layer,
    # Recurrences.
    torch.lstm: lstm, torch.gru: gru,
}
if hasattr(torch, "_sym_sqrt"):  # dynamo's square root of a symbolic size
    OPS[torch._sym_sqrt] = partial(sym_math, fn=math.sqrt)
