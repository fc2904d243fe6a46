"""Encoder-decoders: T5, mT5 and UMT5 (relative position buckets, gated or plain feed-forward).

Counted as `…ForConditionalGeneration`: a shared embedding, the encoder and decoder stacks, and
an LM head unless tied. Other heads are refused. Defaults are the config classes' (defaults.json).
"""

from __future__ import annotations

from hubwatch.estimator.config import CannotEstimate, Reader
from hubwatch.estimator.families.defaults import defaults
from hubwatch.estimator.registry import Built, Family
from hubwatch.estimator.structure import KvKind, Layer, Param, Tower, linear, plain


def _attention(prefix: str, d: int, inner: int) -> list[Param]:
    return [
        linear(f"{prefix}.q", d, inner, bias=False, kind="attention"),
        linear(f"{prefix}.k", d, inner, bias=False, kind="attention"),
        linear(f"{prefix}.v", d, inner, bias=False, kind="attention"),
        linear(f"{prefix}.o", inner, d, bias=False, kind="attention"),
    ]


def _ffn(r: Reader, d: int, ff: int) -> list[Param]:
    proj = r.name("feed_forward_proj") or "relu"
    if proj.startswith("gated-"):
        return [
            linear("DenseReluDense.wi_0", d, ff, bias=False, kind="mlp"),
            linear("DenseReluDense.wi_1", d, ff, bias=False, kind="mlp"),
            linear("DenseReluDense.wo", ff, d, bias=False, kind="mlp"),
        ]
    return [
        linear("DenseReluDense.wi", d, ff, bias=False, kind="mlp"),
        linear("DenseReluDense.wo", ff, d, bias=False, kind="mlp"),
    ]


def _stack(
    layer: list[Param], bias: Param, layers: int, every: bool, act: int, kv: int
) -> tuple[Layer, ...]:
    """`layers` blocks; the relative-position bias in the first only (T5) or in each (UMT5)."""
    kind = KvKind.FULL if kv else KvKind.NONE
    first = Layer((*layer, bias), kind, kv, None, act, 1)
    rest = first if every else Layer(tuple(layer), kind, kv, None, act, 1)
    return (first,) + (rest,) * (layers - 1)


def _checked(r: Reader, architecture: str) -> str:
    """The family (t5, mt5, umt5); CannotEstimate for any head but conditional generation."""
    family = r.name("model_type") or "t5"
    stem = {"t5": "T5", "mt5": "MT5", "umt5": "UMT5"}.get(family, "T5")
    wanted = f"{stem}ForConditionalGeneration"
    if architecture not in ("", wanted):
        raise CannotEstimate(f"architecture {architecture[:60]!r}: only {wanted} is counted")
    return family


def t5(r: Reader, architecture: str) -> Built:
    """T5, mT5 and UMT5 for conditional generation."""
    family = _checked(r, architecture)
    d = r.integer("d_model", limit="hidden")
    inner = r.integer("num_heads", limit="heads") * r.integer("d_kv", limit="hidden")
    ff = r.integer("d_ff", limit="intermediate")
    vocab = r.integer("vocab_size", limit="vocab")
    enc_layers = r.integer("num_layers", limit="layers")
    dec_layers = r.opt_integer("num_decoder_layers", limit="layers") or enc_layers
    heads = r.integer("num_heads", limit="heads")
    bias = plain(
        "relative_attention_bias",
        r.integer("relative_attention_num_buckets", limit="small") * heads,
        "attention",
    )
    every = family == "umt5"
    ffn = _ffn(r, d, ff)
    act = 8 * d + 2 * ff
    encoder = _stack(
        [*_attention("SelfAttention", d, inner), plain("layer_norms", 2 * d, "norm"), *ffn],
        bias,
        enc_layers,
        every,
        act,
        0,
    )
    decoder = _stack(
        [
            *_attention("SelfAttention", d, inner),
            *_attention("EncDecAttention", d, inner),
            plain("layer_norms", 3 * d, "norm"),
            *ffn,
        ],
        bias,
        dec_layers,
        every,
        act + 4 * d,
        2 * inner,
    )
    # NOTE: transformers 5 ties T5's head to the shared embedding always (T5Config sets
    # tie_word_embeddings True and reads a stated False as "do not scale the outputs"); a
    # checkpoint's separate lm_head shows in the headers' count of record.
    after: list[Param] = [plain("decoder.final_layer_norm", d, "norm")]
    notes = ["relative positions: 512 tokens assumed as context"]
    if r.raw.get("tie_word_embeddings") is False:
        notes.append("tie_word_embeddings false: transformers 5 ties T5's head anyway")
    towers = (
        Tower(
            "encoder",
            (plain("shared", vocab * d, "embedding"),),
            encoder,
            (plain("final_layer_norm", d, "norm"),),
            d,
        ),
        Tower("text", (), decoder, tuple(after), d, vocab),
    )
    # NOTE: relative positions have no maximum; T5 was trained on 512 tokens.
    return Built(towers, 512, notes=tuple(notes))


SEQ2SEQ: tuple[Family, ...] = tuple(
    Family(name, (arch,), defaults(name), t5)
    for name, arch in (
        ("t5", "T5ForConditionalGeneration"),
        ("mt5", "MT5ForConditionalGeneration"),
        ("umt5", "UMT5ForConditionalGeneration"),
    )
)
"""The T5 family of encoder-decoders, in registration order."""
