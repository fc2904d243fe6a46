"""Vision-language wrappers over a registered text decoder: Mistral 3 (Pixtral), Idefics3 and
SmolVLM (SigLIP), Qwen2-VL, Qwen2.5-VL and Qwen3-VL (Qwen's own vision transformers), Llama 4.

Each is a vision tower, a projector into the text model, and the text decoder that
`vision.text_tower` builds; sizes come from the nested configs with the wrapper's config-class
defaults (defaults.json) for what a config leaves out.
"""

from __future__ import annotations

from hubwatch.estimator.config import Reader
from hubwatch.estimator.families.decoder import Decoder, qwen2_biases
from hubwatch.estimator.families.defaults import family
from hubwatch.estimator.families.text import QWEN3_DECODER, qwen_windows
from hubwatch.estimator.families.vision import siglip_vision, text_tower
from hubwatch.estimator.registry import Built, Family
from hubwatch.estimator.structure import KvKind, Layer, Param, Tower, linear, plain

QWEN2_DECODER = Decoder(biases=qwen2_biases, layer_types=qwen_windows)
"""Qwen2's layers (text.QWEN2's): the text decoder of Qwen2-VL and Qwen2.5-VL."""


def _projector(*params: Param) -> Tower:
    return Tower("projector", (), (), params)


def _pixtral(r: Reader) -> Tower:
    """PixtralVisionModel: an unbiased patch conv, RMS norms, unbiased attention and gated MLP."""
    h = r.integer("hidden_size", limit="hidden")
    inter = r.integer("intermediate_size", limit="intermediate")
    heads = r.integer("num_attention_heads", limit="heads")
    head_dim = r.opt_integer("head_dim", limit="hidden") or h // heads
    patch = r.integer("patch_size", limit="small")
    channels = r.integer("num_channels", limit="small")
    q = heads * head_dim
    params = (
        plain("attention_norm", h, "norm"),
        linear("attention.q_proj", h, q, bias=False, kind="attention"),
        linear("attention.k_proj", h, q, bias=False, kind="attention"),
        linear("attention.v_proj", h, q, bias=False, kind="attention"),
        linear("attention.o_proj", q, h, bias=False, kind="attention"),
        plain("ffn_norm", h, "norm"),
        linear("feed_forward.gate_proj", h, inter, bias=False, kind="mlp"),
        linear("feed_forward.up_proj", h, inter, bias=False, kind="mlp"),
        linear("feed_forward.down_proj", inter, h, bias=False, kind="mlp"),
    )
    layer = Layer(params, KvKind.NONE, 0, None, 6 * h + 4 * inter, heads)
    before = (
        plain("patch_conv", channels * h * patch * patch, "conv"),
        plain("ln_pre", h, "norm"),
    )
    return Tower("vision", before, (layer,) * r.integer("num_hidden_layers", limit="layers"), (), h)


def mistral3(r: Reader, _architecture: str) -> Built:
    """Mistral 3: a Pixtral tower, a patch merger and a two-layer projector, a Mistral decoder."""
    vision = _pixtral(r.nested("vision_config"))
    text, context = text_tower(r, "mistral")
    merge = r.integer("spatial_merge_size", limit="small")
    feature = r.get("vision_feature_layer", -1)
    taps = len(feature) if isinstance(feature, list) else 1
    bias = r.flag("multimodal_projector_bias")
    v, t = vision.hidden, text.hidden
    projector = _projector(
        plain("multi_modal_projector.norm", v, "norm"),
        linear(
            "multi_modal_projector.patch_merger.merging_layer",
            v * merge * merge,
            v,
            bias=False,
            kind="projector",
        ),
        linear("multi_modal_projector.linear_1", v * taps, t, bias=bias, kind="projector"),
        linear("multi_modal_projector.linear_2", t, t, bias=bias, kind="projector"),
    )
    return Built((vision, projector, text), context)


def idefics3(r: Reader, _architecture: str) -> Built:
    """Idefics3 and SmolVLM: a SigLIP tower without its pooling head, a pixel-shuffle connector
    (one unbiased linear over scale_factor² patches), a llama-shaped decoder."""
    vision = siglip_vision(r.nested("vision_config"), head=False)
    text, context = text_tower(r, "llama")
    scale = r.integer("scale_factor", limit="small")
    projector = _projector(
        linear(
            "connector.modality_projection.proj",
            vision.hidden * scale * scale,
            text.hidden,
            bias=False,
            kind="projector",
        )
    )
    return Built((vision, projector, text), context)


def _qwen_blocks(r: Reader, h: int, gated: bool, mlp_prefix: str = "mlp.") -> tuple[Layer, ...]:
    """The blocks of Qwen's vision transformers: fused biased qkv, a biased MLP (gated, with
    RMS norms, in Qwen2.5-VL; two linears and LayerNorms with bias otherwise)."""
    heads = r.integer("num_heads", limit="heads")
    norm = plain("norm1_norm2", (1 if gated else 2) * 2 * h, "norm")
    attention = (
        linear("attn.qkv", h, 3 * h, bias=True, kind="attention"),
        linear("attn.proj", h, h, bias=True, kind="attention"),
    )
    if gated:
        inter = r.integer("intermediate_size", limit="intermediate")
        mlp: tuple[Param, ...] = (
            linear("mlp.gate_proj", h, inter, bias=True, kind="mlp"),
            linear("mlp.up_proj", h, inter, bias=True, kind="mlp"),
            linear("mlp.down_proj", inter, h, bias=True, kind="mlp"),
        )
        act = 6 * h + 4 * inter
    else:
        inter = r.opt_integer("intermediate_size", limit="intermediate") or (
            h * r.integer("mlp_ratio", limit="small")
        )
        mlp = (
            linear(f"{mlp_prefix}fc1", h, inter, bias=True, kind="mlp"),
            linear(f"{mlp_prefix}fc2", inter, h, bias=True, kind="mlp"),
        )
        act = 8 * h + 2 * inter
    layer = Layer((norm, *attention, *mlp), KvKind.NONE, 0, None, act, heads)
    return (layer,) * r.integer("depth", limit="layers")


def _patch_embed(r: Reader, h: int, bias: bool) -> Param:
    channels = r.integer("in_channels", limit="small")
    patch = r.integer("patch_size", limit="small")
    frames = r.integer("temporal_patch_size", limit="small")
    return plain(
        "patch_embed.proj", channels * frames * patch * patch * h + (h if bias else 0), "conv"
    )


def _merger(prefix: str, h: int, merged: int, out: int, norm: int) -> tuple[Param, ...]:
    """The patch merger: a norm, then two biased linears from merge² patches to the text width."""
    return (
        plain(f"{prefix}.norm", norm, "norm"),
        linear(f"{prefix}.fc1", merged, merged, bias=True, kind="projector"),
        linear(f"{prefix}.fc2", merged, out, bias=True, kind="projector"),
    )


def qwen2_vl(r: Reader, _architecture: str) -> Built:
    """Qwen2-VL and Qwen2.5-VL: Qwen's vision transformer and patch merger, a Qwen2 decoder."""
    v = r.nested("vision_config")
    is_25 = (r.name("model_type") or "") == "qwen2_5_vl"
    # NOTE: Qwen2-VL's blocks are `embed_dim` wide and its `hidden_size` is the merger's output;
    # Qwen2.5-VL's blocks are `hidden_size` wide and the output is `out_hidden_size`.
    if is_25:
        h = v.integer("hidden_size", limit="hidden")
        out = v.integer("out_hidden_size", limit="hidden")
    else:
        h = v.integer("embed_dim", limit="hidden")
        out = v.integer("hidden_size", limit="hidden")
    merged = h * v.integer("spatial_merge_size", limit="small") ** 2
    blocks = _qwen_blocks(v, h, gated=is_25)
    vision = Tower("vision", (_patch_embed(v, h, bias=False),), blocks, (), h)
    projector = _projector(*_merger("visual.merger", h, merged, out, (1 if is_25 else 2) * h))
    text, context = text_tower(r, f"{r.name('model_type') or 'qwen2_vl'}_text", QWEN2_DECODER)
    return Built((vision, projector, text), context)


def qwen3_vl(r: Reader, _architecture: str) -> Built:
    """Qwen3-VL: a vision transformer with learned positions, a patch merger and one DeepStack
    merger per tapped layer, a Qwen3 decoder."""
    v = r.nested("vision_config")
    h = v.integer("hidden_size", limit="hidden")
    out = v.integer("out_hidden_size", limit="hidden")
    merged = h * v.integer("spatial_merge_size", limit="small") ** 2
    taps = len(v.int_list("deepstack_visual_indexes"))
    positions = v.integer("num_position_embeddings", limit="context")
    blocks = _qwen_blocks(v, h, gated=False, mlp_prefix="mlp.linear_")
    before = (_patch_embed(v, h, bias=True), plain("pos_embed", positions * h, "embedding"))
    vision = Tower("vision", before, blocks, (), h)
    deepstack = (
        p
        for i in range(taps)
        for p in _merger(f"visual.deepstack_merger_list.{i}", h, merged, out, 2 * merged)
    )
    projector = _projector(*_merger("visual.merger", h, merged, out, 2 * h), *deepstack)
    text, context = text_tower(r, "qwen3_vl_text", QWEN3_DECODER)
    return Built((vision, projector, text), context)


def _llama4_vision(r: Reader) -> Tower:
    """Llama4VisionModel: an unbiased linear patch embedding, a class token and positions, a
    biased encoder between LayerNorms, the pixel-shuffle MLP adapter."""
    h = r.integer("hidden_size", limit="hidden")
    inter = r.integer("intermediate_size", limit="intermediate")
    heads = r.integer("num_attention_heads", limit="heads")
    patch = r.integer("patch_size", limit="small")
    positions = (r.integer("image_size", limit="small") // patch) ** 2 + 1
    adapter_in = r.integer("projector_input_dim", limit="hidden")
    adapter_out = r.integer("projector_output_dim", limit="hidden")
    params = (
        *(
            linear(f"self_attn.{name}", h, h, bias=True, kind="attention")
            for name in ("q_proj", "k_proj", "v_proj", "o_proj")
        ),
        linear("mlp.fc1", h, inter, bias=True, kind="mlp"),
        linear("mlp.fc2", inter, h, bias=True, kind="mlp"),
        plain("layernorms", 4 * h, "norm"),
    )
    layer = Layer(params, KvKind.NONE, 0, None, 8 * h + 2 * inter, heads)
    channels = r.integer("num_channels", limit="small")
    before = (
        plain("class_embedding", h, "embedding"),
        plain("positional_embedding_vlm", positions * h, "embedding"),
        plain("patch_embedding.linear", channels * patch * patch * h, "conv"),
        plain("layernorm_pre", 2 * h, "norm"),
    )
    after = (
        plain("layernorm_post", 2 * h, "norm"),
        # NOTE: Llama4VisionMLP2 reads intermediate_size, not the shuffled width, as fc1's input
        linear("vision_adapter.mlp.fc1", inter, adapter_in, bias=False, kind="projector"),
        linear("vision_adapter.mlp.fc2", adapter_out, adapter_out, bias=False, kind="projector"),
    )
    layers = r.integer("num_hidden_layers", limit="layers")
    return Tower("vision", before, (layer,) * layers, after, h)


def llama4(r: Reader, _architecture: str) -> Built:
    """Llama 4: its vision model, one unbiased projector, the Llama 4 text model (interleaved
    MoE, chunked attention) as the `llama4_text` family counts it."""
    v = r.nested("vision_config")
    vision = _llama4_vision(v)
    text, context = text_tower(r, "llama4_text")
    width = v.integer("vision_output_dim", limit="hidden")
    projector = _projector(
        linear("multi_modal_projector.linear_1", width, text.hidden, bias=False, kind="projector")
    )
    return Built((vision, projector, text), context)


VLM: tuple[Family, ...] = (
    family("mistral3", "Mistral3ForConditionalGeneration", mistral3),
    family("idefics3", "Idefics3ForConditionalGeneration", idefics3),
    family("smolvlm", "SmolVLMForConditionalGeneration", idefics3),
    family("qwen2_vl", "Qwen2VLForConditionalGeneration", qwen2_vl),
    family("qwen2_5_vl", "Qwen2_5_VLForConditionalGeneration", qwen2_vl),
    family("qwen3_vl", "Qwen3VLForConditionalGeneration", qwen3_vl),
    family("llama4", "Llama4ForConditionalGeneration", llama4),
)
"""The vision-language wrappers of this module, in registration order."""
