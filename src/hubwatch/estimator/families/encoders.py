"""The encoder-only families: BERT."""

from __future__ import annotations

from hubwatch.estimator.config import CannotEstimate, Reader
from hubwatch.estimator.registry import Built, Family
from hubwatch.estimator.structure import KvKind, Layer, Param, Tower, linear, plain


def bert(r: Reader, architecture: str) -> Built:
    """BERT: an encoder; BertModel has a pooler, BertForMaskedLM a tied prediction head."""
    hidden = r.integer("hidden_size", limit="hidden")
    layers = r.integer("num_hidden_layers", limit="layers")
    heads = r.integer("num_attention_heads", limit="heads")
    if hidden % heads:
        raise CannotEstimate(
            f"{r.where}: hidden size {hidden} is not divisible by {heads} attention heads"
        )
    vocab = r.integer("vocab_size", limit="vocab")
    inter = r.integer("intermediate_size", limit="intermediate")
    context = r.integer("max_position_embeddings", limit="context")
    types = r.integer("type_vocab_size", minimum=0, limit="small")
    params = (
        linear("attention.self.query", hidden, hidden, bias=True, kind="attention"),
        linear("attention.self.key", hidden, hidden, bias=True, kind="attention"),
        linear("attention.self.value", hidden, hidden, bias=True, kind="attention"),
        linear("attention.output.dense", hidden, hidden, bias=True, kind="attention"),
        plain("layernorms", 4 * hidden, "norm"),
        linear("intermediate.dense", hidden, inter, bias=True, kind="mlp"),
        linear("output.dense", inter, hidden, bias=True, kind="mlp"),
    )
    layer = Layer(params, KvKind.NONE, 0, None, 8 * hidden + 2 * inter, heads)
    before = (
        plain("embeddings.word_embeddings", vocab * hidden, "embedding"),
        plain("embeddings.position_embeddings", context * hidden, "embedding"),
        plain("embeddings.token_type_embeddings", types * hidden, "embedding"),
        plain("embeddings.LayerNorm", 2 * hidden, "norm"),
    )
    if architecture == "BertForMaskedLM":
        after: tuple[Param, ...] = (
            linear("cls.predictions.transform.dense", hidden, hidden, bias=True, kind="head"),
            plain("cls.predictions.transform.LayerNorm", 2 * hidden, "norm"),
            plain("cls.predictions.bias", vocab, "head"),
        )
        out_vocab = vocab
    else:
        after = (linear("pooler.dense", hidden, hidden, bias=True, kind="head"),)
        out_vocab = 0
    tower = Tower("text", before, (layer,) * layers, after, hidden, out_vocab)
    return Built((tower,), context, generates=False)


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
    bert,
)
