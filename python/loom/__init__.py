"""loom from Python: compile a model (or load a compiled one) and run it on
numpy arrays.

    import loom
    m = loom.compile("model.onnx")       # or loom.load("D/model.loom")
    outputs = m.run({"x": x})            # {name: numpy array}; or y = m(x)
    d = loom.compile("bert.onnx", dims={"batch": (1, 64), "seq": (1, 512)})
    outputs = d.run({"input_ids": ids})  # any batch and seq within the bounds
    d = loom.load("D/model.loom")        # `loom compile --dims=batch=1..64,seq=1..512 --out_dir=D`

Over loom's C interface (runtime/loom_c.h) in libloom.so, found at
$LOOM_LIBRARY, else beside this package. Errors are loom.Error with loom's
message (loom.InvalidArgumentError, also a ValueError, for a bad model or
tensor).
"""

import collections
import ctypes
import functools
import math
import os
import threading
from typing import NamedTuple, Optional

import numpy as np

__all__ = ["DynamicModel", "Error", "InvalidArgumentError", "Model", "Reference", "compile",
           "load"]


class Error(Exception):
    """A failed loom call; `status` is loom_c.h's loom_status."""

    def __init__(self, message, status):
        super().__init__(message)
        self.status = status


class InvalidArgumentError(Error, ValueError):
    """A bad model file, artifact or tensor: the caller's to fix."""


_INVALID_ARGUMENT = 1

class _DType(NamedTuple):
    """One of loom's dtypes: loom's name for it (graph text writes it in
    capitals: F32), numpy's own dtype for it or, for a type numpy lacks,
    ml_dtypes' name and the bits that stand for it without ml_dtypes, and
    torch's name for it (torch.float32) where the torch.compile backend
    passes it to and from torch: not the unsigned types wider than a byte,
    which torch added in 2.3 as "barebones" types that most of its ops
    refuse."""
    name: str
    builtin: Optional[np.dtype]
    torch: Optional[str] = None
    ml_name: Optional[str] = None
    bits: Optional[type] = None

    @property
    def numpy(self):
        """numpy's dtype: ml_dtypes' is imported at its first use, not with
        loom (its import takes 0.6 s)."""
        return self.builtin if self.builtin is not None else _ml_dtype(self.ml_name, self.bits)


@functools.lru_cache(maxsize=None)
def _ml_dtype(name, bits):
    """numpy's dtype for a type numpy lacks (bfloat16, the 8- and 4-bit
    floats, the 4- and 2-bit integers, one element a byte as loom holds
    them): ml_dtypes' `name` where it is installed, else the bits as a
    one-field record (so that it is not an integer type)."""
    try:
        import ml_dtypes
        return np.dtype(getattr(ml_dtypes, name))
    except ImportError:
        return np.dtype([(name + "_bits", bits)])


def _ml_type(name, ml_name, bits):
    """One of loom's dtypes that numpy lacks."""
    return _DType(name, None, ml_name=ml_name, bits=bits)


# The one list of loom's dtypes, in loom_c.h's order: a dtype's position is
# its loom_dtype value.
_DTYPES = [
    _DType("f32", np.dtype(np.float32), "float32"),
    _DType("f64", np.dtype(np.float64), "float64"),
    _DType("i32", np.dtype(np.int32), "int32"),
    _DType("i64", np.dtype(np.int64), "int64"),
    _DType("bool", np.dtype(np.bool_), "bool"),
    _DType("i8", np.dtype(np.int8), "int8"),
    _DType("i16", np.dtype(np.int16), "int16"),
    _DType("u8", np.dtype(np.uint8), "uint8"),
    _DType("u16", np.dtype(np.uint16)),
    _DType("u32", np.dtype(np.uint32)),
    _DType("u64", np.dtype(np.uint64)),
    _DType("f16", np.dtype(np.float16)),
    _ml_type("bf16", "bfloat16", np.uint16),
    _ml_type("f8e4m3fn", "float8_e4m3fn", np.uint8),
    _ml_type("f8e4m3fnuz", "float8_e4m3fnuz", np.uint8),
    _ml_type("f8e5m2", "float8_e5m2", np.uint8),
    _ml_type("f8e5m2fnuz", "float8_e5m2fnuz", np.uint8),
    _ml_type("f8e8m0", "float8_e8m0fnu", np.uint8),
    _ml_type("f4e2m1", "float4_e2m1fn", np.uint8),
    _ml_type("i4", "int4", np.int8),
    _ml_type("u4", "uint4", np.uint8),
    _ml_type("i2", "int2", np.int8),
    _ml_type("u2", "uint2", np.uint8),
]
_BUILTIN_INDEX = {d.builtin: i for i, d in enumerate(_DTYPES) if d.builtin is not None}


def _dtype_index(dtype):
    """The loom_dtype value of numpy's `dtype`, or None where loom has no
    such type. ml_dtypes' types (numpy's kind "V", as are the records that
    stand for them) are looked for only among those, so that an array of
    numpy's own types never imports ml_dtypes."""
    try:
        dtype = np.dtype(dtype)
    except TypeError:
        return None
    index = _BUILTIN_INDEX.get(dtype)
    if index is None and dtype.kind == "V":
        index = next((i for i, d in enumerate(_DTYPES) if d.builtin is None and d.numpy == dtype),
                     None)
    return index


def _numpy_dtype_named(name):
    """numpy's dtype named `name` (numpy's names, and ml_dtypes' for loom's
    types that numpy lacks: "bfloat16"); TypeError where there is none."""
    try:
        return np.dtype(name)
    except TypeError:
        found = next((d for d in _DTYPES if d.ml_name == name), None)
        if found is None:
            raise
        return found.numpy


class _Tensor(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("dtype", ctypes.c_int), ("rank", ctypes.c_int),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("data", ctypes.c_void_p)]


class _DimBounds(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("min", ctypes.c_int64), ("max", ctypes.c_int64)]


def _library_path():
    path = os.environ.get("LOOM_LIBRARY")
    if path:
        return path
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "libloom.so")


_lib = None


def _library():
    global _lib
    if _lib is None:
        path = _library_path()
        try:
            lib = ctypes.CDLL(path)
        except OSError as e:
            raise Error("loom cannot load %s (%s): install the package with pip install "
                        "./python, which builds it, or set LOOM_LIBRARY to a built "
                        "libloom.so" % (path, e), 0) from None
        handle = ctypes.POINTER(ctypes.c_void_p)
        lib.loom_last_error.restype = ctypes.c_char_p
        lib.loom_model_load.argtypes = [ctypes.c_char_p, ctypes.POINTER(handle)]
        lib.loom_model_compile.argtypes = [ctypes.c_char_p, ctypes.c_char_p,
                                           ctypes.POINTER(handle)]
        lib.loom_model_compile_with_dims.argtypes = [
            ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_char_p),
            ctypes.POINTER(ctypes.c_int64), ctypes.c_int, ctypes.POINTER(handle)]
        lib.loom_model_compile_for_inputs.argtypes = [
            ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(_DimBounds), ctypes.c_int,
            ctypes.POINTER(_Tensor), ctypes.c_int, ctypes.POINTER(handle)]
        lib.loom_model_compile_every_shape.argtypes = [
            ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(_DimBounds), ctypes.c_int,
            ctypes.c_char_p, ctypes.POINTER(handle)]
        lib.loom_model_free.argtypes = [handle]
        lib.loom_model_free.restype = None
        for count in (lib.loom_model_num_inputs, lib.loom_model_num_outputs,
                      lib.loom_model_num_launches):
            count.argtypes = [handle]
        for describe in (lib.loom_model_input, lib.loom_model_output):
            describe.argtypes = [handle, ctypes.c_int, ctypes.POINTER(ctypes.c_char_p),
                                 ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_int),
                                 ctypes.POINTER(ctypes.POINTER(ctypes.c_int64))]
        for run in (lib.loom_model_run, lib.loom_model_reference_run, lib.loom_reference_run):
            run.argtypes = [handle, ctypes.POINTER(_Tensor), ctypes.c_int,
                            ctypes.POINTER(_Tensor), ctypes.c_int]
        lib.loom_model_bind.argtypes = [handle, ctypes.POINTER(_Tensor), ctypes.c_int,
                                        ctypes.POINTER(handle)]
        lib.loom_model_input_dim_name.argtypes = [handle, ctypes.c_int, ctypes.c_int,
                                                  ctypes.POINTER(ctypes.c_char_p)]
        lib.loom_reference_load.argtypes = [ctypes.c_char_p, ctypes.POINTER(handle)]
        lib.loom_reference_free.argtypes = [handle]
        lib.loom_reference_free.restype = None
        _lib = lib
    return _lib


def _check(status):
    if status != 0:
        message = _library().loom_last_error().decode()
        error = InvalidArgumentError if status == _INVALID_ARGUMENT else Error
        raise error(message, status)


_ALIGNED_FROM_BYTES = 1 << 16


def _output_array(shape, dtype):
    """A new output array; a large one 64-byte aligned, which loom writes in
    place (a small one it copies into, which costs less than aligning)."""
    size = math.prod(shape) * dtype.itemsize
    if size < _ALIGNED_FROM_BYTES:
        return np.empty(shape, dtype)
    raw = np.empty(size + 64, dtype=np.uint8)
    start = (-raw.ctypes.data) % 64
    return raw[start:start + size].view(dtype).reshape(shape)


class _Plan:
    """The C structs of a call with given input names, in that order, and of
    the outputs ((name, numpy dtype, shape) each)."""

    def __init__(self, outputs, names):
        self.names = [str(n).encode() for n in names]
        self.inputs = (_Tensor * max(len(names), 1))()
        self.types = [None] * len(names)
        self.shapes = [None] * len(names)
        self.outputs = (_Tensor * max(len(outputs), 1))()
        self.output_shapes = []
        for i, (name, dtype, shape) in enumerate(outputs):
            encoded = name.encode()
            dims = (ctypes.c_int64 * max(len(shape), 1))(*shape)
            self.output_shapes.append((encoded, dims))  # alive as long as the structs
            self.outputs[i] = _Tensor(encoded, _dtype_index(dtype), len(shape), dims, None)

    def set_type(self, i, dtype, shape):
        """Input i's type, if it is not that already."""
        if self.types[i] != (dtype, shape):
            index = _dtype_index(dtype)
            if index is None:
                raise InvalidArgumentError(
                    "input '%s' is %s, which loom has no type for (it has %s)" % (
                        self.names[i].decode(), dtype, ", ".join(d.name for d in _DTYPES)),
                    _INVALID_ARGUMENT)
            self.shapes[i] = (ctypes.c_int64 * max(len(shape), 1))(*shape)
            self.types[i] = (dtype, shape)
            self.inputs[i] = _Tensor(self.names[i], index, len(shape), self.shapes[i], None)

    def bind_input(self, i, array):
        self.set_type(i, array.dtype, array.shape)
        self.inputs[i].data = array.ctypes.data


class RawCall:
    """Model.raw_call's: runs the model on memory its caller owns."""

    def __init__(self, model, inputs):
        self._model = model
        self._plan = _Plan(model.outputs, [name for name, _, _ in inputs])
        for i, (_, dtype, shape) in enumerate(inputs):
            self._plan.set_type(i, np.dtype(dtype), tuple(shape))
        self._count = len(inputs)

    def __call__(self, input_addresses, output_addresses):
        """Runs on the inputs at these addresses, writing the outputs at those."""
        plan = self._plan
        for i, address in enumerate(input_addresses):
            plan.inputs[i].data = address
        for i, address in enumerate(output_addresses):
            plan.outputs[i].data = address
        model = self._model
        if model._handle is None:
            raise Error("the model was closed", 0)
        _check(_library().loom_model_run(model._handle, plan.inputs, self._count, plan.outputs,
                                         len(model.outputs)))


class Model:
    """A compiled model. `inputs` and `outputs` are lists of (name, numpy
    dtype, shape), `launches` how many kernel launches a run makes; calls may
    come from several threads at once."""

    def __init__(self, handle):
        self._handle = handle
        lib = _library()
        self.inputs = [self._describe(lib.loom_model_input, i)
                       for i in range(lib.loom_model_num_inputs(handle))]
        self.outputs = [self._describe(lib.loom_model_output, i)
                        for i in range(lib.loom_model_num_outputs(handle))]
        self.launches = lib.loom_model_num_launches(handle)
        self._plans = threading.local()

    def _describe(self, function, index):
        name, dtype, rank = ctypes.c_char_p(), ctypes.c_int(), ctypes.c_int()
        shape = ctypes.POINTER(ctypes.c_int64)()
        _check(function(self._handle, index, ctypes.byref(name), ctypes.byref(dtype),
                        ctypes.byref(rank), ctypes.byref(shape)))
        return (name.value.decode(), _DTYPES[dtype.value].numpy,
                tuple(shape[i] for i in range(rank.value)))

    def run(self, feeds):
        """Runs on `feeds` ({input name: array}); returns {output name: array}."""
        return self._call(_library().loom_model_run, feeds)

    def raw_call(self, inputs):
        """A call for memory the caller owns, as a binding that keeps its own
        arrays does (the torch.compile backend): `inputs` lists (name, numpy
        dtype, shape) of the inputs it passes, in order; the RawCall then
        takes the addresses of contiguous inputs of those types and of
        buffers for the outputs (self.outputs; 64-byte aligned to be
        written in place, else written through a copy). A wrong type is
        refused as in run(); the addresses are the caller's to keep valid."""
        return RawCall(self, inputs)

    def reference(self, feeds):
        """What run() computes, by loom's reference interpreter (what `loom
        run --check` compares with); compiled models only."""
        return self._call(_library().loom_model_reference_run, feeds)

    def __call__(self, *arrays):
        """The outputs for the inputs in order: one array, or a tuple."""
        if len(arrays) != len(self.inputs):
            raise InvalidArgumentError(
                "the model takes %d inputs (%s), got %d" % (
                    len(self.inputs), ", ".join(n for n, _, _ in self.inputs), len(arrays)),
                _INVALID_ARGUMENT)
        results = self.run({name: a for (name, _, _), a in zip(self.inputs, arrays)})
        values = tuple(results[name] for name, _, _ in self.outputs)
        return values[0] if len(values) == 1 else values

    def _call(self, function, feeds):
        if self._handle is None:
            raise Error("the model was closed", 0)
        # The C structs of the last call from this thread with these names,
        # reused: only the data pointers change while the types do.
        plans = self._plans.__dict__
        plan = plans.get(tuple(feeds))
        if plan is None:
            plan = plans[tuple(feeds)] = _Plan(self.outputs, list(feeds))
        keep = []  # arrays the structs point into, alive for the call
        for i, value in enumerate(feeds.values()):
            array = value if isinstance(value, np.ndarray) else np.asarray(value)
            if not array.flags.c_contiguous:
                array = np.ascontiguousarray(array)
            keep.append(array)
            plan.bind_input(i, array)
        results = {}
        for i, (name, dtype, shape) in enumerate(self.outputs):
            results[name] = _output_array(shape, dtype)
            plan.outputs[i].data = results[name].ctypes.data
        _check(function(self._handle, plan.inputs, len(feeds), plan.outputs, len(self.outputs)))
        return results

    def close(self):
        """Frees the model now (else when it is collected)."""
        if self._handle is not None:
            self._free(self._handle)
            self._handle = None

    @staticmethod
    def _free(handle):
        _library().loom_model_free(handle)

    def __del__(self):
        try:
            self.close()
        except Exception:  # the interpreter is shutting down
            pass


class Reference(Model):
    """A model file run by loom's reference interpreter alone (plain loops
    in double: slow), with no native compile; `outputs` lists the (name,
    numpy dtype, shape) wanted."""

    def __init__(self, model_path, outputs):
        self._handle = ctypes.POINTER(ctypes.c_void_p)()
        _check(_library().loom_reference_load(os.fsencode(model_path), ctypes.byref(self._handle)))
        self.outputs = list(outputs)
        self._plans = threading.local()

    def run(self, feeds):
        """Runs on `feeds` ({input name: array}); returns {output name: array}."""
        return self._call(_library().loom_reference_run, feeds)

    def reference(self, feeds):
        return self.run(feeds)

    @staticmethod
    def _free(handle):
        _library().loom_reference_free(handle)


def _open(function, *args):
    handle = ctypes.POINTER(ctypes.c_void_p)()
    _check(function(*args, ctypes.byref(handle)))
    return Model(handle)


class DynamicModel:
    """A model whose named dims take their sizes from each call's inputs:
    a model file compiled with bounds (loom.compile), or an artifact
    compiled for every shape within them (loom.load of what `loom compile
    --dims=NAME=MIN..MAX --out_dir=D` wrote). run() binds the dims from the
    arrays' shapes, checks that inputs sharing a dim agree and that each
    size lies within its bounds (else loom.InvalidArgumentError naming the
    input, the dim and the bound; nothing runs), and runs the Model for
    those shapes. Each new set of shapes compiles the front end again (a
    model file's kernels come from the cache when a shape was compiled
    before, an artifact's from the artifact); the last MAX_SHAPES are
    kept. An artifact's `inputs` and `outputs` list (name, numpy dtype,
    shape), -1 where the size is the call's, and `dims` each input's dims'
    names ("" for a size of its own)."""

    MAX_SHAPES = 8

    def __init__(self, model_path, pipeline, bounds):
        self._path = os.fsencode(model_path)
        self._pipeline = pipeline.encode()
        self._names = [str(n).encode() for n in bounds]  # alive with the structs
        self._bounds = (_DimBounds * max(len(bounds), 1))(*(
            _DimBounds(name, low, high) for name, (low, high) in zip(self._names,
                                                                      bounds.values())))
        self._count = len(bounds)
        self._artifact = None
        self._last = None  # (the last call's arrays' names, shapes and types, its model)
        self._models = collections.OrderedDict()  # by input shapes, least recently used first
        self._lock = threading.Lock()
        self.compiles = 0  # how many shapes were compiled

    @classmethod
    def _of_artifact(cls, model):
        """The DynamicModel of a loaded artifact compiled for every shape."""
        self = cls.__new__(cls)
        self._artifact = model
        self._last = None
        self._models = collections.OrderedDict()
        self._lock = threading.Lock()
        self.compiles = 0
        self.inputs, self.outputs = model.inputs, model.outputs
        lib = _library()
        name = ctypes.c_char_p()
        self.dims = {}
        for index, (input_name, _, shape) in enumerate(model.inputs):
            names = []
            for axis in range(len(shape)):
                _check(lib.loom_model_input_dim_name(model._handle, index, axis,
                                                     ctypes.byref(name)))
                names.append(name.value.decode())
            self.dims[input_name] = tuple(names)
        return self

    def model_for(self, feeds):
        """The Model for the shapes and types of `feeds` ({name: array})."""
        # The last call's model when the arrays' shapes and types are the
        # same, in the same order: a steady caller's, without the lock.
        if not all(isinstance(value, np.ndarray) for value in feeds.values()):
            return self._model_for(feeds)
        quick = tuple((name, value.shape, value.dtype) for name, value in feeds.items())
        last = self._last
        if last is not None and last[0] == quick:
            return last[1]
        model = self._model_for(feeds)
        self._last = (quick, model)
        return model

    def _model_for(self, feeds):
        arrays = {name: value if isinstance(value, np.ndarray) else np.asarray(value)
                  for name, value in feeds.items()}
        key = tuple((name, a.dtype.str, a.shape) for name, a in sorted(arrays.items()))
        with self._lock:
            model = self._models.get(key)
            if model is not None:
                self._models.move_to_end(key)
                return model
        model = self._compile(arrays)
        with self._lock:
            self._models[key] = model
            self.compiles += 1
            while len(self._models) > self.MAX_SHAPES:
                self._models.popitem(last=False)
        return model

    def run(self, feeds):
        """Runs on `feeds` ({input name: array}); returns {output name: array}."""
        return self.model_for(feeds).run(feeds)

    def reference(self, feeds):
        """What run() computes, by loom's reference interpreter."""
        return self.model_for(feeds).reference(feeds)

    def _compile(self, arrays):
        return self.compile_shapes([(name, array.dtype, array.shape)
                                    for name, array in arrays.items()])

    def compile_shapes(self, inputs):
        """The Model for inputs of these types and shapes, [(name, numpy
        dtype, shape)], compiled now and not kept (run() keeps the last
        MAX_SHAPES): for a caller that keeps its own."""
        plan = _Plan([], [name for name, _, _ in inputs])
        for i, (_, dtype, shape) in enumerate(inputs):
            plan.set_type(i, np.dtype(dtype), tuple(shape))
        if self._artifact is not None:
            return _open(_library().loom_model_bind, self._artifact._handle, plan.inputs,
                         len(inputs))
        return _open(_library().loom_model_compile_for_inputs, self._path, self._pipeline,
                     self._bounds, self._count, plan.inputs, len(inputs))


def compile(model_path, pipeline="cpu", dims=None, out_dir=None):
    """Compiles a model file (.onnx, or loom's .pbtxt graph) for this CPU.

    dims: a model's named input dims, each a size, e.g.
    {"batch_size": 1, "sequence_length": 128}, or bounds (min, max), e.g.
    {"batch_size": (1, 64)}. With bounds the result is a DynamicModel,
    which takes those dims' sizes from each call's inputs; else a Model.
    A DynamicModel compiles each new shape's kernels when it meets it; with
    out_dir, the model is compiled for every shape within the bounds at
    once into out_dir/model.loom (the artifact loom.load loads), and no
    later shape needs a native compile.
    """
    dims = dict(dims or {})
    if any(isinstance(v, (tuple, list)) for v in dims.values()):
        bounds = {}
        for name, value in dims.items():
            low, high = value if isinstance(value, (tuple, list)) else (value, value)
            bounds[name] = (int(low), int(high))
        if out_dir is None:
            return DynamicModel(model_path, pipeline, bounds)
        names = [str(n).encode() for n in bounds]
        structs = (_DimBounds * max(len(bounds), 1))(*(
            _DimBounds(name, low, high) for name, (low, high) in zip(names, bounds.values())))
        model = _open(_library().loom_model_compile_every_shape, os.fsencode(model_path),
                      pipeline.encode(), structs, len(bounds), os.fsencode(out_dir))
        return DynamicModel._of_artifact(model)
    names = (ctypes.c_char_p * len(dims))(*(str(n).encode() for n in dims))
    sizes = (ctypes.c_int64 * len(dims))(*(int(v) for v in dims.values()))
    return _open(_library().loom_model_compile_with_dims, os.fsencode(model_path),
                 pipeline.encode(), names, sizes, len(dims))


def load(artifact_path):
    """Loads a compiled model (`loom compile --out_dir=D` writes D/model.loom):
    a Model, or a DynamicModel where it was compiled for every shape within
    its dims' bounds (`--dims=NAME=MIN..MAX`)."""
    model = _open(_library().loom_model_load, os.fsencode(artifact_path))
    if any(size < 0 for _, _, shape in model.inputs for size in shape):
        return DynamicModel._of_artifact(model)
    return model
