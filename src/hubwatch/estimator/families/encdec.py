"""Encoder-decoders with learned positions and biased layers: BART, mBART and Whisper.

One layer shape serves all three (biased q/k/v/out attention, LayerNorms with bias, fc1/fc2);
they differ in the front-end (a shared token embedding or Whisper's audio convolutions), the
position tables, and which stacks end in a LayerNorm. Counted as `…ForConditionalGeneration`,
the head tied to the token embedding unless the config unties it. Defaults: defaults.json.
"""

from __future__ import annotations

from dataclasses import dataclass

from hubwatch.estimator.config import CannotEstimate, Reader
from hubwatch.estimator.families.defaults import family
from hubwatch.estimator.registry import Built, Family
from hubwatch.estimator.structure import KvKind, Layer, Param, Tower, linear, plain


def attention(prefix: str, d: int, *, k_bias: bool = True) -> list[Param]:
    """Multi-head attention with biases on q, v and out (and on k unless `k_bias` is False:
    Whisper's k_proj has none)."""
    return [
        linear(f"{prefix}.q_proj", d, d, bias=True, kind="attention"),
        linear(f"{prefix}.k_proj", d, d, bias=k_bias, kind="attention"),
        linear(f"{prefix}.v_proj", d, d, bias=True, kind="attention"),
        linear(f"{prefix}.out_proj", d, d, bias=True, kind="attention"),
    ]


@dataclass(frozen=True, slots=True)
class _Sizes:
    d: int
    enc_layers: int
    dec_layers: int
    enc_ffn: int
    dec_ffn: int
    enc_heads: int
    dec_heads: int
    vocab: int


def _sizes(r: Reader) -> _Sizes:
    s = _build_sizes(r)
    for heads in (s.enc_heads, s.dec_heads):
        if s.d % heads:
            raise CannotEstimate(f"{r.where}: d_model {s.d} is not divisible by {heads} heads")
    return s


def _build_sizes(r: Reader) -> _Sizes:
    return _Sizes(
        d=r.integer("d_model", limit="hidden"),
        enc_layers=r.integer("encoder_layers", limit="layers"),
        dec_layers=r.integer("decoder_layers", limit="layers"),
        enc_ffn=r.integer("encoder_ffn_dim", limit="intermediate"),
        dec_ffn=r.integer("decoder_ffn_dim", limit="intermediate"),
        enc_heads=r.integer("encoder_attention_heads", limit="heads"),
        dec_heads=r.integer("decoder_attention_heads", limit="heads"),
        vocab=r.integer("vocab_size", limit="vocab"),
    )


def _stacks(s: _Sizes, k_bias: bool) -> tuple[tuple[Layer, ...], tuple[Layer, ...]]:
    """The encoder's and the decoder's layers; the decoder caches its own keys and values (the
    cross-attention's are the encoder's output, computed once)."""
    d = s.d
    enc = Layer(
        (
            *attention("self_attn", d, k_bias=k_bias),
            plain("layer_norms", 4 * d, "norm"),
            linear("fc1", d, s.enc_ffn, bias=True, kind="mlp"),
            linear("fc2", s.enc_ffn, d, bias=True, kind="mlp"),
        ),
        KvKind.NONE,
        0,
        None,
        8 * d + 2 * s.enc_ffn,
        s.enc_heads,
    )
    dec = Layer(
        (
            *attention("self_attn", d, k_bias=k_bias),
            *attention("encoder_attn", d, k_bias=k_bias),
            plain("layer_norms", 6 * d, "norm"),
            linear("fc1", d, s.dec_ffn, bias=True, kind="mlp"),
            linear("fc2", s.dec_ffn, d, bias=True, kind="mlp"),
        ),
        KvKind.FULL,
        2 * d,
        None,
        12 * d + 2 * s.dec_ffn,
        s.dec_heads,
    )
    return (enc,) * s.enc_layers, (dec,) * s.dec_layers


def _only(r: Reader, architecture: str, wanted: str) -> None:
    if architecture not in ("", wanted):
        raise CannotEstimate(
            f"architecture {architecture[:60]!r}: only {wanted} is counted for "
            f"{r.name('model_type') or 'this family'}"
        )


def _head(r: Reader, s: _Sizes) -> tuple[Param, ...]:
    if r.flag("tie_word_embeddings", True):
        return ()
    return (linear("lm_head", s.d, s.vocab, bias=False, kind="head"),)


def bart(r: Reader, architecture: str) -> Built:
    """BART and mBART: a shared embedding, learned positions (two more than the maximum, an
    offset BART keeps), an embedding LayerNorm in each stack, and (mBART) a final one."""
    is_mbart = (r.name("model_type") or "bart") == "mbart"
    _only(
        r,
        architecture,
        "MBartForConditionalGeneration" if is_mbart else "BartForConditionalGeneration",
    )
    s = _sizes(r)
    context = r.integer("max_position_embeddings", limit="context")
    enc, dec = _stacks(s, k_bias=True)
    positions = (context + 2) * s.d
    final = [plain("layer_norm", 2 * s.d, "norm")] if is_mbart else []
    head = _head(r, s)
    # NOTE: untied, transformers 5 gives the encoder and the decoder token embeddings of their
    # own beside `shared` and the head: four vocabulary tables.
    own = [plain(f"{k}.embed_tokens", s.vocab * s.d, "embedding") for k in ("encoder", "decoder")]
    encoder = Tower(
        "encoder",
        (
            plain("shared", s.vocab * s.d, "embedding"),
            *(own[:1] if head else []),
            plain("encoder.embed_positions", positions, "embedding"),
            plain("encoder.layernorm_embedding", 2 * s.d, "norm"),
        ),
        enc,
        tuple(final),
        s.d,
    )
    decoder = Tower(
        "text",
        (
            *(own[1:] if head else []),
            plain("decoder.embed_positions", positions, "embedding"),
            plain("decoder.layernorm_embedding", 2 * s.d, "norm"),
        ),
        dec,
        (*final, *head),
        s.d,
        s.vocab,
    )
    return Built((encoder, decoder), context)


def whisper(r: Reader, architecture: str) -> Built:
    """Whisper: two audio convolutions and learned positions in front of the encoder, token and
    position embeddings in front of the decoder, a LayerNorm after each stack; the output
    projection is tied to the decoder's token embedding."""
    _only(r, architecture, "WhisperForConditionalGeneration")
    s = _sizes(r)
    mel = r.integer("num_mel_bins", limit="small")
    source = r.integer("max_source_positions", limit="context")
    target = r.integer("max_target_positions", limit="context")
    enc, dec = _stacks(s, k_bias=False)
    d = s.d
    encoder = Tower(
        "audio",
        (
            plain("encoder.conv1", mel * d * 3 + d, "conv"),
            plain("encoder.conv2", d * d * 3 + d, "conv"),
            plain("encoder.embed_positions", source * d, "embedding"),
        ),
        enc,
        (plain("encoder.layer_norm", 2 * d, "norm"),),
        d,
    )
    decoder = Tower(
        "text",
        (
            plain("decoder.embed_tokens", s.vocab * d, "embedding"),
            plain("decoder.embed_positions", target * d, "embedding"),
        ),
        dec,
        (plain("decoder.layer_norm", 2 * d, "norm"), *_head(r, s)),
        d,
        s.vocab,
    )
    notes = (f"audio encoder: {source} positions (30 s of audio); decoder context {target}",)
    return Built((encoder, decoder), target, notes=notes)


ENCDEC: tuple[Family, ...] = (
    family("bart", "BartForConditionalGeneration", bart),
    family("mbart", "MBartForConditionalGeneration", bart),
    family("whisper", "WhisperForConditionalGeneration", whisper),
)
"""BART, mBART and Whisper, in registration order."""
