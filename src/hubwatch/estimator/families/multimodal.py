"""The families with a vision or audio tower beside the text decoder: LLaVA, Qwen3-ASR."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hubwatch.estimator.config import CannotEstimate, Reader
from hubwatch.estimator.families.decoder import Decoder
from hubwatch.estimator.families.text import QWEN3_DECODER
from hubwatch.estimator.registry import Built, Family, find
from hubwatch.estimator.structure import KvKind, Layer, Param, Tower, linear, plain

# NOTE: LlavaConfig builds its vision sub-config with these, not CLIPVisionConfig's own.
LLAVA_VISION_DEFAULTS = {
    "hidden_size": 1024,
    "intermediate_size": 4096,
    "num_hidden_layers": 24,
    "num_attention_heads": 16,
    "num_channels": 3,
    "image_size": 336,
    "patch_size": 14,
}
QWEN3_ASR_AUDIO_DEFAULTS = {
    "num_mel_bins": 128,
    "encoder_layers": 24,
    "encoder_attention_heads": 16,
    "encoder_ffn_dim": 4096,
    "d_model": 1024,
    "output_dim": 3584,
    "downsample_hidden_size": 480,
}
# Qwen3ASRConfig builds its text sub-config as a qwen3 config with these overrides.
QWEN3_ASR_TEXT_DEFAULTS = {
    "vocab_size": 151936,
    "hidden_size": 2048,
    "intermediate_size": 6144,
    "num_hidden_layers": 28,
    "num_attention_heads": 16,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "max_position_embeddings": 65536,
    "tie_word_embeddings": True,
    "attention_bias": False,
}


def _encoder_layer(hidden: int, inter: int, mlp_prefix: str) -> tuple[Param, ...]:
    """One CLIP/Whisper-style encoder layer: biased multi-head attention, two layer norms,
    a two-layer MLP with biases."""
    return (
        linear("self_attn.q_proj", hidden, hidden, bias=True, kind="attention"),
        linear("self_attn.k_proj", hidden, hidden, bias=True, kind="attention"),
        linear("self_attn.v_proj", hidden, hidden, bias=True, kind="attention"),
        linear("self_attn.out_proj", hidden, hidden, bias=True, kind="attention"),
        plain("layer_norms", 4 * hidden, "norm"),
        linear(f"{mlp_prefix}fc1", hidden, inter, bias=True, kind="mlp"),
        linear(f"{mlp_prefix}fc2", inter, hidden, bias=True, kind="mlp"),
    )


def clip_vision(r: Reader) -> Tower:
    """CLIPVisionModel, as LLaVA builds it: patch conv, class token, positions, encoder."""
    hidden = r.integer("hidden_size", limit="hidden")
    layers = r.integer("num_hidden_layers", limit="layers")
    inter = r.integer("intermediate_size", limit="intermediate")
    heads = r.integer("num_attention_heads", limit="heads")
    channels = r.integer("num_channels", limit="small")
    image = r.integer("image_size", limit="small")
    patch = r.integer("patch_size", limit="small")
    positions = (image // patch) ** 2 + 1
    params = _encoder_layer(hidden, inter, mlp_prefix="mlp.")
    before = (
        plain("embeddings.class_embedding", hidden, "embedding"),
        plain("embeddings.patch_embedding", channels * hidden * patch * patch, "conv"),
        plain("embeddings.position_embedding", positions * hidden, "embedding"),
        plain("pre_layrnorm", 2 * hidden, "norm"),
    )
    layer = Layer(params, KvKind.NONE, 0, None, 8 * hidden + 2 * inter, heads)
    return Tower(
        "vision", before, (layer,) * layers, (plain("post_layernorm", 2 * hidden, "norm"),), hidden
    )


def _text_decoder(r: Reader) -> tuple[Decoder, Mapping[str, Any]]:
    """The llama-shaped family of the text_config (llama when it names none), and its defaults."""
    text_raw = r.raw.get("text_config") or {}
    name = text_raw.get("model_type", "llama") if isinstance(text_raw, dict) else "llama"
    family = find(name) if isinstance(name, str) else None
    if family is None or not isinstance(family.builder, Decoder):
        raise CannotEstimate(
            f"{r.where}.text_config has model_type {str(name)[:40]!r}, "
            "which this estimator cannot count"
        )
    return family.builder, family.defaults


def llava(r: Reader, _architecture: str) -> Built:
    """LLaVA: a CLIP vision tower, a two-layer projector, and a text decoder of any registered
    llama-shaped (`Decoder`) family."""
    vision = clip_vision(r.sub("vision_config", LLAVA_VISION_DEFAULTS))
    decoder, defaults = _text_decoder(r)
    text_r = r.sub("text_config", defaults)
    tied = r.flag("tie_word_embeddings") or text_r.flag("tie_word_embeddings")
    built = decoder.build(text_r, head=False)
    text = _with_head(built.towers[0], tied)
    feature = r.raw.get("vision_feature_layer", -2)
    layers = len(feature) if isinstance(feature, list) else 1
    proj_bias = r.flag("multimodal_projector_bias")
    projector = Tower(
        "projector",
        (),
        (),
        (
            linear(
                "multi_modal_projector.linear_1",
                vision.hidden * layers,
                text.hidden,
                bias=proj_bias,
                kind="projector",
            ),
            linear(
                "multi_modal_projector.linear_2",
                text.hidden,
                text.hidden,
                bias=proj_bias,
                kind="projector",
            ),
        ),
    )
    return Built((vision, projector, text), built.context)


def _with_head(text: Tower, tied: bool) -> Tower:
    after = text.after
    if not tied:
        after += (linear("lm_head", text.hidden, text.vocab, bias=False, kind="head"),)
    return Tower(text.name, text.before, text.layers, after, text.hidden, text.vocab)


def qwen3_asr(r: Reader, _architecture: str) -> Built:
    """Qwen3-ASR: a Whisper-style audio encoder with a conv front-end, projector, Qwen3 text.

    The original checkpoints nest both under `thinker_config`; the `-hf` conversions put them
    at the top. Either is read; nothing is taken from another family's defaults.
    """
    outer = r
    if isinstance(r.raw.get("thinker_config"), dict):
        r = r.sub("thinker_config", QWEN3_ASR.defaults)
    audio, projector = _audio(r.sub("audio_config", QWEN3_ASR_AUDIO_DEFAULTS))
    text_r = r.sub("text_config", QWEN3_ASR_TEXT_DEFAULTS)
    built = QWEN3_DECODER.build(text_r, head=False)
    tied = _first_flag((outer, r, text_r), "tie_word_embeddings", True)
    notes: tuple[str, ...] = ()
    if "thinker_config" in outer.raw:
        notes = ("read thinker_config.audio_config and thinker_config.text_config",)
    return Built((audio, projector, _with_head(built.towers[0], tied)), built.context, notes=notes)


def _audio(a: Reader) -> tuple[Tower, Tower]:
    """The audio encoder and the projector into the text model."""
    d = a.integer("d_model", "hidden_size", limit="hidden")
    layers = a.integer("encoder_layers", "num_hidden_layers", limit="layers")
    heads = a.integer("encoder_attention_heads", "num_attention_heads", limit="heads")
    ffn = a.integer("encoder_ffn_dim", "intermediate_size", limit="intermediate")
    mel = a.integer("num_mel_bins", limit="small")
    down = a.integer("downsample_hidden_size", limit="hidden")
    out_dim = a.integer("output_dim", limit="hidden")
    freq = (((mel + 1) // 2 + 1) // 2 + 1) // 2
    params = _encoder_layer(d, ffn, mlp_prefix="")
    before = (
        plain("conv2d1", down * 9 + down, "conv"),
        plain("conv2d2", down * down * 9 + down, "conv"),
        plain("conv2d3", down * down * 9 + down, "conv"),
        linear("conv_out", down * freq, d, bias=False, kind="conv"),
    )
    layer = Layer(params, KvKind.NONE, 0, None, 8 * d + 2 * ffn, heads)
    audio = Tower("audio", before, (layer,) * layers, (plain("ln_post", 2 * d, "norm"),), d)
    projector = Tower(
        "projector",
        (),
        (),
        (
            linear("multi_modal_projector.linear_1", d, d, bias=True, kind="projector"),
            linear("multi_modal_projector.linear_2", d, out_dim, bias=True, kind="projector"),
        ),
    )
    return audio, projector


def _first_flag(readers: tuple[Reader, ...], key: str, default: bool) -> bool:
    for reader in readers:
        if key in reader.raw and reader.raw[key] is not None:
            return reader.flag(key)
    return default


LLAVA = Family(
    "llava",
    ("LlavaForConditionalGeneration",),
    {"tie_word_embeddings": False, "multimodal_projector_bias": True, "vision_feature_layer": -2},
    llava,
)

QWEN3_ASR = Family(
    "qwen3_asr", ("Qwen3ASRForConditionalGeneration",), {"tie_word_embeddings": True}, qwen3_asr
)
