"""Bad configs give "cannot estimate: …", never an exception or a silently wrong number."""

from __future__ import annotations

import json
from typing import Any

import pytest

from hubwatch.estimator import estimate, estimate_json

GOOD: dict[str, Any] = {
    "model_type": "llama",
    "hidden_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "intermediate_size": 128,
    "vocab_size": 100,
    "max_position_embeddings": 128,
}


def _with(**changes: Any) -> dict[str, Any]:
    return {**GOOD, **changes}


def _without(key: str) -> dict[str, Any]:
    return {k: v for k, v in GOOD.items() if k != key}


CASES: list[tuple[str, object, str]] = [
    ("zero hidden", _with(hidden_size=0), "hidden_size is 0; it must be at least 1"),
    ("negative layers", _with(num_hidden_layers=-3), "num_hidden_layers is -3"),
    ("heads do not divide hidden", _with(hidden_size=66), "not divisible by 4 attention heads"),
    ("kv heads do not divide heads", _with(num_key_value_heads=3), "not divisible by 3"),
    ("absurd vocab", _with(vocab_size=10**12), "beyond any real model"),
    ("absurd total", _with(hidden_size=2**20, num_hidden_layers=9000), "beyond any real model"),
    ("string size", _with(hidden_size="4096"), "hidden_size is '4096', not an integer"),
    ("bool size", _with(num_hidden_layers=True), "not an integer"),
    ("list instead of object", [1, 2], "not a JSON object"),
    ("nested not an object", {"model_type": "llava", "text_config": 5}, "not a JSON object"),
    ("tie flag a string", _with(tie_word_embeddings="no"), "not true or false"),
    ("unknown and empty", {"model_type": "mystery"}, "unknown architecture 'mystery'"),
    ("layer_types wrong length", _with(layer_types=["full_attention"]), "names 1 layers"),
    ("drafter without taps", _with(architectures=["DFlashDraftModel"]), "target_layer_ids"),
]


@pytest.mark.parametrize(("config", "message"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_config_cannot_be_estimated_with_a_reason(config: object, message: str) -> None:
    result = estimate(config)
    assert not result.ok
    assert result.error is not None and result.error.startswith("cannot estimate: ")
    assert message in result.error


def test_missing_key_takes_the_family_default_not_a_generic_one() -> None:
    result = estimate(_without("tie_word_embeddings") | {"model_type": "gemma2"})
    assert result.ok and "head" not in result.params["by_kind"]  # gemma2 ties by default


def test_ten_megabytes_of_nesting_is_a_result_not_a_crash() -> None:
    deep = b'{"text_config": ' * 700_000 + b"{}" + b"}" * 700_000
    assert len(deep) > 10_000_000
    result = estimate_json(deep)
    assert not result.ok and "nesting deeper than 64 levels" in (result.error or "")


def test_wide_nesting_under_known_keys_is_not_walked() -> None:
    wide = _with(text_config={"x": [list(range(1000))] * 1000}, model_type="llama")
    assert estimate(wide).ok


def test_not_json_is_a_result() -> None:
    result = estimate_json(b"{nope")
    assert not result.ok and "not valid JSON" in (result.error or "")
    assert json.dumps(result.to_json())
