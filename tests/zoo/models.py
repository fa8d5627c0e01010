"""The model zoo: real architectures from torchvision, transformers and timm,
built from their constructors and config classes with random weights (no
pretrained weights, nothing from a hub), for export to ONNX (export.py) and
comparison of loom with ONNX Runtime (run_zoo.py).

Each entry of MODELS is a function build(small) -> (module, inputs): the
module in eval mode with weights from a fixed seed, and a tuple of example
input tensors (float32 images / features, int64 token ids and attention
masks). small=True keeps each architecture but shrinks what can shrink
(image size for the vision models, layers, width and sequence for the
transformers) for a fast CI subset; small=False is the standard config
(resnet50 at 224x224, BERT-base at sequence 128, ...).

HF models are wrapped so that forward takes input_ids (and attention_mask
where natural) and returns one tensor (last_hidden_state or logits).
"""

import os
import zlib

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import torch  # noqa: E402
from torch import nn  # noqa: E402

SEED = 0


def _randomize_norms(module, gen):
    """Gives normalisations non-trivial parameters and running statistics
    (fresh ones are the identity: weight 1, bias 0, mean 0, var 1), so that
    a wrong normalisation shows in the output."""
    with torch.no_grad():
        for m in module.modules():
            if isinstance(m, (nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d)):
                n = m.num_features
                m.running_mean.copy_(torch.randn(n, generator=gen) * 0.1)
                m.running_var.copy_(torch.rand(n, generator=gen) + 0.5)
                if m.affine:
                    m.weight.copy_(torch.rand(n, generator=gen) + 0.5)
                    m.bias.copy_(torch.randn(n, generator=gen) * 0.1)
            elif isinstance(m, (nn.LayerNorm, nn.GroupNorm)):
                if getattr(m, "weight", None) is not None:
                    m.weight.copy_(torch.rand(m.weight.shape, generator=gen) + 0.5)
                if getattr(m, "bias", None) is not None:
                    m.bias.copy_(torch.randn(m.bias.shape, generator=gen) * 0.1)
    return module


def _reinit_zeros(module, gen):
    """Some constructors zero a layer (torchvision's ViT head, for one), which
    would make the output constant; such weights get N(0, 0.02) instead."""
    with torch.no_grad():
        for p in module.parameters():
            if p.dim() >= 2 and not p.any():
                p.copy_(torch.randn(p.shape, generator=gen) * 0.02)


def _finish(module):
    gen = torch.Generator().manual_seed(SEED + 1)
    _randomize_norms(module, gen)
    _reinit_zeros(module, gen)
    return module.eval()


def _image(size, channels=3, batch=1):
    gen = torch.Generator().manual_seed(SEED + 2)
    return torch.randn(batch, channels, size, size, generator=gen)


def _tokens(vocab, seq, batch=1, pad=True):
    """input_ids [batch, seq] int64 and attention_mask [batch, seq] int64,
    the last eighth of the sequence padding when pad."""
    gen = torch.Generator().manual_seed(SEED + 3)
    ids = torch.randint(0, vocab, (batch, seq), generator=gen, dtype=torch.int64)
    mask = torch.ones(batch, seq, dtype=torch.int64)
    if pad:
        mask[:, seq - max(1, seq // 8):] = 0
    return ids, mask


# ---------------------------------------------------------------- torchvision

def _tv(name, full_size=224, small_size=64, **kwargs):
    def build(small):
        import torchvision

        model = getattr(torchvision.models, name)(weights=None, **kwargs)
        return _finish(model), (_image(small_size if small else full_size),)

    build.__name__ = name
    return build


def vit_tv(small):
    """torchvision's VisionTransformer: vit_b_16 at full size, a 2-layer
    width-128 config of the same class at small."""
    import torchvision
    from torchvision.models.vision_transformer import VisionTransformer

    if small:
        model = VisionTransformer(image_size=64, patch_size=16, num_layers=2,
                                  num_heads=4, hidden_dim=128, mlp_dim=512,
                                  num_classes=1000)
        return _finish(model), (_image(64),)
    model = torchvision.models.vit_b_16(weights=None)
    return _finish(model), (_image(224),)


# --------------------------------------------------------------- transformers

class _HFWrapper(nn.Module):
    """forward(input_ids[, attention_mask]) -> one tensor: the attribute
    `field` of the HF model's output (last_hidden_state or logits)."""

    def __init__(self, model, field, extra=None):
        super().__init__()
        self.model = model
        self.field = field
        self.extra = extra or {}

    def forward(self, input_ids, attention_mask=None):
        kwargs = dict(self.extra)
        if attention_mask is not None:
            kwargs["attention_mask"] = attention_mask
        out = self.model(input_ids=input_ids, **kwargs)
        return getattr(out, self.field)


class _FeatureWrapper(nn.Module):
    """forward(input_features) -> last_hidden_state (Whisper's encoder)."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_features):
        return self.model(input_features=input_features).last_hidden_state


def bert_base(small):
    return _bert(small, {}, seq=128)


def _bert(small, config, seq, batch=1):
    """A BertModel of BertConfig(**config) (bert-base-uncased's defaults:
    12 layers, 768, 12 heads) at [batch, seq]; small as bert_base's."""
    from transformers import BertConfig, BertModel

    if small:
        cfg = BertConfig(vocab_size=1000, hidden_size=128, num_hidden_layers=2,
                         num_attention_heads=4, intermediate_size=512,
                         max_position_embeddings=128)
        seq, batch = 32, 1
    else:
        cfg = BertConfig(**config)
    model = _HFWrapper(BertModel(cfg, add_pooling_layer=False),
                       "last_hidden_state")
    return _finish(model), _tokens(cfg.vocab_size, seq, batch)


def distilbert(small):
    from transformers import DistilBertConfig, DistilBertModel

    if small:
        cfg = DistilBertConfig(vocab_size=1000, dim=128, n_layers=2, n_heads=4,
                               hidden_dim=512, max_position_embeddings=128)
        seq = 32
    else:
        cfg = DistilBertConfig()  # distilbert-base: 6 layers, 768, 12 heads
        seq = 128
    model = _HFWrapper(DistilBertModel(cfg), "last_hidden_state")
    return _finish(model), _tokens(cfg.vocab_size, seq)


def gpt2(small, seq=128, batch=1):
    """GPT2LMHeadModel, gpt2's config (124M: 12 layers, 768, 12 heads), at
    [batch, seq]."""
    from transformers import GPT2Config, GPT2LMHeadModel

    if small:
        cfg = GPT2Config(vocab_size=1000, n_positions=128, n_embd=128,
                         n_layer=2, n_head=4, bos_token_id=0, eos_token_id=0)
        seq, batch = 32, 1
    else:
        cfg = GPT2Config()
    cfg.use_cache = False
    model = _HFWrapper(GPT2LMHeadModel(cfg), "logits", {"use_cache": False})
    return _finish(model), _tokens(cfg.vocab_size, seq, batch)


def llama(small, heads=8, kv_heads=2, width=256, layers=4, seq=128):
    """A Llama-architecture decoder with grouped-query attention (by default
    8 heads, 2 key/value heads), RMSNorm, SwiGLU and rotary embeddings."""
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(vocab_size=1000 if small else 32000, hidden_size=width,
                      intermediate_size=688 * width // 256,
                      num_hidden_layers=2 if small else layers,
                      num_attention_heads=heads, num_key_value_heads=kv_heads,
                      max_position_embeddings=max(256, seq), use_cache=False,
                      tie_word_embeddings=False)
    seq = 32 if small else seq
    model = _HFWrapper(LlamaForCausalLM(cfg), "logits", {"use_cache": False})
    return _finish(model), _tokens(cfg.vocab_size, seq)


def t5_encoder(small, attn="sdpa"):
    """T5's encoder with transformers' default attention (sdpa); attn="eager"
    the explicit matmul-softmax-matmul path (t5_encoder_eager: torch 2.15's
    dynamo exporter fails on the sdpa one, see README.md)."""
    from transformers import T5Config, T5EncoderModel

    if small:
        cfg = T5Config(vocab_size=1000, d_model=128, d_kv=32, d_ff=256,
                       num_layers=2, num_heads=4)
        seq = 32
    else:  # t5-small: 6 layers, 512, 8 heads
        cfg = T5Config(vocab_size=32128, d_model=512, d_kv=64, d_ff=2048,
                       num_layers=6, num_heads=8)
        seq = 128
    cfg.use_cache = False
    t5 = T5EncoderModel(cfg)
    t5.config._attn_implementation = attn
    model = _HFWrapper(t5, "last_hidden_state")
    return _finish(model), _tokens(cfg.vocab_size, seq)


def whisper_encoder(small):
    from transformers import WhisperConfig
    from transformers.models.whisper.modeling_whisper import WhisperEncoder

    if small:
        cfg = WhisperConfig(vocab_size=1000, num_mel_bins=80, d_model=128,
                            encoder_layers=2, encoder_attention_heads=4,
                            decoder_layers=2, decoder_attention_heads=4,
                            encoder_ffn_dim=512, decoder_ffn_dim=512,
                            max_source_positions=64, max_target_positions=64,
                            pad_token_id=0, bos_token_id=0, eos_token_id=0,
                            decoder_start_token_id=0)
    else:  # whisper-tiny's encoder: 4 layers, 384, 6 heads, 3000 frames
        cfg = WhisperConfig(num_mel_bins=80, d_model=384, encoder_layers=4,
                            encoder_attention_heads=6, decoder_layers=4,
                            decoder_attention_heads=6, encoder_ffn_dim=1536,
                            decoder_ffn_dim=1536, max_source_positions=1500)
    model = _FeatureWrapper(WhisperEncoder(cfg))
    gen = torch.Generator().manual_seed(SEED + 2)
    frames = 2 * cfg.max_source_positions
    features = torch.randn(1, cfg.num_mel_bins, frames, generator=gen)
    return _finish(model), (features,)


# ----------------------------------------------------------------------- timm

def _timm(name):
    def build(small):
        import timm

        kwargs = {"img_size": 64} if small else {}
        model = timm.create_model(name, pretrained=False, **kwargs)
        return _finish(model), (_image(64 if small else 224),)

    build.__name__ = "timm_" + name
    return build


# Name -> build(small). Names are what --models matches and the files are
# called.
MODELS = {
    "resnet50": _tv("resnet50"),
    "mobilenet_v3_small": _tv("mobilenet_v3_small"),
    "efficientnet_b0": _tv("efficientnet_b0"),
    "convnext_tiny": _tv("convnext_tiny"),
    "densenet121": _tv("densenet121"),
    "shufflenet_v2_x1_0": _tv("shufflenet_v2_x1_0"),
    "regnet_y_400mf": _tv("regnet_y_400mf"),
    "vit_b_16": vit_tv,
    "bert_base": bert_base,
    "distilbert": distilbert,
    "gpt2": gpt2,
    "llama_gqa": llama,
    "t5_encoder": t5_encoder,
    "t5_encoder_eager": lambda small: t5_encoder(small, attn="eager"),
    "whisper_encoder": whisper_encoder,
    "timm_vit_tiny_patch16_224": _timm("vit_tiny_patch16_224"),
    "timm_deit_tiny_patch16_224": _timm("deit_tiny_patch16_224"),
}

# Other models of the zoo's families, at other sizes and configurations:
# what a change aimed at the zoo must not leave behind (a mechanism, not a
# case). export.py --set=family exports them; run_zoo.py runs them as any.
FAMILY_MODELS = {
    "resnet18": _tv("resnet18"),
    "resnext50_32x4d": _tv("resnext50_32x4d"),
    "mobilenet_v2": _tv("mobilenet_v2"),
    "mobilenet_v3_large": _tv("mobilenet_v3_large"),
    "efficientnet_b2": _tv("efficientnet_b2"),
    "regnet_x_800mf": _tv("regnet_x_800mf"),
    "shufflenet_v2_x0_5": _tv("shufflenet_v2_x0_5"),
    "densenet169": _tv("densenet169"),
    "convnext_small": _tv("convnext_small"),
    "vit_b_32": _tv("vit_b_32"),
    # bert-small (4 layers, 512, 8 heads) on a batch of 4 sequences of 64.
    "bert_small_b4": lambda small: _bert(
        small, dict(hidden_size=512, num_hidden_layers=4, num_attention_heads=8,
                    intermediate_size=2048), seq=64, batch=4),
    "bert_base_seq384": lambda small: _bert(small, {}, seq=384),
    "gpt2_b4_seq64": lambda small: gpt2(small, seq=64, batch=4),
    # Multi-head attention (as many key/value heads as heads), wider.
    "llama_mha": lambda small: llama(small, heads=8, kv_heads=8, width=512, seq=256),
    "timm_vit_small_patch16_224": _timm("vit_small_patch16_224"),
    "timm_convnext_nano": _timm("convnext_nano"),
}


def build(name, small=False):
    """(module, inputs) for MODELS[name] or FAMILY_MODELS[name]; the module
    in eval mode."""
    # A seed of each name's own, so that two models of one architecture
    # (timm's vit_tiny and deit_tiny are the same network) differ.
    torch.manual_seed(SEED + zlib.crc32(name.encode()) % 100000)
    return {**MODELS, **FAMILY_MODELS}[name](small)
