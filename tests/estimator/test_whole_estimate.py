"""The whole estimate of every golden config, under the stored and the CLI's settings, is the
one recorded in golden/estimates.json: a speed-up must not move a figure, a word or a card."""

from __future__ import annotations

import json
from dataclasses import asdict

from hubwatch.estimator import count_params, estimate, read_model
from tests.estimator.make_estimates import ESTIMATES, recorded


def test_every_golden_estimate_is_the_recorded_one() -> None:
    expected = json.loads(ESTIMATES.read_text())
    found = recorded()
    assert set(found) == set(expected)
    changed = sorted(name for name, value in found.items() if expected[name] != value)
    # NOTE: a change meant is recorded again: python -m tests.estimator.make_estimates
    assert changed == [], f"{len(changed)} estimates changed, first: {changed[:5]}"


def test_a_sizing_is_the_same_however_often_it_is_computed() -> None:
    # NOTE: anything kept between calls (the card table, a walk of a shared structure) must
    # give a second call exactly what the first one got.
    assert recorded() == recorded()


def test_the_stored_parameters_are_every_field_of_the_count() -> None:
    # NOTE: estimate() copies the ParamCount field by field (asdict is slow); a field added to
    # ParamCount must be stored too.
    config = {"model_type": "llama", "architectures": ["LlamaForCausalLM"]}
    assert estimate(config).params == asdict(count_params(read_model(config)))
