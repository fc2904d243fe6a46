"""Llama 3.2 Vision (mllama): a tiled two-stage vision encoder and a llama decoder with gated
cross-attention layers at `cross_attention_layers`. Defaults are its config class's.
"""

from __future__ import annotations

from hubwatch.estimator.config import CannotEstimate, Reader
from hubwatch.estimator.families.defaults import family
from hubwatch.estimator.registry import Built, Family
from hubwatch.estimator.structure import KvKind, Layer, Param, Tower, linear, plain

_RATIOS = [[1, 1], [1, 2], [1, 3], [1, 4], [2, 1], [2, 2], [3, 1], [4, 1]]
_CROSS = [3, 8, 13, 18, 23, 28, 33, 38]


def _vision_layer(h: int, inter: int, heads: int, gated: bool) -> Layer:
    """One encoder layer: unbiased attention, a biased MLP, LayerNorms with bias, and (in the
    global encoder) a gate on each branch."""
    params: list[Param] = [
        *(
            linear(f"self_attn.{name}", h, h, bias=False, kind="attention")
            for name in ("q_proj", "k_proj", "v_proj", "o_proj")
        ),
        linear("mlp.fc1", h, inter, bias=True, kind="mlp"),
        linear("mlp.fc2", inter, h, bias=True, kind="mlp"),
        plain("layernorms", 4 * h, "norm"),
    ]
    if gated:
        params.append(plain("gate_attn_gate_ffn", 2, "norm"))
    return Layer(tuple(params), KvKind.NONE, 0, None, 8 * h + 2 * inter, heads)


def _vision(r: Reader) -> Tower:
    """MllamaVisionModel: patch conv, class token, gated position and tile embeddings, the
    local encoder and the gated global encoder between LayerNorms."""
    h = r.integer("hidden_size", limit="hidden")
    inter = r.integer("intermediate_size", limit="intermediate")
    heads = r.integer("attention_heads", limit="heads")
    patch = r.integer("patch_size", limit="small")
    patches = (r.integer("image_size", limit="small") // patch) ** 2 + 1
    tiles = r.integer("max_num_tiles", limit="small")
    # NOTE: the config class fills a null with these eight (the tilings of up to 4 tiles).
    ratios = r.get("supported_aspect_ratios", _RATIOS)
    if not isinstance(ratios, list) or len(ratios) > 1000:
        raise CannotEstimate(f"{r.where}.supported_aspect_ratios is not a list of ratios")
    ids = len(ratios) + 1  # NOTE: aspect-ratio id 0 is padding
    before = (
        plain("class_embedding", h, "embedding"),
        plain("patch_embedding", r.integer("num_channels", limit="small") * h * patch**2, "conv"),
        plain(
            "gated_positional_embedding", 1 + patches * h + ids * tiles * patches * h, "embedding"
        ),
        plain("pre_post_tile_positional_embedding", 2 * (1 + ids * tiles * h), "embedding"),
        plain("layernorm_pre", 2 * h, "norm"),
    )
    local = (_vision_layer(h, inter, heads, False),) * r.integer(
        "num_hidden_layers", limit="layers"
    )
    glob = (_vision_layer(h, inter, heads, True),) * r.integer("num_global_layers", limit="layers")
    after = (plain("layernorm_post", 2 * h, "norm"),)
    return Tower("vision", before, local + glob, after, h)


def _text(r: Reader) -> tuple[Tower, int]:
    """MllamaTextModel with its head: self-attention layers, and gated cross-attention layers
    (with q/k norms) in their place at cross_attention_layers."""
    h = r.integer("hidden_size", limit="hidden")
    n = r.integer("num_hidden_layers", limit="layers")
    vocab = r.integer("vocab_size", limit="vocab")
    heads = r.integer("num_attention_heads", limit="heads")
    kv = r.opt_integer("num_key_value_heads", limit="heads") or heads
    inter = r.integer("intermediate_size", limit="intermediate")
    if h % heads:
        raise CannotEstimate(f"{r.where}: hidden size {h} is not divisible by {heads} heads")
    d = h // heads
    cross = set(r.int_list("cross_attention_layers", default=_CROSS))  # the class's for null

    def attention(prefix: str) -> list[Param]:
        return [
            linear(f"{prefix}.q_proj", h, heads * d, bias=False, kind="attention"),
            linear(f"{prefix}.k_proj", h, kv * d, bias=False, kind="attention"),
            linear(f"{prefix}.v_proj", h, kv * d, bias=False, kind="attention"),
            linear(f"{prefix}.o_proj", heads * d, h, bias=False, kind="attention"),
        ]

    mlp = [
        linear("mlp.gate_proj", h, inter, bias=False, kind="mlp"),
        linear("mlp.up_proj", h, inter, bias=False, kind="mlp"),
        linear("mlp.down_proj", inter, h, bias=False, kind="mlp"),
        plain("layernorms", 2 * h, "norm"),
    ]
    act = 4 * h + 2 * heads * d + 2 * kv * d + 4 * inter
    plain_layer = Layer((*attention("self_attn"), *mlp), KvKind.FULL, 2 * kv * d, None, act, heads)
    # NOTE: a cross-attention layer's keys and values are the image's, computed once per image:
    # nothing grows with the text.
    gated = (
        *attention("cross_attn"),
        plain("cross_attn.q_norm_k_norm", 2 * d, "norm"),
        plain("cross_attn_gates", 2, "norm"),
    )
    cross_layer = Layer((*gated, *mlp), KvKind.NONE, 0, None, act, heads)
    layers = tuple(cross_layer if i in cross else plain_layer for i in range(n))
    after: list[Param] = [plain("norm", h, "norm")]
    if not r.flag("tie_word_embeddings"):
        after.append(linear("lm_head", h, vocab, bias=False, kind="head"))
    # NOTE: the embedding holds 8 more rows than the vocabulary, for the image tokens.
    before = (plain("embed_tokens", (vocab + 8) * h, "embedding"),)
    context = r.integer("max_position_embeddings", limit="context")
    return Tower("text", before, layers, tuple(after), h, vocab), context


def mllama(r: Reader, _architecture: str) -> Built:
    """Llama 3.2 Vision: the vision model, one biased projector, the cross-attention decoder."""
    v = r.nested("vision_config")
    vision = _vision(v)
    text, context = _text(r.nested("text_config"))
    width = v.integer("vision_output_dim", limit="hidden")
    projector = Tower(
        "projector",
        (),
        (),
        (linear("multi_modal_projector", width, text.hidden, bias=True, kind="projector"),),
    )
    return Built((vision, projector, text), context)


MLLAMA: tuple[Family, ...] = (family("mllama", "MllamaForConditionalGeneration", mllama),)
"""Llama 3.2 Vision."""
