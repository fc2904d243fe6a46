"""Parameter counts against the golden file transformers wrote (no torch needed here)."""

from __future__ import annotations

import importlib.util
import json

import pytest

from hubwatch.estimator import count_params, estimate, read_model
from tests.estimator.make_golden import GOLDEN, golden_configs
from tests.support.require import REQUIRE_TRANSFORMERS, require

EXPECTED: dict[str, int] = json.loads(GOLDEN.read_text())["parameters"]
CONFIGS = golden_configs()
PUBLISHED = (
    "Qwen__Qwen3-0.6B",
    "meta-llama__Llama-3.1-8B-Instruct",
    "Qwen__Qwen3-30B-A3B",
    "google__gemma-2-2b",
)


def test_golden_set_covers_every_family_and_the_published_configs() -> None:
    assert len(CONFIGS) >= 25
    families = {read_model(json.loads(p.read_text())).family for p in CONFIGS.values()}
    assert families >= {
        "llama",
        "mistral",
        "mixtral",
        "qwen2",
        "qwen2_moe",
        "qwen3",
        "qwen3_moe",
        "gemma",
        "gemma2",
        "gemma3_text",
        "phi3",
        "olmo2",
        "gpt2",
        "bert",
        "deepseek_v3",
        "llava",
        "qwen3_asr",
    }
    assert set(PUBLISHED) <= set(CONFIGS)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_count_equals_transformers_meta_device_count(name: str) -> None:
    # NOTE: parametrised by the golden counts, so a missing config file fails (KeyError).
    model = read_model(json.loads(CONFIGS[name].read_text()))
    assert count_params(model).total == EXPECTED[name]


def test_qwen3_30b_a3b_active_parameters_count_8_of_128_experts() -> None:
    params = count_params(read_model(json.loads(CONFIGS["Qwen__Qwen3-30B-A3B"].read_text())))
    experts = 48 * 3 * 2048 * 768  # per expert in all layers: gate, up, down
    assert params.active == params.total - 128 * experts + 8 * experts == 3_353_032_704
    assert params.by_kind["norm"] > 0  # per-head q/k norms are counted


def test_dflash_drafter_does_not_count_the_targets_embeddings() -> None:
    result = estimate(json.loads(CONFIGS["HyzeAI__Hyze1B.dflash-drafter"].read_text()))
    assert result.ok and result.params["embedding"] == 0
    assert "head" not in result.params["by_kind"]
    assert any("target model's" in note for note in result.notes)


def test_nested_thinker_config_is_read_not_defaulted() -> None:
    raw = json.loads(CONFIGS["Qwen__Qwen3-ASR-1.7B.trimmed"].read_text())
    raw["thinker_config"]["text_config"]["num_hidden_layers"] = 2
    towers = count_params(read_model(raw)).by_tower
    assert set(towers) == {"audio", "projector", "text"}
    assert towers["text"] < 500_000_000  # the 2 layers were read, not the 28 of the default


def test_unknown_architecture_is_refused_not_guessed() -> None:
    config = {
        "model_type": "brand_new",
        "hidden_size": 64,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "intermediate_size": 128,
        "vocab_size": 100,
        "max_position_embeddings": 128,
        "tie_word_embeddings": False,
    }
    result = estimate(config)
    assert not result.ok and "unknown architecture 'brand_new'" in (result.error or "")
    assert "guessed" in (result.error or "")


def test_qwen2_moe_sliding_window_zero_means_no_window() -> None:
    raw = json.loads(CONFIGS["Qwen__Qwen1.5-MoE-A2.7B"].read_text()) | {"sliding_window": 0}
    result = estimate(raw)
    assert result.ok and result.params["total"] == EXPECTED["Qwen__Qwen1.5-MoE-A2.7B"]


@pytest.mark.live
def test_golden_file_matches_transformers_now() -> None:
    if importlib.util.find_spec("transformers") is None:
        # CI installs torch and transformers for `pytest -m live` and sets the switch there.
        require(REQUIRE_TRANSFORMERS, "needs torch and transformers (the `live` comparison)")
    from tests.estimator.make_golden import live_counts

    assert live_counts() == {name: EXPECTED[name] for name in CONFIGS}
