"""Builders for the families with a vision or audio tower beside the text decoder."""

from __future__ import annotations

from hubwatch.estimator.config import CannotEstimate, Reader
from hubwatch.estimator.defaults import FAMILY_DEFAULTS
from hubwatch.estimator.families import DECODERS, Built, decoder
from hubwatch.estimator.structure import KvKind, Layer, Param, Tower, linear, plain


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


def llava(r: Reader) -> Built:
    """LLaVA: a CLIP vision tower, a two-layer projector, and a text decoder of any family."""
    vision_r = r.sub("vision_config", FAMILY_DEFAULTS["llava.vision"])
    vision = clip_vision(vision_r)
    text_raw = r.raw.get("text_config") or {}
    text_family = text_raw.get("model_type", "llama") if isinstance(text_raw, dict) else "llama"
    if text_family not in DECODERS:
        raise CannotEstimate(
            f"{r.where}.text_config has model_type {str(text_family)[:40]!r}, "
            "which this estimator cannot count"
        )
    text_r = r.sub("text_config", FAMILY_DEFAULTS[text_family])
    tied = r.flag("tie_word_embeddings") or text_r.flag("tie_word_embeddings")
    (text,), context, _ = decoder(text_r, text_family, head=False)
    text = _with_head(text, tied)
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
    return (vision, projector, text), context, True


def _with_head(text: Tower, tied: bool) -> Tower:
    after = text.after
    if not tied:
        after += (linear("lm_head", text.hidden, text.vocab, bias=False, kind="head"),)
    return Tower(text.name, text.before, text.layers, after, text.hidden, text.vocab)


def qwen3_asr(r: Reader) -> Built:
    """Qwen3-ASR: a Whisper-style audio encoder with a conv front-end, projector, Qwen3 text.

    The original checkpoints nest both under `thinker_config`; the `-hf` conversions put them
    at the top. Either is read; nothing is taken from another family's defaults.
    """
    outer = r
    if isinstance(r.raw.get("thinker_config"), dict):
        r = r.sub("thinker_config", FAMILY_DEFAULTS["qwen3_asr"])
    a = r.sub("audio_config", FAMILY_DEFAULTS["qwen3_asr.audio"])
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
    text_r = r.sub("text_config", FAMILY_DEFAULTS["qwen3_asr.text"])
    (text,), context, _ = decoder(text_r, "qwen3", head=False)
    tied = _first_flag((outer, r, text_r), "tie_word_embeddings", True)
    return (audio, projector, _with_head(text, tied)), context, True


def _first_flag(readers: tuple[Reader, ...], key: str, default: bool) -> bool:
    for reader in readers:
        if key in reader.raw and reader.raw[key] is not None:
            return reader.flag(key)
    return default
