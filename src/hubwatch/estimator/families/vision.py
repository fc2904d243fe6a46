"""Vision-language wrappers of a SigLIP tower and a known text decoder: Gemma 3, PaliGemma.

The text decoder is whichever registered llama-shaped (`Decoder`) family the text_config names;
every size is read from the nested configs, with the wrapper's config-class defaults (which
nest its sub-configs' own) for what a config leaves out.
"""

from __future__ import annotations

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


def siglip_vision(r: Reader) -> Tower:
    """SiglipVisionModel: biased patch conv, learned positions, encoder, post-norm, and the
    attention-pooling head when vision_use_head is set."""
    hidden = r.integer("hidden_size", limit="hidden")
    layers = r.integer("num_hidden_layers", limit="layers")
    inter = r.integer("intermediate_size", limit="intermediate")
    heads = r.integer("num_attention_heads", limit="heads")
    channels = r.integer("num_channels", limit="small")
    image = r.integer("image_size", limit="small")
    patch = r.integer("patch_size", limit="small")
    before = (
        plain("embeddings.patch_embedding", channels * hidden * patch * patch + hidden, "conv"),
        plain("embeddings.position_embedding", (image // patch) ** 2 * hidden, "embedding"),
    )
    after: list[Param] = [plain("post_layernorm", 2 * hidden, "norm")]
    if r.flag("vision_use_head", True):
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


def text_tower(r: Reader, default_type: str) -> tuple[Tower, int]:
    """The text decoder of a wrapper, with its LM head unless tied, and its context."""
    text_r = r.nested("text_config")
    name = text_r.name("model_type") or default_type
    family = find(name)
    if family is None or not isinstance(family.builder, Decoder):
        raise CannotEstimate(
            f"{text_r.where} has model_type {name[:40]!r}, which this estimator cannot count"
        )
    built = family.builder.build(text_r, head=False)
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
    width = vision_r.integer("projection_dim", limit="hidden")
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


VISION: tuple[Family, ...] = (
    Family("gemma3", ("Gemma3ForConditionalGeneration",), defaults("gemma3"), gemma3),
    Family("paligemma", ("PaliGemmaForConditionalGeneration",), defaults("paligemma"), paligemma),
)
"""The SigLIP vision-language wrappers, in registration order."""
