"""A family is one `Family` record and one `register()` call: a toy family, added and removed."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from hubwatch.estimator import (
    BUILTINS,
    Built,
    Family,
    Reader,
    estimate,
    families,
    register,
    unregister,
)
from hubwatch.estimator.structure import KvKind, Layer, Tower, linear, plain


def toy(r: Reader, _architecture: str) -> Built:
    """An embedding and a stack of biased square linears: nothing any real family is."""
    hidden = r.integer("hidden_size", limit="hidden")
    layers = r.integer("num_hidden_layers", limit="layers")
    vocab = r.integer("vocab_size", limit="vocab")
    context = r.integer("max_position_embeddings", limit="context")
    layer = Layer((linear("mix", hidden, hidden, bias=True, kind="mlp"),), KvKind.NONE)
    embed = (plain("embed", vocab * hidden, "embedding"),)
    return Built((Tower("text", embed, (layer,) * layers, (), hidden),), context, generates=False)


TOY = Family("toy", ("ToyModel",), {"vocab_size": 10, "max_position_embeddings": 64}, toy)
CONFIG = {"model_type": "toy", "hidden_size": 4, "num_hidden_layers": 3}
COUNT = 10 * 4 + 3 * (4 * 4 + 4)  # embedding + 3 x (weight + bias)


@pytest.fixture
def registered() -> Iterator[Family]:
    register(TOY)
    try:
        yield TOY
    finally:
        unregister(TOY.model_type)


def test_registered_family_counts_a_config_of_its_model_type(registered: Family) -> None:
    result = estimate(CONFIG)
    assert result.ok and result.exact and result.family == "toy"
    assert result.params["total"] == COUNT
    assert result.context == 64 and result.kv_bytes_per_token == 0
    assert "toy defaults taken for config.vocab_size, config.max_position_embeddings" in (
        result.notes
    )


def test_registered_family_answers_to_its_architecture(registered: Family) -> None:
    config = {k: v for k, v in CONFIG.items() if k != "model_type"} | {
        "architectures": ["ToyModel"]
    }
    result = estimate(config)
    assert result.ok and result.family == "toy" and result.params["total"] == COUNT


def test_unregistered_family_is_an_unknown_architecture_again() -> None:
    result = estimate(CONFIG)
    assert not result.ok and "unknown architecture 'toy'" in (result.error or "")


def test_a_model_type_registered_twice_is_refused(registered: Family) -> None:
    with pytest.raises(ValueError, match="already registered"):
        register(TOY)


def test_an_architecture_another_family_answers_to_is_refused() -> None:
    with pytest.raises(ValueError, match="already answer to family 'llama'"):
        register(Family("toy", ("LlamaForCausalLM",), {}, toy))
    assert "toy" not in families()


def test_every_builtin_family_is_registered_as_an_extension_would_be() -> None:
    assert all(families()[family.model_type] is family for family in BUILTINS)
