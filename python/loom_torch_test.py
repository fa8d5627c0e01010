"""torch.compile(backend="loom") on the seed reports' models: outputs as
eager's, GroupNorm in one kernel, a new shape a new entry, and eager (after
a warning) where loom does not compile. Skips without torch."""

import gc
import importlib.util
import os
import subprocess
import sys
import tempfile
import threading
import unittest
import warnings

try:
    import torch
    import torch.nn as nn
except ImportError:
    print("skipped: torch is not installed (tests/bench/peers/setup_venv.sh installs it)")
    sys.exit(0)

import loom
import loom.torch  # noqa: F401 - registers the backend
F = torch.nn.functional

torch._dynamo.config.allow_rnn = True


def compile_with_loom(module, captured):
    def backend(gm, example_inputs):
        fn = loom.torch.loom_backend(gm, example_inputs)
        captured.append(fn)
        return fn
    return torch.compile(module, backend=backend, fullgraph=True)


class Function(nn.Module):
    """A function as a module (check_against_eager takes modules)."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *inputs):
        return self.fn(*inputs)


class ResNetBlock(nn.Module):
    """conv 3x3, batch norm, relu, conv 3x3, batch norm, + x, relu."""

    def __init__(self, channels):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)
        for bn in (self.bn1, self.bn2):  # statistics as after training
            bn.running_mean.uniform_(-1, 1)
            bn.running_var.uniform_(0.5, 2)
            nn.init.uniform_(bn.weight, 0.5, 1.5)
            nn.init.uniform_(bn.bias, -0.5, 0.5)

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        return torch.relu(self.bn2(self.conv2(y)) + x)


class FireWithResidual(nn.Module):
    """What torchvision's SqueezeNet and ResNet write: torch.cat of two
    branches, and `out += identity`."""

    def __init__(self, channels):
        super().__init__()
        self.squeeze = nn.Conv2d(channels, channels // 2, 1)
        self.expand1 = nn.Conv2d(channels // 2, channels // 2, 1)
        self.expand3 = nn.Conv2d(channels // 2, channels // 2, 3, padding=1)

    def forward(self, x):
        s = torch.relu(self.squeeze(x))
        out = torch.cat([torch.relu(self.expand1(s)), torch.relu(self.expand3(s))], dim=-3)
        out += x
        return torch.relu(out)


class Product(nn.Module):
    def forward(self, a, b):
        return torch.relu(a @ b)


class EmbeddingGruLm(nn.Module):
    def __init__(self, vocab, embed, hidden):
        super().__init__()
        self.embedding = nn.Embedding(vocab, embed)
        self.gru = nn.GRU(embed, hidden, 2, batch_first=True)
        self.head = nn.Linear(hidden, vocab)

    def forward(self, ids):
        return self.head(self.gru(self.embedding(ids))[0])


class Attention(nn.Module):
    """nn.MultiheadAttention: self-attention of x, or x attending to memory."""

    def __init__(self, batch_first, need_weights, cross):
        super().__init__()
        self.attention = nn.MultiheadAttention(32, 4, batch_first=batch_first)
        self.need_weights, self.cross = need_weights, cross

    def forward(self, x, memory):
        source = memory if self.cross else x
        out, weights = self.attention(x, source, source, need_weights=self.need_weights)
        return (out, weights) if self.need_weights else out


class MaskedAttention(nn.Module):
    """nn.MultiheadAttention with an attention mask and a key padding mask."""

    def __init__(self):
        super().__init__()
        self.attention = nn.MultiheadAttention(32, 4, batch_first=True)

    def forward(self, x, attn_mask, key_padding_mask):
        return self.attention(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                              need_weights=False)[0]


class DynamicFloats(nn.Module):
    """What dynamo hands a backend under dynamic=True, as in GPT-2's graph:
    sizes as symbols, the module's float attributes (a norm's epsilon, an
    attention's scale) as one-element tensors that the graph reads by
    .item(), and position ids made by cumsum and torch.diff."""

    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(16, eps=1e-3)
        self.scale = 0.25

    def forward(self, x, mask):
        y = self.norm(x)
        y = F.scaled_dot_product_attention(y, y, y, scale=self.scale)
        positions = mask.cumsum(-1)
        steps = torch.diff(positions, prepend=positions[:, :1], dim=-1)
        return y * steps.unsqueeze(-1), positions


class TinyGpt(nn.Module):
    """A GPT as people write one (nanoGPT's shape): token and position
    embeddings, pre-norm blocks of causal attention through
    scaled_dot_product_attention and a GELU MLP, a bias-free head."""

    class Block(nn.Module):
        def __init__(self, width, heads):
            super().__init__()
            self.heads = heads
            self.norm1, self.norm2 = nn.LayerNorm(width), nn.LayerNorm(width)
            self.qkv, self.proj = nn.Linear(width, 3 * width), nn.Linear(width, width)
            self.up, self.down = nn.Linear(width, 4 * width), nn.Linear(4 * width, width)

        def forward(self, x):
            batch, length, width = x.size()
            q, k, v = self.qkv(self.norm1(x)).split(width, dim=2)
            q, k, v = (t.view(batch, length, self.heads, width // self.heads).transpose(1, 2)
                       for t in (q, k, v))
            y = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(y.transpose(1, 2).contiguous().view(batch, length, width))
            return x + self.down(nn.functional.gelu(self.up(self.norm2(x))))

    def __init__(self, vocab=100, width=32, heads=4, length=16):
        super().__init__()
        self.tokens, self.positions = nn.Embedding(vocab, width), nn.Embedding(length, width)
        self.blocks = nn.ModuleList([self.Block(width, heads) for _ in range(2)])
        self.norm, self.head = nn.LayerNorm(width), nn.Linear(width, vocab, bias=False)

    def forward(self, ids):
        positions = torch.arange(0, ids.size(1), dtype=torch.long)
        x = self.tokens(ids) + self.positions(positions)
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x))


class WhatCrashedTheBackend(nn.Module):
    """Calls that raised out of the backend or sent whole graphs to eager:
    norms with positional affine parameters and no eps, masked_fill's value
    by keyword, a parameter indexed, a bool buffer, Python scalars,
    slices with steps, permute, unbind, casts, torch.zeros as a tensor,
    _log_api_usage_once."""

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(3, 16))
        self.norm_weight = nn.Parameter(torch.rand(16))
        self.norm_bias = nn.Parameter(torch.randn(16))
        self.register_buffer("keep", torch.rand(16) > 0.3)

    def forward(self, x):  # [2, 8, 16]
        torch._C._log_api_usage_once("loom_test")
        y = F.layer_norm(x, (16,), self.norm_weight, self.norm_bias)
        y = F.group_norm(y.permute(0, 2, 1), 4, self.norm_weight, self.norm_bias).permute(0, 2, 1)
        y = y.masked_fill(self.keep, value=0.5) * 2.0 + self.w[0] - 1
        y = 1.0 - y[:, ::3, 1::2].to(torch.float64) / 3
        a, b = y.unbind(1)[:2]
        count = (x > 0).sum(-1, keepdim=True)  # int64, promoted to float below
        rows, columns = torch.arange(2)[:, None], torch.arange(8)[None, :] % 3 - 1
        picked = x[rows, columns, -1]  # [2, 8], as transformers' mask functions index
        return (a * b).float() + torch.zeros(2, 8)[:, :1] + count[:, 0] * 0.5 + picked


class TinyLlamaBlock(nn.Module):
    """What a Llama decoder does: RMSNorm (by hand and F.rms_norm), rotary
    embeddings (cos, sin, slices of half the head, neg, cat), a causal mask
    of arange and triu, grouped-query scaled_dot_product_attention, SwiGLU."""

    def __init__(self, width=32, heads=4, kv_heads=2):
        super().__init__()
        self.heads, self.kv_heads, self.head = heads, kv_heads, width // heads
        self.q = nn.Linear(width, width, bias=False)
        self.kv = nn.Linear(width, 2 * kv_heads * self.head, bias=False)
        self.o = nn.Linear(width, width, bias=False)
        self.gate, self.up = nn.Linear(width, 64, bias=False), nn.Linear(width, 64, bias=False)
        self.down = nn.Linear(64, width, bias=False)
        self.norm = nn.Parameter(torch.rand(width) + 0.5)
        self.register_buffer("inv_freq", 1.0 / 10000 ** (torch.arange(0, self.head, 2) / self.head))

    @staticmethod
    def rotate_half(x):
        half = x.shape[-1] // 2
        return torch.cat((-x[..., half:], x[..., :half]), dim=-1)

    def forward(self, x):  # [N, L, width]
        batch, length, width = x.shape
        variance = x.to(torch.float32).pow(2).mean(-1, keepdim=True)
        h = self.norm * (x * torch.rsqrt(variance + 1e-6))
        positions = torch.arange(length)[None, :].float()
        freqs = (self.inv_freq[None, :, None].float() @ positions[:, None, :]).transpose(1, 2)
        angles = torch.cat((freqs, freqs), dim=-1)
        cos, sin = angles.cos()[:, None], angles.sin()[:, None]
        q = self.q(h).view(batch, length, self.heads, self.head).transpose(1, 2)
        k, v = self.kv(h).view(batch, length, 2, self.kv_heads, self.head).permute(2, 0, 3, 1, 4)
        q, k = q * cos + self.rotate_half(q) * sin, k * cos + self.rotate_half(k) * sin
        mask = torch.triu(torch.full((length, length), float("-inf")), diagonal=1)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)
        x = x + self.o(y.transpose(1, 2).reshape(batch, length, width))
        h = F.rms_norm(x, (width,), self.norm, 1e-6)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))


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
        with torch.no_grad(), warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            expected = module(*inputs)
            for call in range(2):  # the reference's (while the kernels compile), the kernels'
                for a, e in zip(flat(compiled(*inputs)), flat(expected)):
                    self.assertLessEqual((a - e).abs().max().item(), tolerance, "call %d" % call)
        self.assertEqual([str(w.message) for w in caught if "loom" in str(w.message)], [])
        self.assertTrue(hasattr(captured[0], "loom_pieces"), "ran eagerly")
        in_loom, nodes = captured[0].loom_coverage
        self.assertEqual(in_loom, nodes)
        piece, = captured[0].loom_pieces
        for entry in piece.compiled.entries.values():
            self.assertIsNotNone(entry.model, "the kernels did not run")
        return piece.compiled

    def test_what_crashed_the_backend(self):
        self.check_against_eager(WhatCrashedTheBackend(), torch.randn(2, 8, 16))

    def test_a_tiny_llama_block(self):
        self.check_against_eager(TinyLlamaBlock(), torch.randn(2, 8, 32), tolerance=1e-4)

    def test_symbolic_sizes(self):
        def channel_shuffle(x):  # as ShuffleNet writes it
            n, c, h, w = x.size()
            y = x.view(n, 2, c // 2, h, w).transpose(1, 2).contiguous().view(n, -1, h, w)
            return y[:, :, 1:] * (h + w)

        captured = []
        compiled = torch.compile(channel_shuffle, dynamic=True, backend=lambda gm, inputs: (
            captured.append(loom.torch.loom_backend(gm, inputs)) or captured[-1]))
        with torch.no_grad(), warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for shape in ((2, 8, 5, 6), (3, 12, 7, 9)):
                x = torch.randn(shape)
                self.assertTrue(torch.allclose(compiled(x), channel_shuffle(x)), shape)
        self.assertEqual([str(w.message) for w in caught if "loom" in str(w.message)], [])
        # loom reads the sizes of each call without making dynamo guard them:
        # one graph, a loom model for each shape.
        self.assertEqual(len(captured), 1)
        in_loom, nodes = captured[0].loom_coverage
        self.assertEqual(in_loom, nodes)
        piece, = captured[0].loom_pieces
        self.assertEqual(len(piece.compiled.entries), 2)

    def test_one_translation_serves_every_size(self):
        def f(x):  # sizes computed from the symbolic ones, slices, positions, zeros
            batch, n = x.shape[0], x.shape[1]
            y = x[:, 1:] * 2 + x[:, :-1]
            rows = torch.softmax(y.reshape(batch * (n - 1), 8), -1)
            return rows, torch.arange(1, n + 1) * 3, torch.zeros(batch, n)

        captured = []
        compiled = torch.compile(f, dynamic=True, backend=lambda gm, inputs: (
            captured.append(loom.torch.loom_backend(gm, inputs)) or captured[-1]))
        with torch.no_grad(), warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for shape in ((2, 6, 8), (3, 9, 8), (4, 17, 8), (2, 3, 8), (5, 4, 8)):
                x = torch.randn(shape)
                for a, e in zip(compiled(x), f(x)):
                    self.assertEqual(a.shape, e.shape, shape)
                    self.assertLessEqual((a - e).abs().max().item(), 1e-5, shape)
        self.assertEqual([str(w.message) for w in caught if "loom" in str(w.message)], [])
        self.assertEqual(len(captured), 1)
        piece, = captured[0].loom_pieces
        self.assertEqual(len(piece.compiled.entries), 5)
        # One translation, one loom model: its inputs' dims are dynamo's
        # symbols, its sizes computed from them.
        graph, = piece.compiled.symbolic
        with open(graph.path) as f:
            text = f.read()
        self.assertIn('dim_names: ["s', text)
        self.assertIn("ints_expr", text)

    def test_a_failed_translation_for_every_size_leaves_one_per_size(self):
        module = nn.Sequential(nn.Linear(8, 16), nn.ReLU()).eval()

        def failing(*args):
            raise loom.torch.Unsupported("a failure for the test")

        captured, saved = [], loom.torch._SymbolicGraph
        loom.torch._SymbolicGraph = failing
        try:
            compiled = torch.compile(module, dynamic=True, backend=lambda gm, inputs: (
                captured.append(loom.torch.loom_backend(gm, inputs)) or captured[-1]))
            with torch.no_grad():
                for batch in (2, 3, 5):
                    x = torch.randn(batch, 8)
                    self.assertLessEqual((compiled(x) - module(x)).abs().max().item(), 1e-5)
        finally:
            loom.torch._SymbolicGraph = saved
        piece, = captured[-1].loom_pieces
        self.assertEqual(piece.compiled.symbolic, [])
        self.assertEqual(piece.compiled.symbolic_failure, "a failure for the test")
        self.assertEqual(len(piece.compiled.entries), 3)
        self.assertTrue(all(e.owns_files for e in piece.compiled.entries.values()))

    def test_a_causal_mask_of_symbolic_sizes_stays_symbolic(self):
        class Causal(nn.Module):
            def forward(self, q, k, v):
                return F.scaled_dot_product_attention(q, k, v, is_causal=True)

        for module, inputs_of in (
                (TinyLlamaBlock().eval(), lambda n: (torch.randn(2, n, 32),)),
                (Causal(), lambda n: tuple(torch.randn(2, 4, n, 8) for _ in range(3)))):
            torch._dynamo.reset()
            captured = []
            compiled = torch.compile(module, dynamic=True, backend=lambda gm, inputs: (
                captured.append(loom.torch.loom_backend(gm, inputs)) or captured[-1]))
            with torch.no_grad():
                for length in (5, 7, 12):
                    inputs = inputs_of(length)
                    error = (compiled(*inputs) - module(*inputs)).abs().max().item()
                    self.assertLessEqual(error, 1e-5, (type(module).__name__, length))
            # triu's and is_causal's triangles read the length as it runs:
            # one translation, not one pinned to each length.
            piece, = captured[-1].loom_pieces
            self.assertEqual(len(piece.compiled.symbolic), 1, type(module).__name__)
            self.assertEqual(len(piece.compiled.entries), 3)

    def test_sizes_keep_their_expressions_and_guard_what_they_decide(self):
        import sympy
        from loom.torch_symbolic import Guards, SymSize, dim_expr

        s0, s1 = sympy.symbols("s0 s1", integer=True, positive=True)
        guards = Guards()
        n, batch = SymSize(9, s0, guards), SymSize(2, s1, guards)
        rows = batch * (n - 1) // 2
        self.assertEqual(rows.value, 8)
        self.assertEqual(dim_expr(rows, {"s0", "s1"}), "((s1*(-1 + s0)) // 2)")
        self.assertIsNone(dim_expr(rows, {"s0"}))  # s1 names no input's dim
        self.assertEqual(dim_expr(n ** 2, {"s0"}), "(s0*s0)")
        self.assertEqual(guards.conditions, {})
        self.assertTrue(n > 5)  # decided for 9, and so for every n > 5
        self.assertTrue(guards.hold({s0: 6, s1: 3}))
        self.assertFalse(guards.hold({s0: 5, s1: 3}))
        self.assertEqual(list(range(batch)), [0, 1])  # a plain int: pinned to 2
        self.assertFalse(guards.hold({s0: 6, s1: 3}))
        self.assertTrue(guards.hold({s0: 7, s1: 2}))
        self.assertEqual(n ** -0.5, 1 / 3)  # a float of the size: pinned to 9
        self.assertFalse(guards.hold({s0: 7, s1: 2}))

    def test_dynamic_shapes_compile_whole(self):
        module = DynamicFloats().eval()
        captured = []
        compiled = torch.compile(module, dynamic=True, backend=lambda gm, inputs: (
            captured.append(loom.torch.loom_backend(gm, inputs)) or captured[-1]))
        with torch.no_grad(), warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for length, scale in ((5, 0.25), (9, 0.25), (9, 0.5)):
                module.scale = scale  # a new value is a new entry, not a stale one
                x, mask = torch.randn(2, length, 16), torch.rand(2, length) > 0.3
                for a, e in zip(flat(compiled(x, mask)), flat(module(x, mask))):
                    self.assertLessEqual((a - e).abs().max().item(), 1e-5, (length, scale))
        self.assertEqual([str(w.message) for w in caught if "loom" in str(w.message)], [])
        for graph in captured:
            in_loom, nodes = graph.loom_coverage
            self.assertEqual(in_loom, nodes)

    def test_more_lengths_than_dynamos_recompile_limit_stay_in_one_graph(self):
        module = nn.LSTM(8, 16, num_layers=2, batch_first=True).eval()
        captured = []
        compiled = torch.compile(module, dynamic=True, backend=lambda gm, inputs: (
            captured.append(loom.torch.loom_backend(gm, inputs)) or captured[-1]))
        lengths = range(3, 5 + max(torch._dynamo.config.recompile_limit, loom.torch.MAX_ENTRIES))
        with torch.no_grad(), warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for length in lengths:
                x = torch.randn(2, length, 8)
                for a, e in zip(flat(compiled(x)), flat(module(x))):
                    self.assertLessEqual((a - e).abs().max().item(), 1e-5, length)
        self.assertEqual([str(w.message) for w in caught if "loom" in str(w.message)], [])
        self.assertEqual(len(captured), 1)
        piece, = captured[0].loom_pieces
        # The least recently called models are dropped, their files too (those
        # of a model dropped while it compiled once that compile is over: all
        # are, when every turn to compile is free).
        self.assertEqual(len(piece.compiled.entries), loom.torch.MAX_ENTRIES)
        # One translation serves every length: one folder of files.
        self.assertEqual(len(piece.compiled.symbolic), 1)
        folder = piece.compiled.folder
        self.assertEqual(sum(os.path.isdir(os.path.join(folder, f)) for f in os.listdir(folder)),
                         1)
        # Its files go with the graph.
        del piece, captured[:], compiled
        torch._dynamo.reset()
        gc.collect()
        self.assertFalse(os.path.exists(folder))

    def test_a_float_read_by_item_is_part_of_the_entry_key(self):
        # Dynamo recompiles when the module's float changes (it guards the
        # attribute); an entry must not be reused for another value anyway.
        module = DynamicFloats().eval()
        captured = []
        compiled = torch.compile(module, dynamic=True, backend=lambda gm, inputs: (
            captured.append((gm, inputs)) or gm.forward))
        x, mask = torch.randn(2, 5, 16), torch.rand(2, 5) > 0.3
        with torch.no_grad():
            compiled(x, mask)
            gm, inputs = captured[0]
            loom_graph = loom.torch._Compiled(gm, inputs)
            scale = next(i for i, a in enumerate(inputs)
                         if isinstance(a, torch.Tensor) and a.dim() == 0 and a.item() == 0.25)
            for value in (0.25, 0.5):
                module.scale = value
                # The sizes as a call passes them: plain ints.
                args = [a if isinstance(a, torch.Tensor) else int(a) for a in inputs]
                args[scale] = torch.tensor(value, dtype=inputs[scale].dtype)
                got = loom_graph(*args)[0]
                self.assertLessEqual((got - module(x, mask)[0]).abs().max().item(), 1e-5, value)
        self.assertEqual(len(loom_graph.entries), 2)

    def test_failures_at_each_stage_fall_back_to_eager(self):
        module = nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.LayerNorm(16)).eval()
        x = torch.randn(4, 8)

        def fail(*args, **kwargs):
            raise RuntimeError("injected")

        def no_library():  # libloom.so missing
            return "/nonexistent/libloom.so"

        stages = {  # stage: (object, attribute, replacement)
            "translation": (loom.torch.GraphTranslator, "probe", fail),
            "translation of a piece": (loom.torch.GraphTranslator, "_translate_nodes", fail),
            "partitioning": (loom.torch, "fuse_by_partitions", fail),
            "loading libloom.so": (loom, "_library_path", no_library),
            "compile": (loom, "compile", fail),
            "the first run": (loom.torch._TensorCall, "__call__", fail),
        }
        for stage, (owner, name, replacement) in stages.items():
            with self.subTest(stage):
                torch._dynamo.reset()
                saved = (getattr(owner, name), loom._lib, loom.torch.FIRST_CALL_WAIT_S)
                setattr(owner, name, replacement)
                loom._lib = None  # loaded again, through the replacement
                loom.torch.FIRST_CALL_WAIT_S = 600  # the kernels' run from the first call
                try:
                    compiled = torch.compile(module, backend="loom")
                    with torch.no_grad(), warnings.catch_warnings(record=True) as caught:
                        warnings.simplefilter("always")
                        for _ in range(2):
                            self.assertTrue(torch.equal(compiled(x), module(x)))
                finally:
                    setattr(owner, name, saved[0])
                    loom._lib, loom.torch.FIRST_CALL_WAIT_S = saved[1], saved[2]
                reasons = [str(w.message) for w in caught if "loom" in str(w.message)]
                self.assertEqual(len(reasons), 1, reasons)
                self.assertIn("eagerly", reasons[0])
                self.assertIn("/nonexistent/libloom.so" if stage == "loading libloom.so"
                              else "RuntimeError: injected", reasons[0])

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

    def test_products_written_with_the_operator(self):
        self.check_against_eager(Product(), torch.randn(64, 32), torch.randn(32, 48))
        self.check_against_eager(Product(), torch.randn(4, 64, 32), torch.randn(4, 32, 48))

    def test_multi_head_attention(self):
        for batch_first in (True, False):
            for need_weights in (False, True):
                for cross in (False, True):
                    shape = [(2, 5, 32), (2, 7, 32)] if batch_first else [(5, 2, 32), (7, 2, 32)]
                    with self.subTest(batch_first=batch_first, need_weights=need_weights,
                                      cross=cross):
                        torch._dynamo.reset()
                        self.check_against_eager(Attention(batch_first, need_weights, cross),
                                                 *(torch.randn(s) for s in shape))

    def test_masked_multi_head_attention(self):
        x = torch.randn(2, 6, 32)
        padding = torch.tensor([[False] * 6, [False] * 4 + [True] * 2])  # the second's last two
        causal = nn.Transformer.generate_square_subsequent_mask(6)  # 0 and -inf
        # Masks of one type (torch warns at mixed ones, which dynamo cannot trace).
        self.check_against_eager(MaskedAttention(), x, causal.isinf(), padding)
        self.check_against_eager(MaskedAttention(), x, causal, padding.float() * -1e4)
        per_head = torch.randn(2 * 4, 6, 6)  # [N * H, L, S]
        self.check_against_eager(MaskedAttention(), x, per_head, padding.float() * -1e4)

    def test_scaled_dot_product_attention(self):
        q, k, v = torch.randn(2, 4, 5, 8), torch.randn(2, 4, 7, 8), torch.randn(2, 4, 7, 16)
        sdpa = nn.functional.scaled_dot_product_attention
        self.check_against_eager(Function(lambda q, k, v: sdpa(q, k, v)), q, k, v)
        self.check_against_eager(Function(lambda q, k, v: sdpa(q, k, v, is_causal=True)),
                                 q, k, v)
        self.check_against_eager(Function(lambda q, k, v: sdpa(q, k, v, scale=0.3)), q, k, v)
        keep = torch.rand(5, 7) > 0.3
        keep[:, 0] = True  # no row left out entirely
        self.check_against_eager(Function(lambda q, k, v, m: sdpa(q, k, v, attn_mask=m)),
                                 q, k, v, keep)
        self.check_against_eager(Function(lambda q, k, v, m: sdpa(q, k, v, attn_mask=m)),
                                 q, k, v, torch.randn(2, 1, 5, 7))

    def test_a_tiny_gpt(self):
        self.check_against_eager(TinyGpt(), torch.randint(0, 100, (2, 16)))

    def test_transformer_encoder_layers(self):
        # Batch first, torch runs the layer as one function (its inference
        # fast path); sequence first, as attention, dropout, linear layers
        # and norms.
        for batch_first in (True, False):
            for norm_first in (False, True):
                for activation in ("relu", "gelu"):
                    with self.subTest(batch_first=batch_first, norm_first=norm_first,
                                      activation=activation):
                        torch._dynamo.reset()
                        layer = nn.TransformerEncoderLayer(
                            32, 4, 64, activation=activation, norm_first=norm_first,
                            batch_first=batch_first)
                        self.check_against_eager(layer, torch.randn(2, 5, 32))

    def test_python_scalars_are_constants(self):
        # transformers' gelu_new (GPT-2's): literals the compiler folds, so
        # that x ** 3.0 is two products, not a call of powf for each element.
        def gelu_new(x):
            return 0.5 * x * (1.0 + torch.tanh(
                0.7978845608028654 * (x + 0.044715 * torch.pow(x, 3.0))))
        compiled = self.check_against_eager(Function(gelu_new), torch.randn(4, 64))
        entry, = compiled.entries.values()
        with open(entry.path) as f:
            graph = f.read()
        self.assertEqual(graph.count("constant {"), 5)
        self.assertNotIn("weight {", graph)

    def test_a_round_trip_through_bfloat16(self):
        def rounded(x):  # numpy has no bfloat16: ml_dtypes', imported when it is needed
            return x.to(torch.bfloat16).to(torch.float32) * 3
        self.check_against_eager(Function(rounded), torch.randn(4, 64), tolerance=0)

    def test_importing_loom_leaves_ml_dtypes_unimported(self):
        # Its import takes 0.6 s; a model of numpy's own dtypes never needs it.
        if importlib.util.find_spec("ml_dtypes") is None:
            self.skipTest("ml_dtypes is not installed")
        imported = subprocess.run(
            [sys.executable, "-c", "import sys, loom.torch; print('ml_dtypes' in sys.modules)"],
            capture_output=True, text=True, check=True).stdout
        self.assertEqual(imported.strip(), "False")

    def test_the_seed_group_norm_is_one_kernel(self):
        module = nn.GroupNorm(2, 16)
        x = torch.randn(2, 16, 32, 32)
        compiled = self.check_against_eager(module, x, tolerance=1e-3)
        entry, = compiled.entries.values()
        entry.thread.join()
        self.assertEqual(entry.model.launches, 1)

    def test_the_first_call_runs_eagerly_while_the_kernels_compile(self):
        module = nn.LSTM(32, 64, num_layers=2, batch_first=True).eval()
        x = torch.randn(2, 16, 32)
        captured = []
        compiled = compile_with_loom(module, captured)
        saved = loom.torch.FIRST_CALL_WAIT_S, os.environ.get("LOOM_CACHE_DIR")
        loom.torch.FIRST_CALL_WAIT_S = 0
        os.environ["LOOM_CACHE_DIR"] = tempfile.mkdtemp()  # an empty kernel cache: a real compile
        try:
            with torch.no_grad():
                for call in range(3):  # eager's, then the kernels'
                    y = compiled(x)
                    for a, e in zip(flat(y), flat(module(x))):
                        self.assertLessEqual((a - e).abs().max().item(), 1e-5, "call %d" % call)
        finally:
            loom.torch.FIRST_CALL_WAIT_S = saved[0]
            if saved[1] is None:
                del os.environ["LOOM_CACHE_DIR"]
            else:
                os.environ["LOOM_CACHE_DIR"] = saved[1]
        entry, = captured[0].loom_pieces[0].compiled.entries.values()
        self.assertEqual(entry.eager_calls, 1)
        self.assertIsNotNone(entry.model)

    def test_a_dropped_shape_does_not_wait_for_its_compile(self):
        module = nn.Sequential(nn.Linear(8, 16), nn.ReLU()).eval()
        captured = []
        compiled = compile_with_loom(module, captured)
        release, waited_out = threading.Event(), []
        real_compile = loom.compile

        def held_compile(path):  # compiles once the test releases it
            if not release.wait(30):
                waited_out.append(path)
            return real_compile(path)

        # Each shape its own translation, whose files its entry owns.
        saved = loom.compile, loom.torch.MAX_ENTRIES, loom.torch.MAX_SYMBOLIC_GRAPHS
        loom.compile, loom.torch.MAX_ENTRIES, loom.torch.MAX_SYMBOLIC_GRAPHS = held_compile, 1, 0
        try:
            with torch.no_grad():
                x = torch.randn(2, 8)
                torch._dynamo.mark_dynamic(x, 0)  # one graph for every batch
                self.assertTrue(torch.equal(compiled(x), module(x)))  # eager's
                piece, = captured[-1].loom_pieces
                dropped, = piece.compiled.entries.values()
                # A second shape drops the first's entry, whose compile is
                # held: the call must not wait for it.
                y = torch.randn(3, 8)
                self.assertTrue(torch.equal(compiled(y), module(y)))
                self.assertEqual(waited_out, [])
                self.assertTrue(os.path.exists(dropped.path))  # still compiling
                release.set()
                error = (compiled(y) - module(y)).abs().max().item()  # on the kernels
                self.assertLessEqual(error, 1e-5)
                entry, = piece.compiled.entries.values()
                self.assertIsNotNone(entry.model)
        finally:
            release.set()
            loom.compile, loom.torch.MAX_ENTRIES, loom.torch.MAX_SYMBOLIC_GRAPHS = saved
        dropped.thread.join(30)
        self.assertFalse(os.path.exists(os.path.dirname(dropped.path)))  # removed after it
        self.assertIsNone(dropped.model)

    def test_a_new_shape_is_a_new_entry(self):
        module = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4), nn.Softmax(dim=-1))
        captured = []
        compiled = compile_with_loom(module.eval(), captured)
        with torch.no_grad():
            for batch in (2, 3, 5):
                x = torch.randn(batch, 8)
                self.assertLessEqual((compiled(x) - module(x)).abs().max().item(), 1e-5)
        # Dynamo traces batch 2 alone, then 3 and 5 as one graph of symbolic
        # sizes, whose entries read the parameters from one file, written once.
        piece, = captured[-1].loom_pieces
        self.assertEqual(len(piece.compiled.entries), 2)
        parameter_bytes = sum(p.numel() * p.element_size() for p in module.parameters())
        self.assertEqual(os.path.getsize(piece.compiled.params.path), parameter_bytes)
        for entry in piece.compiled.entries.values():
            weights = os.path.join(os.path.dirname(entry.path), "weights.bin")
            self.assertLess(os.path.getsize(weights), parameter_bytes)

    def test_a_resnet_basic_block(self):
        self.check_against_eager(ResNetBlock(8), torch.randn(2, 8, 12, 12))

    def test_concatenated_branches_and_an_in_place_residual(self):
        self.check_against_eager(FireWithResidual(8), torch.randn(2, 8, 12, 12))

    @unittest.skipUnless(importlib.util.find_spec("torchvision"), "needs torchvision")
    def test_torchvision_classifiers(self):
        import torchvision.models

        for name in ("resnet18", "squeezenet1_1", "mobilenet_v2"):
            with self.subTest(name):
                torch._dynamo.reset()
                module = getattr(torchvision.models, name)(weights=None)
                self.check_against_eager(module, torch.randn(1, 3, 64, 64), tolerance=1e-4)

    def test_a_unet_block(self):
        module = nn.Sequential(nn.Conv2d(8, 16, 3, padding=1), nn.GroupNorm(4, 16), nn.SiLU())
        self.check_against_eager(module, torch.randn(2, 8, 12, 12))

    def test_a_small_cnn(self):
        module = nn.Sequential(
            nn.Conv2d(3, 8, 3, stride=2, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, dilation=2, groups=2), nn.BatchNorm2d(16), nn.ReLU6(),
            nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 10))
        self.check_against_eager(module, torch.randn(2, 3, 32, 32))

    def test_conv1d_with_padding_same(self):
        # An even kernel: torch puts the odd padding position at the end.
        module = nn.Sequential(nn.Conv1d(4, 6, 4, padding="same", dilation=3, bias=False),
                               nn.Conv1d(6, 5, 3, padding="valid"), nn.GELU())
        self.check_against_eager(module, torch.randn(2, 4, 20))

    def test_convolutions_of_one_and_three_dims_and_transposed(self):
        self.check_against_eager(nn.Conv3d(2, 4, 3, stride=(1, 2, 1), padding=(1, 0, 2)),
                                 torch.randn(1, 2, 6, 7, 5))
        self.check_against_eager(
            nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2),
            torch.randn(2, 4, 7, 9))
        self.check_against_eager(nn.ConvTranspose1d(3, 2, 4, stride=3, dilation=2, bias=False),
                                 torch.randn(2, 3, 8))
        weight = torch.randn(5, 3, 2, 2)
        self.check_against_eager(Function(lambda x: torch.convolution(
            x, weight, None, [2, 1], [1, 0], [1, 2], False, [0, 0], 1)),
            torch.randn(1, 3, 9, 9))

    def test_an_embedding_gru_language_model(self):
        module = EmbeddingGruLm(50, 16, 32)
        self.check_against_eager(module, torch.randint(0, 50, (3, 7)))

    def test_pools(self):
        self.check_against_eager(Function(lambda x1, x2, x3: (
            F.max_pool2d(x2, 3, stride=2, padding=1, ceil_mode=True),
            F.max_pool2d(x2, (2, 3), dilation=(2, 1), return_indices=True),
            F.avg_pool2d(x2, 3, stride=2, padding=1, ceil_mode=True),
            F.avg_pool2d(x2, 2, padding=1, count_include_pad=False),
            F.max_pool1d(x1, 4, stride=3), F.avg_pool1d(x1, 3, padding=1),
            F.max_pool3d(x3, 2), F.avg_pool3d(x3, (1, 2, 2)),
            F.adaptive_avg_pool2d(x2, (1, 5)), F.adaptive_avg_pool1d(x1, 1))),
            torch.randn(2, 3, 10), torch.randn(2, 3, 11, 10), torch.randn(1, 2, 4, 5, 6))

    def test_pads_resizes_and_activations(self):
        x = torch.randn(2, 3, 5, 6)
        self.check_against_eager(Function(lambda x: (
            F.pad(x, (1, 2)), F.pad(x, (0, 1, 2, 3), value=1.5),
            F.pad(x, (2, 1, 1, 3), mode="reflect"), F.pad(x, (3, 0, 1, 2), mode="replicate"),
            F.interpolate(x, scale_factor=2), F.interpolate(x, size=(15, 12), mode="nearest"),
            F.interpolate(x, scale_factor=1.7, mode="bilinear"),
            F.interpolate(x, size=(9, 4), mode="bilinear", align_corners=True),
            F.interpolate(x.flatten(2), scale_factor=3, mode="linear"),
            F.leaky_relu(x, 0.2), F.elu(x), F.hardtanh(x, -0.5, 0.7), F.hardswish(x),
            F.hardsigmoid(x), torch.flatten(x, 1, 2))), x)

    def test_an_unsupported_variant_runs_eagerly_as_its_own_piece(self):
        # The circular pad eagerly, the conv after it in loom.
        module = nn.Conv2d(3, 4, 3, padding=1, padding_mode="circular").eval()
        x = torch.randn(1, 3, 8, 8)
        captured = []
        compiled = compile_with_loom(module, captured)
        with torch.no_grad(), warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for _ in range(2):
                self.assertLessEqual((compiled(x) - module(x)).abs().max().item(), 1e-5)
        reasons = [str(w.message) for w in caught if "loom" in str(w.message)]
        self.assertEqual(len(reasons), 1, reasons)
        self.assertIn("op pad (1 node: pad mode 'circular'", reasons[0])
        self.assertEqual(captured[0].loom_coverage, (1, 2))
        piece, = captured[0].loom_pieces
        self.assertIsNone(piece.failed)

    def test_what_loom_does_not_compile_runs_eagerly_after_a_warning(self):
        module = nn.EmbeddingBag(10, 4)
        x = torch.tensor([[1, 2], [3, 4]])
        compiled = torch.compile(module, backend="loom")
        with torch.no_grad(), warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            y = compiled(x)
        self.assertTrue(torch.equal(y, module(x)))
        self.assertTrue(any("op embedding_bag (1 node" in str(w.message) for w in caught),
                        [str(w.message) for w in caught])

    def test_in_place_activations_update_what_later_reads(self):
        def relu_in_place(x, y):
            h = x * y
            nn.functional.relu(h, inplace=True)
            return h + y

        def clip_in_place(x, y):
            h = x * y
            nn.functional.hardtanh(h, -0.5, 0.5, inplace=True)
            return h + y

        for function in (relu_in_place, clip_in_place):
            torch._dynamo.reset()
            self.check_against_eager(Function(function), torch.randn(3, 4), torch.randn(3, 4))

        def relu_in_place_under_a_view(x, y):
            h = x * y
            flat = h.view(-1)
            nn.functional.relu(h, inplace=True)
            return flat * y.view(-1)

        torch._dynamo.reset()
        compiled = torch.compile(relu_in_place_under_a_view, backend="loom")
        x, y = torch.randn(3, 4), torch.randn(3, 4)
        with torch.no_grad(), warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            self.assertTrue(torch.allclose(compiled(x, y), relu_in_place_under_a_view(x, y)))
        self.assertTrue(any("shares memory with a view" in str(w.message) for w in caught))

    def test_an_in_place_update_of_an_input_runs_eagerly(self):
        # loom cannot write into the caller's tensor: x must still be updated.
        def add_in_place(x, y, mask):
            x += y
            return x * y

        def fill_in_place(x, y, mask):
            x.masked_fill_(mask, 0.0)
            return x * y

        for function, update in ((add_in_place, lambda x, y, mask: x + y),
                                 (fill_in_place, lambda x, y, mask: x.masked_fill(mask, 0.0))):
            torch._dynamo.reset()
            compiled = torch.compile(function, backend="loom")
            with torch.no_grad(), warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                for call in range(2):
                    x, y = torch.randn(3, 4), torch.randn(3, 4)
                    mask = y > 0
                    expected_x = update(x, y, mask)
                    result = compiled(x, y, mask)
                    self.assertTrue(torch.allclose(x, expected_x), "call %d: x as it was" % call)
                    self.assertTrue(torch.allclose(result, expected_x * y))
            self.assertTrue(any("in-place update of an input" in str(w.message) for w in caught),
                            [str(w.message) for w in caught])

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
