"""loom against the peers a user would pick instead, in the same run.

For every case, loom (its command line: `loom run --iters=N --report=R.json`)
and each peer that is installed -- OpenBLAS through numpy (matmul cases),
PyTorch eager, PyTorch Inductor (torch.compile), ONNX Runtime (on the case's
ONNX export from torch) and JAX (jax.jit, for the cases written for it) --
are timed in alternation: each of R rounds runs loom once (one process, the
median of its N timed runs after compile) and then each peer once (N timed
calls after a warm-up, their median). The table reports each one's median
over the rounds, the fastest peer and loom's time over it. Before the rounds,
one untimed `loom run --check` compares loom's outputs with its reference.

Every library uses 2 threads. Run it through run.sh, which sets up the
environment PyPI's torch wheel needs; progress goes to stderr, the tables to
stdout.
"""

import os

THREADS = 2
SETTLE_S = 0.2  # idle time before each timed measurement (settle())
# Before numpy, torch or jax load their thread pools.
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = str(THREADS)

import argparse
import ast
import contextlib
import ctypes
import dataclasses
import importlib.util
import json
import math
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from typing import Callable

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
WARMUP_CALLS = 3
LOOM_TIMEOUT_S = 900
SEED = 0

# --isa=avx2: each library held to AVX2 and FMA, so that an AVX-512 machine
# stands in for an AVX2 one such as AMD Zen 3 (its caches, memory and clock
# stay its own). run.sh preloads hide_avx512.c, which hides AVX-512 from
# CPUID, so that every library that looks sees an AVX2 machine; the switches
# below hold the libraries that have one even where the CPU cannot fault on
# CPUID. Without that, ONNX Runtime's MLAS (no switch) and JAX's products
# (YNNPACK's AVX-512 kernels whatever XLA_FLAGS says, seen with perf) keep
# AVX-512, and are shown but left out of the ratio.
AVX2_MARCH = "haswell"  # loom's kernels: cpp { march } in its pipeline
AVX2_ENV = {
    "ATEN_CPU_CAPABILITY": "avx2",  # torch eager's kernels and Inductor's vector ISA
    "TORCHINDUCTOR_CPP_MARCH": AVX2_MARCH,  # Inductor's -march (native by default)
    "ONEDNN_MAX_CPU_ISA": "AVX2",  # oneDNN, torch's and loom's
    "DNNL_MAX_CPU_ISA": "AVX2",  # its older name
    "MKL_ENABLE_INSTRUCTIONS": "AVX2",  # torch's GEMMs
    "OPENBLAS_CORETYPE": "Haswell",  # numpy's GEMMs, and loom's of wide row-major weights
    "BLIS_ARCH_TYPE": AVX2_MARCH,  # loom's other GEMMs of 2^24 multiply-adds or more
}


def log(message):
    print(message, file=sys.stderr, flush=True)


# ---------------------------------------------------------------- graph text


def read_text_proto(path):
    """Parses a protobuf text file into nested dicts: field -> list of values."""
    with open(path) as f:
        tokens = re.findall(r'"(?:[^"\\]|\\.)*"|#[^\n]*|[{}\[\]:,]|[^\s{}\[\]:,"#]+', f.read())
    tokens = [t for t in tokens if not t.startswith("#")] + [None]
    message, _ = _parse_message(tokens, 0, None)
    return message


def _parse_message(tokens, pos, end):
    message = {}
    while tokens[pos] != end:
        values = message.setdefault(tokens[pos], [])
        pos += 1
        if tokens[pos] == ":":
            pos += 1
        if tokens[pos] == "{":
            value, pos = _parse_message(tokens, pos + 1, "}")
            values.append(value)
        elif tokens[pos] == "[":
            pos += 1
            while tokens[pos] != "]":
                if tokens[pos] != ",":
                    values.append(_scalar(tokens[pos]))
                pos += 1
            pos += 1
        else:
            values.append(_scalar(tokens[pos]))
            pos += 1
    return message, pos + 1


def _scalar(token):
    if token.startswith('"'):
        return ast.literal_eval(token)
    for kind in (int, float):
        try:
            return kind(token)
        except ValueError:
            pass
    return token  # an enum value


def node_attrs(node):
    """A graph node's attributes by name, each as its single value."""
    attrs = {}
    for attr in node.get("attr", []):
        for key, value in attr.items():
            if key != "name":
                attrs[attr["name"][0]] = value[0]
    return attrs


# ---------------------------------------------------------------- cases


@dataclasses.dataclass
class Case:
    """One model, as loom reads it and as torch builds it for the peers."""

    name: str
    kind: str  # which peers apply: numpy to "matmul", jax to Jax.KINDS
    build: Callable[[], tuple]  # () -> (torch module, {input name: tensor})
    # loom's model: an example graph (a repo-relative path), else graph text
    # written to out_dir, else (with neither) the case's ONNX export.
    example: str = ""
    graph_text: str = ""
    flops: float = 0.0  # matmul cases: floating-point operations per call


# Integer inputs (token ids) are uniform in [0, this), like loom's own.
INT_INPUT_HIGH = 10


def random_inputs(shapes):
    """Uniform in [-1, 1), like loom's own random inputs; a shape given as
    ("int64", shape) is of token ids in [0, INT_INPUT_HIGH)."""
    import torch

    generator = torch.Generator().manual_seed(SEED)
    inputs = {}
    for name, shape in shapes.items():
        if isinstance(shape, tuple):
            inputs[name] = torch.randint(0, INT_INPUT_HIGH, shape[1], generator=generator,
                                         dtype=getattr(torch, shape[0]))
        else:
            inputs[name] = torch.rand(shape, generator=generator) * 2 - 1
    return inputs


def torch_modules():
    """The small modules the cases need (torch imported only when used)."""
    import torch
    from torch import nn

    class MatMul(nn.Module):
        def forward(self, a, b):
            return a @ b

    class Softmax(nn.Module):
        def __init__(self, dim):
            super().__init__()
            self.dim = dim

        def forward(self, x):
            return torch.softmax(x, dim=self.dim)

    class FeedForward(nn.Module):
        """A BERT-style FFN block: LayerNorm(x + Linear(GELU(Linear(x))))."""

        def __init__(self, hidden, inner):
            super().__init__()
            self.up = nn.Linear(hidden, inner)
            self.down = nn.Linear(inner, hidden)
            self.norm = nn.LayerNorm(hidden)

        def forward(self, x):
            return self.norm(x + self.down(nn.functional.gelu(self.up(x))))

    class SelfAttention(nn.Module):
        def __init__(self, dim, heads):
            super().__init__()
            self.attention = nn.MultiheadAttention(dim, heads, batch_first=True)

        def forward(self, x):
            return self.attention(x, x, x, need_weights=False)[0]

    class BiLstmClassifier(nn.Module):
        """Bidirectional LSTM, then per-step Linear and LogSoftmax."""

        def __init__(self, inputs, hidden, layers, classes):
            super().__init__()
            self.lstm = nn.LSTM(inputs, hidden, layers, batch_first=True, bidirectional=True)
            self.fc = nn.Linear(2 * hidden, classes)

        def forward(self, x):
            return torch.log_softmax(self.fc(self.lstm(x)[0]), dim=-1)

    class EmbeddingGruLm(nn.Module):
        """A language model: token embedding, GRU, a linear head to the vocabulary."""

        def __init__(self, vocab, embed, hidden, layers):
            super().__init__()
            self.embedding = nn.Embedding(vocab, embed)
            self.gru = nn.GRU(embed, hidden, layers, batch_first=True)
            self.head = nn.Linear(hidden, vocab)

        def forward(self, ids):
            return self.head(self.gru(self.embedding(ids))[0])

    class ResNetBlock(nn.Module):
        """A ResNet basic block: conv3x3, BatchNorm, ReLU, conv3x3, BatchNorm, + x, ReLU."""

        def __init__(self, channels):
            super().__init__()
            self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(channels)
            self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
            self.bn2 = nn.BatchNorm2d(channels)

        def forward(self, x):
            y = torch.relu(self.bn1(self.conv1(x)))
            return torch.relu(self.bn2(self.conv2(y)) + x)

    class UNetBlock(nn.Module):
        """A diffusion UNet's block: conv3x3, GroupNorm, SiLU."""

        def __init__(self, channels, out_channels, groups):
            super().__init__()
            self.conv = nn.Conv2d(channels, out_channels, 3, padding=1)
            self.norm = nn.GroupNorm(groups, out_channels)

        def forward(self, x):
            return nn.functional.silu(self.norm(self.conv(x)))

    return {
        "EmbeddingGruLm": EmbeddingGruLm,
        "ResNetBlock": ResNetBlock,
        "UNetBlock": UNetBlock,
        "MatMul": MatMul,
        "Softmax": Softmax,
        "FeedForward": FeedForward,
        "SelfAttention": SelfAttention,
        "BiLstmClassifier": BiLstmClassifier,
    }


def ready(module, shapes):
    """The module in eval mode, and its random inputs."""
    return module.eval(), random_inputs(shapes)


def torch_from_example(path):
    """The torch module computing what an example graph computes."""
    import torch
    from torch import nn

    torch.manual_seed(SEED)
    graph = read_text_proto(os.path.join(REPO, path))
    graph_input = graph["input"][0]
    shape = graph_input["type"][0]["shape"]
    shapes = {graph_input["name"][0]: shape}
    nodes = graph["node"]
    ops = [node["op"][0] for node in nodes]
    attrs = node_attrs(nodes[0])
    if ops[0] == "group_norm":
        module = nn.GroupNorm(attrs["num_groups"], shape[1], eps=attrs.get("epsilon", 1e-5))
    elif ops[0] == "layer_norm":
        assert attrs.get("axis", -1) in (-1, len(shape) - 1), "layer_norm over the last axis only"
        module = nn.LayerNorm(shape[-1], eps=attrs.get("epsilon", 1e-5))
    elif ops[0] == "softmax":
        module = torch_modules()["Softmax"](attrs.get("axis", -1))
    elif ops[0] in ("lstm", "gru"):
        assert attrs.get("layout") == 1, "batch-first recurrences only"
        rnn = nn.LSTM if ops[0] == "lstm" else nn.GRU
        module = rnn(
            shape[-1],
            attrs["hidden_size"],
            num_layers=ops.count(ops[0]),
            batch_first=True,
            bidirectional=attrs.get("direction") == "bidirectional",
        )
    else:
        raise ValueError(f"{path}: no torch equivalent for op {ops[0]}")
    return ready(module, shapes)


def matmul_graph(name, a_shape, b_shape):
    """Graph text for loom: y = a @ b on two f32 inputs."""
    def graph_input(input_name, shape):
        dims = ", ".join(str(d) for d in shape)
        return f'input {{\n  name: "{input_name}"\n  type {{\n    dtype: F32\n    shape: [{dims}]\n  }}\n}}\n'

    return (
        f'name: "{name}"\n'
        + graph_input("a", a_shape)
        + graph_input("b", b_shape)
        + 'node {\n  name: "matmul"\n  op: "matmul"\n  input: "a"\n  input: "b"\n  output: "y"\n}\n'
        + 'output: "y"\n'
    )


def matmul_case(name, a_shape, b_shape):
    batch = math.prod(a_shape[:-2])
    m, k = a_shape[-2:]
    n = b_shape[-1]

    def build():
        return ready(torch_modules()["MatMul"](), {"a": a_shape, "b": b_shape})

    return Case(name, "matmul", build, graph_text=matmul_graph(name, a_shape, b_shape),
                flops=2.0 * batch * m * n * k)


def example_case(name, kind):
    path = f"examples/{name}.pbtxt"
    return Case(name, kind, lambda: torch_from_example(path), example=path)


def onnx_case(name, kind, make_module, shapes):
    def build():
        import torch

        torch.manual_seed(SEED)
        return ready(make_module(torch_modules()), shapes)

    return Case(name, kind, build)


def torchvision_case(name):
    """A torchvision classifier (random weights) on one 224x224 image."""

    def build():
        import torch
        import torchvision.models

        torch.manual_seed(SEED)
        return ready(getattr(torchvision.models, name)(weights=None), {"x": [1, 3, 224, 224]})

    return Case(name, "cnn", build)


def all_cases():
    return [
        example_case("group_norm_large", "group_norm"),
        example_case("layer_norm_large", "layer_norm"),
        example_case("softmax_large", "softmax"),
        example_case("lstm_l2_h64", "rnn"),
        example_case("lstm_l6_h256", "rnn"),
        example_case("gru_l2_h64", "rnn"),
        matmul_case("matmul_512", [512, 512], [512, 512]),
        matmul_case("matmul_1024", [1024, 1024], [1024, 1024]),
        matmul_case("bmm_16x128x64x128", [16, 128, 64], [16, 64, 128]),
        onnx_case("bert_ffn", "ffn", lambda m: m["FeedForward"](128, 512), {"x": [4, 32, 128]}),
        onnx_case("transformer_encoder", "transformer", _encoder_layer, {"x": [2, 16, 128]}),
        onnx_case("self_attention", "attention", lambda m: m["SelfAttention"](128, 4),
                  {"x": [2, 16, 128]}),
        onnx_case("bilstm_classifier", "rnn", lambda m: m["BiLstmClassifier"](40, 128, 2, 10),
                  {"x": [1, 50, 40]}),
        onnx_case("embedding_gru_lm", "rnn", lambda m: m["EmbeddingGruLm"](8000, 128, 256, 2),
                  {"ids": ("int64", [1, 32])}),
        onnx_case("resnet_block", "conv", lambda m: m["ResNetBlock"](64), {"x": [1, 64, 56, 56]}),
        onnx_case("unet_block", "conv", lambda m: m["UNetBlock"](64, 128, 32),
                  {"x": [1, 64, 32, 32]}),
        # Whole convolutional networks (need torchvision: setup_venv.sh).
        torchvision_case("resnet18"),
        torchvision_case("mobilenet_v2"),
        torchvision_case("squeezenet1_1"),
    ]


def _encoder_layer(_modules):
    from torch import nn

    return nn.TransformerEncoderLayer(128, nhead=4, dim_feedforward=256, batch_first=True)


@dataclasses.dataclass
class Prepared:
    """A case made ready: its torch module and inputs, its model files."""

    case: Case
    module: object = None
    inputs: dict = dataclasses.field(default_factory=dict)
    onnx_path: str = ""
    loom_model: str = ""
    error: str = ""  # why torch could not build the case (then no peer runs)
    export_error: str = ""  # why there is no ONNX export (then ONNX Runtime does not run)


def prepare(case, out_dir):
    """Builds the torch side, exports it to ONNX and picks loom's model."""
    prepared = Prepared(case)
    if case.example:
        prepared.loom_model = os.path.join(REPO, case.example)
    elif case.graph_text:
        prepared.loom_model = os.path.join(out_dir, case.name + ".pbtxt")
        with open(prepared.loom_model, "w") as f:
            f.write(case.graph_text)
    if not have("torch"):
        prepared.error = "needs torch to build the model"
        return prepared
    try:
        prepared.module, prepared.inputs = case.build()
    except Exception as e:
        prepared.error = f"torch could not build the model: {first_line(str(e))}"
        return prepared
    try:
        prepared.onnx_path = export_onnx(prepared.module, prepared.inputs,
                                         os.path.join(out_dir, case.name + ".onnx"))
    except Exception as e:
        prepared.export_error = f"torch.onnx.export failed: {first_line(str(e))}"
        return prepared
    if not prepared.loom_model:
        prepared.loom_model = prepared.onnx_path
    return prepared


def export_onnx(module, inputs, path):
    """torch.onnx.export: the TorchScript exporter, else (with onnxscript) the new one.

    The TorchScript exporter needs no onnxscript and maps nn.LSTM and nn.GRU
    onto ONNX's LSTM and GRU; PyTorch 2.15's cannot trace
    nn.TransformerEncoderLayer, which the torch.export-based one can. Not under
    no_grad: there, eval-mode attention takes PyTorch's fused fast path
    (aten::_native_multi_head_attention), which has no ONNX export. The
    exporters' chatter goes to stderr, away from the tables.
    """
    import torch

    args = tuple(inputs.values())
    with warnings.catch_warnings(), contextlib.redirect_stdout(sys.stderr):
        warnings.simplefilter("ignore")
        try:
            torch.onnx.export(module, args, path, dynamo=False, opset_version=17,
                              input_names=list(inputs))
        except Exception as e:
            if not have("onnxscript"):
                raise
            log(f"  TorchScript exporter failed ({first_line(str(e))}); trying the new exporter")
            torch.onnx.export(module, args, path, dynamo=True, opset_version=17,
                              input_names=list(inputs), external_data=False)
    return path


# ---------------------------------------------------------------- loom


class LoomFailed(Exception):
    """loom did not run the case: the row shows no time."""


class CheckFailed(LoomFailed):
    """loom ran, but its outputs failed `--check`: the time is shown, flagged."""


def first_line(text):
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[0] if lines else "(no message)"


def loom_env():
    """The peers' environment without the preloaded allocator (loom links its
    own), but with what hides AVX-512 under --isa=avx2."""
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    if env.get("LOOM_PEERS_HIDE_AVX512"):
        env["LD_PRELOAD"] = env["LOOM_PEERS_HIDE_AVX512"]
    return env


@dataclasses.dataclass
class Loom:
    """The loom binary and the flags every `loom run` gets (the pipeline)."""

    path: str
    flags: list


def run_loom(loom, model, report, iters, check=False):
    """One `loom run` process; returns its report. Raises LoomFailed."""
    command = [loom.path, "run", f"--model={model}", f"--iters={iters}", f"--warmup={WARMUP_CALLS}",
               f"--report={report}", "--seed=1"] + loom.flags
    if check:
        command.append("--check")
    try:
        done = subprocess.run(command, capture_output=True, text=True, env=loom_env(),
                              timeout=LOOM_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise LoomFailed(f"timed out after {LOOM_TIMEOUT_S} s")
    if done.returncode != 0:
        failure = CheckFailed if check and done.returncode == 1 else LoomFailed
        raise failure(f"exit {done.returncode}: {first_line(done.stderr or done.stdout)}")
    with open(report) as f:
        return json.load(f)


def loom_seconds(loom, model, report, iters):
    """The median of one loom process's `iters` timed runs. Raises LoomFailed."""
    result = run_loom(loom, model, report, iters)
    if "run_seconds_median" not in result:
        raise LoomFailed("the report has no run_seconds_median")
    return result["run_seconds_median"]


def check_loom(loom, model, report):
    """Runs `loom run --check` once; returns a one-line verdict.
    Raises CheckFailed on a mismatch, LoomFailed when loom cannot run the case."""
    result = run_loom(loom, model, report, iters=1, check=True)
    verdict = result.get("check", "missing")
    detail = f"check {verdict} (max_abs_error {result.get('max_abs_error', '?')}, " \
             f"max_rel_error {result.get('max_rel_error', '?')})"
    if verdict != "pass":
        raise CheckFailed(detail)
    return detail


# ---------------------------------------------------------------- peers


def have(module_name):
    return importlib.util.find_spec(module_name) is not None


def settle():
    """Waits for the last tool's worker threads to stop spinning.

    OpenMP and ONNX Runtime threads spin for a while after their work; a
    tool timed right after another then shares the cores with them (loom's
    bmm measured 0.109 ms after the matmul cases and 0.064 ms alone, ONNX
    Runtime's 0.075 and 0.140).
    """
    time.sleep(SETTLE_S)


def median_call_seconds(fn, iters):
    """Warms up, then times `iters` calls; returns their median in seconds."""
    for _ in range(WARMUP_CALLS):
        fn()
    times = []
    for _ in range(iters):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


class Peer:
    """A library timed against loom. Subclasses say when they apply."""

    column = ""  # the table's column
    package = ""  # what is missing when it is skipped

    def skip_reason(self):
        """Why this peer cannot run here, or "" when it can."""
        return "" if have(self.package) else "not installed"

    def applies(self, case):
        return True

    def make_call(self, prepared):
        """A function doing one inference of the case (warm: compiled, loaded)."""
        raise NotImplementedError


class TorchEager(Peer):
    column, package = "eager", "torch"

    def make_call(self, prepared):
        import torch

        module, args = prepared.module, tuple(prepared.inputs.values())

        def call():
            with torch.inference_mode():
                return module(*args)

        return call


class TorchInductor(TorchEager):
    column = "inductor"

    def skip_reason(self):
        if not (shutil.which("g++") or shutil.which("c++")):
            return "no C++ compiler for Inductor"
        return super().skip_reason()

    def make_call(self, prepared):
        """torch.compile's defaults. Dynamo leaves nn.LSTM and nn.GRU to eager
        (torch._dynamo.config.allow_rnn is off), so there Inductor is eager."""
        import torch

        compiled = torch.compile(prepared.module)
        args = tuple(prepared.inputs.values())

        def call():
            with torch.inference_mode():
                return compiled(*args)

        start = time.perf_counter()
        call()  # compiles
        log(f"  inductor compiled {prepared.case.name} in {time.perf_counter() - start:.1f} s")
        return call


class LoomViaTorchCompile(TorchEager):
    """loom itself, reached through torch.compile(backend="loom")
    (python/loom/torch.py): a column beside Inductor, not a peer (never the
    fastest peer). Graphs loom's translation does not take run eagerly."""

    column = "loom_tc"
    ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
    LIBRARY = os.path.join(ROOT, "bazel-bin", "runtime", "libloom.so")

    def skip_reason(self):
        if not os.path.exists(os.environ.get("LOOM_LIBRARY", self.LIBRARY)):
            return "no libloom.so (./bazelw build -c opt //runtime:libloom.so)"
        return super().skip_reason()

    def make_call(self, prepared):
        import torch

        os.environ.setdefault("LOOM_LIBRARY", self.LIBRARY)
        sys.path.insert(0, os.path.join(self.ROOT, "python"))
        import loom.torch  # noqa: F401 - registers the backend

        compiled = torch.compile(prepared.module, backend="loom")
        args = tuple(prepared.inputs.values())

        def call():
            with torch.inference_mode():
                return compiled(*args)

        # Dynamo remembers that Inductor's compile (allow_rnn off) left the
        # recurrence's frame to eager: forget it, and trace the recurrence.
        torch._dynamo.reset()
        start = time.perf_counter()
        with torch._dynamo.config.patch(allow_rnn=True):
            call()  # compiles
        log(f"  loom via torch.compile compiled {prepared.case.name} in "
            f"{time.perf_counter() - start:.1f} s")
        return call


class OnnxRuntime(Peer):
    column, package = "ort", "onnxruntime"

    def skip_reason(self):
        reason = super().skip_reason()
        if not reason and not have("torch"):
            return "needs torch to export the models"
        return reason

    def make_call(self, prepared):
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = THREADS
        options.inter_op_num_threads = 1
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        session = ort.InferenceSession(prepared.onnx_path, options,
                                       providers=["CPUExecutionProvider"])
        feed = {i.name: t.numpy() for i, t in zip(session.get_inputs(), prepared.inputs.values())}
        return lambda: session.run(None, feed)


class NumpyBlas(Peer):
    """numpy's matmul: the OpenBLAS numpy's wheel bundles."""

    column, package = "numpy", "numpy"

    def applies(self, case):
        return case.kind == "matmul"

    def make_call(self, prepared):
        import numpy as np

        a, b = (t.numpy() for t in prepared.inputs.values())
        return lambda: np.matmul(a, b)


class Jax(Peer):
    """jax.jit of the same computation, for the cases written for it here."""

    column, package = "jax", "jax"
    KINDS = ("matmul", "softmax", "layer_norm", "group_norm", "ffn")

    def applies(self, case):
        return case.kind in self.KINDS

    def make_call(self, prepared):
        import jax
        import jax.numpy as jnp

        function = jax.jit(self._function(prepared.case.kind, prepared.module, jnp))
        args = [jnp.asarray(t.numpy()) for t in prepared.inputs.values()]
        call = lambda: function(*args).block_until_ready()
        call()  # compiles
        return call

    @staticmethod
    def _function(kind, module, jnp):
        import jax

        def weights(*tensors):
            return [jnp.asarray(t.detach().numpy()) for t in tensors]

        def layer_norm(x, norm):
            scale, bias = weights(norm.weight, norm.bias)
            mean = x.mean(axis=-1, keepdims=True)
            var = x.var(axis=-1, keepdims=True)
            return (x - mean) / jnp.sqrt(var + norm.eps) * scale + bias

        if kind == "matmul":
            return jnp.matmul
        if kind == "softmax":
            return lambda x: jax.nn.softmax(x, axis=module.dim)
        if kind == "layer_norm":
            return lambda x: layer_norm(x, module)
        if kind == "group_norm":
            scale, bias = weights(module.weight, module.bias)

            def group_norm(x):
                n, c = x.shape[:2]
                grouped = x.reshape(n, module.num_groups, -1)
                mean = grouped.mean(axis=-1, keepdims=True)
                var = grouped.var(axis=-1, keepdims=True)
                y = ((grouped - mean) / jnp.sqrt(var + module.eps)).reshape(x.shape)
                per_channel = (1, c) + (1,) * (x.ndim - 2)
                return y * scale.reshape(per_channel) + bias.reshape(per_channel)

            return group_norm
        if kind == "ffn":
            w_up, b_up, w_down, b_down = weights(module.up.weight, module.up.bias,
                                                 module.down.weight, module.down.bias)

            def ffn(x):
                inner = jax.nn.gelu(x @ w_up.T + b_up, approximate=False)
                return layer_norm(x + inner @ w_down.T + b_down, module.norm)

            return ffn
        raise ValueError(f"no jax function for {kind}")


def available_peers(isa):
    """The peers that can run here; one line on stderr for each that cannot."""
    peers, skips = [], []
    for peer in (TorchEager(), TorchInductor(), LoomViaTorchCompile(), OnnxRuntime(),
                 NumpyBlas(), Jax()):
        reason = peer.skip_reason()
        if not reason and isa != "native" and isinstance(peer, LoomViaTorchCompile):
            reason = f"compiles for this machine's ISA, not --isa={isa}"
        if not reason:
            peers.append(peer)
            continue
        skip = f"skip {peer.package if reason == 'not installed' else peer.column}: {reason}"
        if skip not in skips:  # eager and Inductor both need torch
            skips.append(skip)
            log(skip)
    return peers


# ---------------------------------------------------------------- measuring


@dataclasses.dataclass
class Result:
    """One case's measurements: seconds per round, or why there are none."""

    case: Case
    loom_rounds: list = dataclasses.field(default_factory=list)
    loom_error: str = ""
    loom_check_failure: str = ""
    peer_rounds: dict = dataclasses.field(default_factory=dict)  # column -> [seconds]
    peer_errors: dict = dataclasses.field(default_factory=dict)  # column -> message

    def loom_seconds(self):
        return statistics.median(self.loom_rounds) if self.loom_rounds and not self.loom_error else None

    def peer_seconds(self):
        return {column: statistics.median(times) for column, times in self.peer_rounds.items()
                if times and column not in self.peer_errors}


def output_array(output):
    """A peer's first output (through nested tuples and lists) as a numpy array."""
    import numpy as np

    while isinstance(output, (tuple, list)):
        output = output[0]
    return np.asarray(output.detach() if hasattr(output, "detach") else output)


def wrong_result(output, expected):
    """Why a peer's output is not torch eager's, or "" when it matches."""
    import numpy as np

    actual = output_array(output)
    if actual.shape != expected.shape:
        return f"wrong result: shape {list(actual.shape)}, torch eager's {list(expected.shape)}"
    if not np.allclose(actual, expected, rtol=1e-3, atol=1e-3):
        return f"wrong result: max |difference| from torch eager {np.max(np.abs(actual - expected)):.3g}"
    return ""


def eager_output(prepared):
    import torch

    with torch.inference_mode():
        return output_array(prepared.module(*prepared.inputs.values()))


def peer_calls(peers, prepared, result):
    """Makes each applicable peer's call and checks its first output against
    torch eager's; a failure is recorded, not raised."""
    calls = {}
    expected = None if prepared.error else eager_output(prepared)
    for peer in peers:
        if not peer.applies(prepared.case):
            continue
        if prepared.error:
            result.peer_errors[peer.column] = prepared.error
            continue
        if isinstance(peer, OnnxRuntime) and prepared.export_error:
            result.peer_errors[peer.column] = prepared.export_error
            continue
        try:
            call = peer.make_call(prepared)
            mismatch = wrong_result(call(), expected)
        except Exception as e:
            mismatch = first_line(f"{type(e).__name__}: {e}")
        if mismatch:
            result.peer_errors[peer.column] = mismatch
        else:
            calls[peer.column] = call
            result.peer_rounds[peer.column] = []
    return calls


def measure(prepared, peers, loom, args, report_dir):
    """Checks loom once, then alternates loom and the peers for the rounds."""
    case = prepared.case
    result = Result(case)
    report = os.path.join(report_dir, case.name + ".json")
    if not prepared.loom_model:
        result.loom_error = prepared.error or prepared.export_error
    else:
        try:
            log(f"  loom {check_loom(loom, prepared.loom_model, report)}")
        except CheckFailed as e:
            result.loom_check_failure = str(e)
            log(f"  loom check failed: {e}")
        except LoomFailed as e:
            result.loom_error = str(e)
    calls = peer_calls(peers, prepared, result)
    for round_index in range(args.rounds):
        timings = []
        if not result.loom_error:
            try:
                settle()
                seconds = loom_seconds(loom, prepared.loom_model, report, args.iters)
                result.loom_rounds.append(seconds)
                timings.append(f"loom {format_ms(seconds)}")
            except LoomFailed as e:
                result.loom_error = str(e)
        for column, call in calls.items():
            if column in result.peer_errors:
                continue
            try:
                settle()
                seconds = median_call_seconds(call, args.iters)
                result.peer_rounds[column].append(seconds)
                timings.append(f"{column} {format_ms(seconds)}")
            except Exception as e:
                result.peer_errors[column] = first_line(f"{type(e).__name__}: {e}")
        if timings:
            log(f"  round {round_index + 1}/{args.rounds}: " + ", ".join(timings) + " (ms)")
    if result.loom_error:
        log(f"  loom failed: {result.loom_error}")
    for column, error in result.peer_errors.items():
        log(f"  {column} failed: {error}")
    return result


# ---------------------------------------------------------------- tables


def format_ms(seconds):
    """Milliseconds to three significant figures (at least the integer part)."""
    ms = seconds * 1e3
    if ms <= 0:
        return "0"
    decimals = max(0, 2 - math.floor(math.log10(ms)))
    return f"{ms:.{decimals}f}"


def cell(text):
    return str(text).replace("|", "\\|")


NOT_PEERS = ("loom_tc",)  # loom through another door
# Peers that --isa does not hold to its instruction set: shown, not compared.
NOT_HELD_BY_ISA = ("ort", "jax")


def cpuid_hides_avx512():
    """Whether hide_avx512.c, preloaded by run.sh --isa=avx2, hides AVX-512
    from CPUID in this process (it needs a CPU that can fault on CPUID)."""
    try:
        return bool(ctypes.CDLL(None).hide_avx512_active())
    except (AttributeError, OSError):
        return False


def not_compared(isa, hidden):
    """The columns the ratio leaves out under --isa=`isa`; `hidden`: whether
    CPUID hides AVX-512 from every peer."""
    return NOT_PEERS + (NOT_HELD_BY_ISA if isa != "native" and not hidden else ())


def fastest(result, excluded):
    """(column, seconds) of the fastest peer that ran, not in `excluded`, or None."""
    times = {c: t for c, t in result.peer_seconds().items() if c not in excluded}
    if not times:
        return None
    column = min(times, key=times.get)
    return column, times[column]


def loom_cell(result):
    loom = result.loom_seconds()
    if loom is None:
        return f"loom failed: {result.loom_error}"
    return format_ms(loom) + (" (check fail)" if result.loom_check_failure else "")


def time_table(results, peers, excluded):
    columns = [peer.column for peer in peers]
    header = ["case", "loom ms"] + [f"{c} ms" for c in columns] + ["fastest peer", "loom/peer"]
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    for result in results:
        row = [result.case.name, loom_cell(result)]
        loom = result.loom_seconds()
        times = result.peer_seconds()
        for column in columns:
            if column in times:
                row.append(format_ms(times[column]))
            elif column in result.peer_errors:
                row.append("failed")
            else:
                row.append("n/a")
        best = fastest(result, excluded)
        row.append(best[0] if best else "—")
        row.append(f"{loom / best[1]:.2f}" if best and loom is not None else "—")
        lines.append("| " + " | ".join(cell(c) for c in row) + " |")
    return "\n".join(lines)


def gflops_table(results, excluded):
    lines = ["| case | GFLOP | loom GFLOP/s | fastest GEMM GFLOP/s | fastest GEMM |",
             "| --- | --- | --- | --- | --- |"]
    for result in results:
        flops = result.case.flops
        loom = result.loom_seconds()
        best = fastest(result, excluded)
        lines.append("| " + " | ".join(cell(c) for c in [
            result.case.name,
            f"{flops / 1e9:.3f}",
            f"{flops / loom / 1e9:.1f}" if loom else "—",
            f"{flops / best[1] / 1e9:.1f}" if best else "—",
            best[0] if best else "—",
        ]) + " |")
    return "\n".join(lines)


def failures_list(results):
    """Lines for loom's failed checks and the peers that failed, one each."""
    lines = []
    for result in results:
        if result.loom_check_failure:
            lines.append(f"- {result.case.name}, loom --check: {result.loom_check_failure}")
        for column, error in result.peer_errors.items():
            lines.append(f"- {result.case.name}, {column}: {error}")
    return "\n".join(lines)


# ---------------------------------------------------------------- main


def cpu_busy_fraction(seconds=1.0):
    """How busy the CPUs are with other work (this process is idle meanwhile),
    from /proc/stat; None where there is none."""
    def idle_and_total():
        with open("/proc/stat") as f:
            ticks = [int(t) for t in f.readline().split()[1:]]
        return ticks[3] + ticks[4], sum(ticks)  # idle + iowait, all

    try:
        idle0, total0 = idle_and_total()
        time.sleep(seconds)
        idle1, total1 = idle_and_total()
    except (OSError, ValueError, IndexError):
        return None
    return 1 - (idle1 - idle0) / max(1, total1 - total0)


BUSY_WARNING = 0.1


def log_load(when):
    """Other work on the machine stalls every OpenMP region: says how busy
    the CPUs are, and returns that fraction (None where unknown)."""
    busy = cpu_busy_fraction()
    if busy is not None:
        log(f"CPUs busy with other work {when}: {100 * busy:.0f}%"
            + (" (timings may be inflated)" if busy > BUSY_WARNING else ""))
    return busy


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", default="", help="regex: run the cases whose name it matches")
    parser.add_argument("--rounds", type=int, default=5, help="alternations of loom and the peers")
    parser.add_argument("--iters", type=int, default=20, help="timed runs per round and tool")
    parser.add_argument("--loom", default="bazel-bin/tools/loom",
                        help="the loom binary (relative to the repo root unless absolute)")
    parser.add_argument("--out_dir", default="",
                        help="where models and reports go (default: a temporary folder, removed after)")
    parser.add_argument("--isa", choices=("native", "avx2"), default="native",
                        help="avx2: hold loom and the peers to AVX2 and FMA")
    args = parser.parse_args(argv)
    args.loom = os.path.join(REPO, args.loom)
    if args.rounds < 1 or args.iters < 1:
        parser.error("--rounds and --iters must be at least 1")
    return args


def avx2_pipeline(out_dir):
    """The built-in cpu pipeline with loom's kernels compiled for AVX2 and FMA."""
    with open(os.path.join(REPO, "pipelines", "cpu.pbtxt")) as f:
        text = f.read()
    held = text.replace("cpp {", f'cpp {{ march: "{AVX2_MARCH}"')
    if held == text:
        raise RuntimeError("pipelines/cpu.pbtxt has no cpp { ... } options to add march to")
    path = os.path.join(out_dir, "cpu_avx2.pbtxt")
    with open(path, "w") as f:
        f.write(held)
    return path


def main(argv):
    args = parse_args(argv)
    if not os.access(args.loom, os.X_OK):
        log(f"no loom binary at {args.loom}: build it with ./bazelw build //tools:loom, or pass --loom")
        return 2
    hidden = False
    if args.isa == "avx2":
        os.environ.update(AVX2_ENV)  # before any peer's library loads
        hidden = cpuid_hides_avx512()
        log("isa avx2: CPUID hides AVX-512 from every library" if hidden else
            "isa avx2: CPUID still shows AVX-512 (no CPUID faulting, or not run through run.sh)")
    cases = [case for case in all_cases() if re.search(args.cases, case.name)]
    if not cases:
        log(f"no case matches --cases={args.cases}")
        return 2
    out_dir = args.out_dir or tempfile.mkdtemp(prefix="loom-peers-")
    report_dir = os.path.join(out_dir, "reports")
    os.makedirs(report_dir, exist_ok=True)
    pipeline = avx2_pipeline(out_dir) if args.isa == "avx2" else "cpu"
    loom = Loom(args.loom, [f"--pipeline={pipeline}"])
    peers = available_peers(args.isa)
    if have("torch"):
        import torch

        torch.set_num_threads(THREADS)
        if args.isa != "native":
            log(f"isa {args.isa}: torch's CPU capability {torch.backends.cpu.get_cpu_capability()}")
    log(f"threads {THREADS}, rounds {args.rounds}, iters {args.iters}, loom {args.loom}, models in {out_dir}")
    busy = [log_load("before")]

    results = []
    for case in cases:
        log(f"{case.name}:")
        prepared = prepare(case, out_dir)
        for error in (prepared.error, prepared.export_error):
            if error:
                log(f"  {error}")
        results.append(measure(prepared, peers, loom, args, report_dir))

    busy.append(log_load("after"))
    excluded = not_compared(args.isa, hidden)
    print(time_table(results, peers, excluded))
    matmuls = [r for r in results if r.case.flops]
    if matmuls:
        print()
        print(gflops_table(matmuls, excluded))
    failures = failures_list(results)
    if failures:
        print()
        print("Failures:")
        print(failures)
    if args.isa != "native" and hidden:
        print()
        print(f"--isa={args.isa}: loom and the peers held to it (CPUID hides AVX-512).")
    elif args.isa != "native":
        print()
        print(f"--isa={args.isa}: loom and the peers held to it, except "
              f"{', '.join(NOT_HELD_BY_ISA)} (shown, not in the ratio).")
    if any(b is not None and b > BUSY_WARNING for b in busy):
        before, after = (f"{100 * b:.0f}%" if b is not None else "?" for b in busy)
        print()
        print(f"Note: the CPUs were busy with other work (before {before}, after {after}):"
              " timings may be inflated.")
    if not args.out_dir:
        shutil.rmtree(out_dir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
