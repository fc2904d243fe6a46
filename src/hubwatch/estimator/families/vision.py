"""SigLIP and CLIP (image and text towers), and the vision-language wrappers of a SigLIP tower
and a known text decoder: Gemma 3, PaliGemma.

The text decoder is whichever registered llama-shaped (`Decoder`) family the text_config names;
every size is read from the nested configs, with the wrapper's config-class defaults (which
nest its sub-configs' own) for what a config leaves out.
"""

from __future__ import annotations

from collections.abc import Mapping

from hubwatch.estimator.config import CannotEstimate, Reader
from hubwatch.estimator.families.decoder import Decoder
from hubwatch.estimator.families.defaults import defaults
from hubwatch.estimator.registry import Built, Family, find
from hubwatch.estimator.structure import KvKind, Layer, Param, Tower, linear, plain


def _encoder_layer(hidden: int, inter: int, heads: int) -> Layer:
    """One SigLIP/CLIP encoder layer: biased attention, two LayerNorms, a biased two-layer MLP."""
    params = (
        linear("self_attn.q_proj", hidden, hidden, bias=True, kind="attention"),
        linear("self_attn.k_proj", hidden, hidden, bias=True, kind="attention"),
        linear("self_attn.v_proj", hidden, hidden, bias=True, kind="attention"),
        linear("self_attn.out_proj", hidden, hidden, bias=True, kind="attention"),
        plain("layer_norms", 4 * hidden, "norm"),
        linear("mlp.fc1", hidden, inter, bias=True, kind="mlp"),
        linear("mlp.fc2", inter, hidden, bias=True, kind="mlp"),
    )
    return Layer(params, KvKind.NONE, 0, None, 8 * hidden + 2 * inter, heads)


def siglip_vision(r: Reader, head: bool | None = None) -> Tower:
    """SiglipVisionModel: biased patch conv, learned positions, encoder, post-norm, and the
    attention-pooling head when vision_use_head is set (or `head` says so: Idefics3 has none)."""
    hidden = r.integer("hidden_size", limit="hidden")
    layers = r.integer("num_hidden_layers", limit="layers")
    inter = r.integer("intermediate_size", limit="intermediate")
    heads = r.integer("num_attention_heads", limit="heads")
    channels = r.integer("num_channels", limit="small")
    patch = r.integer("patch_size", limit="small")
    if "num_patches" in r.defaults or "num_patches" in r.raw:  # SigLIP 2: a fixed patch budget
        positions = r.integer("num_patches", limit="small")
    else:
        positions = (r.integer("image_size", limit="small") // patch) ** 2
    before = (
        plain("embeddings.patch_embedding", channels * hidden * patch * patch + hidden, "conv"),
        plain("embeddings.position_embedding", positions * hidden, "embedding"),
    )
    after: list[Param] = [plain("post_layernorm", 2 * hidden, "norm")]
    if r.flag("vision_use_head", True) if head is None else head:
        after += [
            plain("head.probe", hidden, "attention"),
            linear("head.attention.in_proj", hidden, 3 * hidden, bias=True, kind="attention"),
            linear("head.attention.out_proj", hidden, hidden, bias=True, kind="attention"),
            plain("head.layernorm", 2 * hidden, "norm"),
            linear("head.mlp.fc1", hidden, inter, bias=True, kind="mlp"),
            linear("head.mlp.fc2", inter, hidden, bias=True, kind="mlp"),
        ]
    layer = _encoder_layer(hidden, inter, heads)
    return Tower("vision", before, (layer,) * layers, tuple(after), hidden)


def text_tower(r: Reader, default_type: str, decoder: Decoder | None = None) -> tuple[Tower, int]:
    """The text decoder of a wrapper, with its LM head unless tied, and its context.

    `decoder` is the layer shape of a text_config type no family answers to (`qwen2_vl_text`
    is Qwen2's); a config without a text_config (Qwen2-VL's first layout) keeps it at the top.
    """
    flat = not isinstance(r.raw.get("text_config"), Mapping) and "num_hidden_layers" in r.raw
    if flat:
        inner = r.defaults.get("text_config@class") or r.defaults.get("text_config") or {}
        text_r = Reader(r.raw, inner if isinstance(inner, Mapping) else {}, r.where, r.defaulted)
    else:
        text_r = r.nested("text_config")
    name = text_r.name("model_type") or default_type
    if decoder is None or name not in (default_type, r.name("model_type")):
        family = find(name)
        if family is None or not isinstance(family.builder, Decoder):
            raise CannotEstimate(
                f"{text_r.where} has model_type {name[:40]!r}, which this estimator cannot count"
            )
        if name != default_type:  # another family's config class fills what it omits
            text_r = r.sub("text_config", family.defaults)
        decoder = family.builder
    elif "tie_word_embeddings" not in text_r.raw:
        # NOTE: Qwen-VL text config classes have no tie_word_embeddings: the wrapper's decides.
        raw = {**text_r.raw, "tie_word_embeddings": False}
        text_r = Reader(raw, text_r.defaults, text_r.where, text_r.defaulted)
    built = decoder.build(text_r, head=False)
    text = built.towers[0]
    tied = r.flag("tie_word_embeddings", True) or text_r.flag("tie_word_embeddings", True)
    after = text.after
    if not tied:
        after += (linear("lm_head", text.hidden, text.vocab, bias=False, kind="head"),)
    return Tower(text.name, text.before, text.layers, after, text.hidden, text.vocab), built.context


def gemma3(r: Reader, _architecture: str) -> Built:
    """Gemma 3: a SigLIP tower, a soft-embedding norm and projection, a Gemma 3 text decoder."""
    vision = siglip_vision(r.nested("vision_config"))
    text, context = text_tower(r, "gemma3_text")
    projector = Tower(
        "projector",
        (),
        (),
        (
            plain("multi_modal_projector.mm_soft_emb_norm", vision.hidden, "norm"),
            plain(
                "multi_modal_projector.mm_input_projection_weight",
                vision.hidden * text.hidden,
                "projector",
            ),
        ),
    )
    return Built((vision, projector, text), context)


def paligemma(r: Reader, _architecture: str) -> Built:
    """PaliGemma: a SigLIP tower, one biased linear projector, a Gemma text decoder."""
    vision_r = r.nested("vision_config")
    vision = siglip_vision(vision_r)
    # NOTE: PaliGemmaConfig overwrites vision_config.projection_dim with its own.
    width = r.integer("projection_dim", limit="hidden")
    text, context = text_tower(r, "gemma")
    projector = Tower(
        "projector",
        (),
        (),
        (
            linear(
                "multi_modal_projector.linear", vision.hidden, width, bias=True, kind="projector"
            ),
        ),
    )
    return Built((vision, projector, text), context)


def _text_encoder(r: Reader) -> Tower:
    """The text tower of CLIP and SigLIP: token and position embeddings, encoder, final norm."""
    hidden = r.integer("hidden_size", limit="hidden")
    vocab = r.integer("vocab_size", limit="vocab")
    layer = _encoder_layer(
        hidden,
        r.integer("intermediate_size", limit="intermediate"),
        r.integer("num_attention_heads", limit="heads"),
    )
    before = (
        plain("embeddings.token_embedding", vocab * hidden, "embedding"),
        plain(
            "embeddings.position_embedding",
            r.integer("max_position_embeddings", limit="context") * hidden,
            "embedding",
        ),
    )
    layers = r.integer("num_hidden_layers", limit="layers")
    after = (plain("final_layer_norm", 2 * hidden, "norm"),)
    return Tower("text", before, (layer,) * layers, after, hidden)


def _clip_vision(r: Reader) -> Tower:
    """CLIPVisionModel: class token, unbiased patch conv, positions, pre- and post-norms."""
    hidden = r.integer("hidden_size", limit="hidden")
    patch = r.integer("patch_size", limit="small")
    positions = (r.integer("image_size", limit="small") // patch) ** 2 + 1
    channels = r.integer("num_channels", limit="small")
    layer = _encoder_layer(
        hidden,
        r.integer("intermediate_size", limit="intermediate"),
        r.integer("num_attention_heads", limit="heads"),
    )
    before = (
        plain("embeddings.class_embedding", hidden, "embedding"),
        plain("embeddings.patch_embedding", channels * hidden * patch * patch, "conv"),
        plain("embeddings.position_embedding", positions * hidden, "embedding"),
        plain("pre_layrnorm", 2 * hidden, "norm"),
    )
    layers = r.integer("num_hidden_layers", limit="layers")
    after = (plain("post_layernorm", 2 * hidden, "norm"),)
    return Tower("vision", before, (layer,) * layers, after, hidden)


def _only(architecture: str, allowed: str) -> None:
    if architecture not in ("", allowed):
        raise CannotEstimate(
            f"architecture {architecture[:60]!r}: only {allowed} is counted for this family"
        )


def clip(r: Reader, architecture: str) -> Built:
    """CLIPModel: both towers, their projections into the shared space, the logit scale."""
    _only(architecture, "CLIPModel")
    text_r = r.nested("text_config")
    text, vision = _text_encoder(text_r), _clip_vision(r.nested("vision_config"))
    width = r.integer("projection_dim", limit="hidden")
    heads = Tower(
        "projector",
        (),
        (),
        (
            linear("visual_projection", vision.hidden, width, bias=False, kind="projector"),
            linear("text_projection", text.hidden, width, bias=False, kind="projector"),
            plain("logit_scale", 1, "projector"),
        ),
    )
    context = text_r.integer("max_position_embeddings", limit="context")
    return Built((text, vision, heads), context, generates=False)


def siglip(r: Reader, architecture: str) -> Built:
    """SiglipModel and Siglip2Model: both towers, the text head, logit scale and bias."""
    _only(
        architecture, "Siglip2Model" if "siglip2" in (r.name("model_type") or "") else "SiglipModel"
    )
    text_r = r.nested("text_config")
    text = _text_encoder(text_r)
    width = text_r.opt_integer("projection_size", limit="hidden") or text.hidden
    text = Tower(
        text.name,
        text.before,
        text.layers,
        (*text.after, linear("head", text.hidden, width, bias=True, kind="projector")),
        text.hidden,
    )
    vision = siglip_vision(r.nested("vision_config"))
    scale = Tower("projector", (), (), (plain("logit_scale_and_bias", 2, "projector"),))
    context = text_r.integer("max_position_embeddings", limit="context")
    return Built((text, vision, scale), context, generates=False)


VISION: tuple[Family, ...] = (
    Family("clip", ("CLIPModel",), defaults("clip"), clip),
    Family("siglip", ("SiglipModel",), defaults("siglip"), siglip),
    Family("siglip2", ("Siglip2Model",), defaults("siglip2"), siglip),
    Family("gemma3", ("Gemma3ForConditionalGeneration",), defaults("gemma3"), gemma3),
    Family("paligemma", ("PaliGemmaForConditionalGeneration",), defaults("paligemma"), paligemma),
)
"""The SigLIP vision-language wrappers, in registration order."""
