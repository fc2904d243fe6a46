"""Every model type of the golden set: counted exactly as transformers builds it, or refused.

The golden counts (golden/golden.json) are transformers' own meta-device counts of each type's
config-class defaults, written by make_golden.py; no torch is needed here.
"""

from __future__ import annotations

import importlib.util
import json

import pytest

from hubwatch.estimator import estimate
from hubwatch.estimator.families.refused import NOT_COUNTED
from tests.estimator.make_golden import GOLDEN, default_types, golden_configs
from tests.support.require import REQUIRE_TRANSFORMERS, require


def _needs_transformers() -> None:
    if importlib.util.find_spec("transformers") is None:
        # CI installs torch and transformers for `pytest -m live` and sets the switch there.
        require(REQUIRE_TRANSFORMERS, "needs torch and transformers (the `live` comparison)")


GOLDEN_FILE = json.loads(GOLDEN.read_text())
TYPES = default_types()
EXPECTED: dict[str, int] = GOLDEN_FILE["defaults"]


def _estimate(model_type: str) -> object:
    return estimate({"model_type": model_type, "architectures": [TYPES[model_type]]})


def test_the_golden_set_is_whole() -> None:
    # NOTE: a type or config without its golden count (or a count without its config) fails
    # here, rather than parametrising over less than was meant.
    assert set(EXPECTED) == set(TYPES)
    assert set(golden_configs()) == set(GOLDEN_FILE["parameters"])
    assert len(TYPES) >= 70


@pytest.mark.parametrize("model_type", sorted(TYPES))
def test_config_class_defaults_are_counted_exactly_or_refused(model_type: str) -> None:
    result = estimate({"model_type": model_type, "architectures": [TYPES[model_type]]})
    if result.ok:
        assert result.exact
        assert result.params["total"] == EXPECTED[model_type]
    else:
        assert result.error is not None and result.error.startswith("cannot estimate: ")
        assert model_type in result.error or TYPES[model_type] in result.error


def test_at_least_ninety_one_types_are_counted_exactly() -> None:
    counted = [t for t in TYPES if estimate({"model_type": t, "architectures": [TYPES[t]]}).ok]
    assert len(counted) >= 91, sorted(set(TYPES) - set(counted))


def test_the_types_not_counted_are_refused_saying_what_is_missing() -> None:
    refused = {
        t: result.error
        for t in TYPES
        if not (result := estimate({"model_type": t, "architectures": [TYPES[t]]})).ok
    }
    assert set(refused) <= set(NOT_COUNTED)
    for model_type, error in refused.items():
        assert (
            error
            == f"cannot estimate: {model_type!r} is not counted yet: " + (NOT_COUNTED[model_type])
        )
        assert "not modelled" in error


@pytest.mark.live
def test_golden_defaults_match_transformers_now() -> None:
    _needs_transformers()
    from tests.estimator.make_golden import live_default_counts

    assert live_default_counts() == EXPECTED


# Configs that give some keys and leave the rest to the config classes (sub-configs too), with
# transformers 5.24's meta-device counts (make_golden.count_with_transformers).
PARTIAL = json.loads((GOLDEN.parent / "partial.json").read_text())


@pytest.mark.parametrize("case", PARTIAL, ids=[c["config"]["model_type"] for c in PARTIAL])
def test_partial_configs_take_the_config_classes_defaults(case: dict[str, object]) -> None:
    result = estimate(case["config"])
    assert result.ok and result.params["total"] == case["parameters"]


@pytest.mark.live
def test_partial_counts_match_transformers_now() -> None:
    _needs_transformers()
    from tests.estimator.make_golden import count_with_transformers

    for case in PARTIAL:
        assert count_with_transformers(dict(case["config"])) == case["parameters"]
