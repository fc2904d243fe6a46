"""The encoder-only families: BERT and the encoders that share its layer (RoBERTa, XLM-R,
CamemBERT, ELECTRA, DeBERTa-v2, MPNet, DistilBERT, ALBERT), and ModernBERT.

Each is counted as its base model (`…Model`, with a pooler where it has one) or its masked-LM
head (`…ForMaskedLM`); any other head is refused, since its size depends on the task.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from hubwatch.estimator.config import CannotEstimate, Reader
from hubwatch.estimator.families.defaults import defaults
from hubwatch.estimator.registry import Built, Family
from hubwatch.estimator.structure import KvKind, Layer, Param, Tower, linear, plain


@dataclass(frozen=True, slots=True)
class _Sizes:
    hidden: int
    layers: int
    heads: int
    inter: int
    vocab: int
    context: int
    embedding: int
    """Width of the token embeddings (ELECTRA and ALBERT project them up to hidden)."""
    types: int
    """Token type (segment) embeddings; 0 for none."""


def _bert_sizes(r: Reader) -> _Sizes:
    hidden = r.integer("hidden_size", "dim", limit="hidden")
    heads = r.integer("num_attention_heads", "n_heads", limit="heads")
    if hidden % heads:
        raise CannotEstimate(
            f"{r.where}: hidden size {hidden} is not divisible by {heads} attention heads"
        )
    return _Sizes(
        hidden,
        r.integer("num_hidden_layers", "n_layers", limit="layers"),
        heads,
        r.integer("intermediate_size", "hidden_dim", limit="intermediate"),
        r.integer("vocab_size", limit="vocab"),
        r.integer("max_position_embeddings", limit="context"),
        r.opt_integer("embedding_size", limit="hidden") or hidden,
        r.integer("type_vocab_size", minimum=0, limit="small", default=0),
    )


def _bert_layer(h: int, inter: int, heads: int) -> Layer:
    params = (
        linear("attention.self.query", h, h, bias=True, kind="attention"),
        linear("attention.self.key", h, h, bias=True, kind="attention"),
        linear("attention.self.value", h, h, bias=True, kind="attention"),
        linear("attention.output.dense", h, h, bias=True, kind="attention"),
        plain("layernorms", 4 * h, "norm"),
        linear("intermediate.dense", h, inter, bias=True, kind="mlp"),
        linear("output.dense", inter, h, bias=True, kind="mlp"),
    )
    return Layer(params, KvKind.NONE, 0, None, 8 * h + 2 * inter, heads)


Extra = Callable[[Reader, _Sizes], list[Param]]
"""Parameters a family adds to the encoder (relative position tables and the like)."""


def _no_extra(_r: Reader, _s: _Sizes) -> list[Param]:
    return []


@dataclass(frozen=True, slots=True)
class _Encoder:
    """A BERT-layer encoder family, as the ways it departs from BERT."""

    stem: str
    """The class-name stem: `{stem}Model`, `{stem}ForMaskedLM`."""
    pooler: bool = True
    """Whether `{stem}Model` has a pooler (ELECTRA, DistilBERT and DeBERTa have none)."""
    extra: Extra = _no_extra
    shared_layers: bool = False
    """ALBERT: num_hidden_groups x inner_group_num layers, run num_hidden_layers times."""

    def __call__(self, r: Reader, architecture: str) -> Built:
        s = _bert_sizes(r)
        masked = _head_kind(self.stem, architecture)
        before = [
            plain("embeddings.word_embeddings", s.vocab * s.embedding, "embedding"),
            plain("embeddings.position_embeddings", s.context * s.embedding, "embedding"),
            plain("embeddings.token_type_embeddings", s.types * s.embedding, "embedding"),
            plain("embeddings.LayerNorm", 2 * s.embedding, "norm"),
        ]
        if s.embedding != s.hidden:
            before.append(
                linear("embeddings_project", s.embedding, s.hidden, bias=True, kind="embedding")
            )
        before += self.extra(r, s)
        layer = _bert_layer(s.hidden, s.inter, s.heads)
        layers = (layer,) * s.layers
        if self.shared_layers:
            layers = _shared(r, layer, s.layers)
        after: list[Param] = []
        if masked:
            after = [
                linear(
                    "predictions.transform.dense", s.hidden, s.embedding, bias=True, kind="head"
                ),
                plain("predictions.transform.LayerNorm", 2 * s.embedding, "norm"),
                plain("predictions.bias", s.vocab, "head"),
            ]
        elif self.pooler:
            after = [linear("pooler.dense", s.hidden, s.hidden, bias=True, kind="head")]
        tower = Tower(
            "text", tuple(before), layers, tuple(after), s.hidden, s.vocab if masked else 0
        )
        return Built((tower,), s.context, generates=False)


def _head_kind(stem: str, architecture: str) -> bool:
    """True for the masked-LM head, False for the base model; any other head is refused."""
    if architecture in ("", f"{stem}Model"):
        return False
    if architecture == f"{stem}ForMaskedLM":
        return True
    raise CannotEstimate(
        f"architecture {architecture[:60]!r}: only {stem}Model and {stem}ForMaskedLM are "
        "counted (a task head's size depends on its labels)"
    )


def _shared(r: Reader, layer: Layer, runs: int) -> tuple[Layer, ...]:
    """ALBERT's groups hold the parameters once; the other runs reuse them."""
    groups = r.integer("num_hidden_groups", limit="layers")
    inner = r.integer("inner_group_num", limit="layers")
    held = groups * inner
    reused = Layer((), layer.kv, 0, None, layer.act_elems_per_token, layer.heads)
    return (layer,) * held + (reused,) * max(runs - held, 0)


def _albert_mapping(_r: Reader, s: _Sizes) -> list[Param]:
    # NOTE: ALBERT always maps embeddings to hidden, even when the widths match; the generic
    # projection above only covers the differing case, so undo it here when they match.
    if s.embedding == s.hidden:
        return [
            linear(
                "encoder.embedding_hidden_mapping_in",
                s.hidden,
                s.hidden,
                bias=True,
                kind="embedding",
            )
        ]
    return []


def _mpnet_buckets(r: Reader, s: _Sizes) -> list[Param]:
    buckets = r.integer("relative_attention_num_buckets", limit="small")
    return [plain("encoder.relative_attention_bias", buckets * s.heads, "attention")]


def _deberta_relative(r: Reader, s: _Sizes) -> list[Param]:
    if s.embedding != s.hidden:
        raise CannotEstimate(f"{r.where}: DeBERTa's unbiased embedding projection is not counted")
    if not r.flag("relative_attention"):
        if not r.flag("position_biased_input"):
            raise CannotEstimate(f"{r.where}: DeBERTa with neither absolute nor relative positions")
        return []
    raise CannotEstimate(
        f"{r.where}: DeBERTa's relative-attention tables (relative_attention true) are not counted"
    )


def modernbert(r: Reader, architecture: str) -> Built:
    """ModernBERT: fused Wqkv, a gated MLP, norms with or without bias, no norm before the
    first layer's attention, and a prediction head with its own dense layer and norm."""
    h = r.integer("hidden_size", limit="hidden")
    layers = r.integer("num_hidden_layers", limit="layers")
    heads = r.integer("num_attention_heads", limit="heads")
    inter = r.integer("intermediate_size", limit="intermediate")
    vocab = r.integer("vocab_size", limit="vocab")
    masked = _head_kind("ModernBert", architecture)
    norm = 2 * h if r.flag("norm_bias") else h
    bias, mlp_bias = r.flag("attention_bias"), r.flag("mlp_bias")
    common = (
        linear("attn.Wqkv", h, 3 * h, bias=bias, kind="attention"),
        linear("attn.Wo", h, h, bias=bias, kind="attention"),
        linear("mlp.Wi", h, 2 * inter, bias=mlp_bias, kind="mlp"),
        linear("mlp.Wo", inter, h, bias=mlp_bias, kind="mlp"),
    )
    act = 8 * h + 4 * inter
    first = Layer((*common, plain("mlp_norm", norm, "norm")), KvKind.NONE, 0, None, act, heads)
    rest = Layer((*common, plain("norms", 2 * norm, "norm")), KvKind.NONE, 0, None, act, heads)
    before = (
        plain("embeddings.tok_embeddings", vocab * h, "embedding"),
        plain("embeddings.norm", norm, "norm"),
    )
    after = [plain("final_norm", norm, "norm")]
    if masked:
        after += [
            linear("head.dense", h, h, bias=r.flag("classifier_bias"), kind="head"),
            plain("head.norm", norm, "norm"),
        ]
        if r.flag("decoder_bias"):
            after.append(plain("decoder.bias", vocab, "head"))
    tower = Tower(
        "text", before, (first,) + (rest,) * (layers - 1), tuple(after), h, vocab if masked else 0
    )
    return Built((tower,), r.integer("max_position_embeddings", limit="context"), generates=False)


def _family(model_type: str, encoder: _Encoder) -> Family:
    stem = encoder.stem
    return Family(model_type, (f"{stem}ForMaskedLM", f"{stem}Model"), defaults(model_type), encoder)


BERT = Family(
    "bert",
    ("BertForMaskedLM", "BertModel"),
    {
        "vocab_size": 30522,
        "hidden_size": 768,
        "intermediate_size": 3072,
        "num_hidden_layers": 12,
        "num_attention_heads": 12,
        "max_position_embeddings": 512,
        "type_vocab_size": 2,
        "tie_word_embeddings": True,
    },
    _Encoder("Bert"),
)

ENCODERS: tuple[Family, ...] = (
    _family("roberta", _Encoder("Roberta")),
    _family("xlm-roberta", _Encoder("XLMRoberta")),
    _family("camembert", _Encoder("Camembert")),
    _family("electra", _Encoder("Electra", pooler=False)),
    _family("distilbert", _Encoder("DistilBert", pooler=False)),
    _family("mpnet", _Encoder("MPNet", extra=_mpnet_buckets)),
    _family("deberta-v2", _Encoder("DebertaV2", pooler=False, extra=_deberta_relative)),
    _family("albert", _Encoder("Albert", extra=_albert_mapping, shared_layers=True)),
    Family(
        "modernbert",
        ("ModernBertForMaskedLM", "ModernBertModel"),
        defaults("modernbert"),
        modernbert,
    ),
)
"""The BERT-layer encoders beside BERT itself, in registration order."""
