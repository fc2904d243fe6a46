"""Training memory under the settings a run states: precision, LoRA targets, QLoRA options."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hubwatch.estimator import (
    CannotEstimate,
    Run,
    UnknownTarget,
    lora_targets,
    read_model,
    training,
)
from hubwatch.estimator.memory import CUDA_CONTEXT, SLACK
from hubwatch.estimator.training import Method, _Resident
from hubwatch.estimator.walk import Fact, walk
from tests.estimator.make_golden import REPO_CONFIGS

MODEL = read_model(json.loads((REPO_CONFIGS / "meta-llama__Llama-3.2-1B.json").read_text()))


def test_pure_bf16_keeps_eight_bytes_per_parameter_and_fp32_sixteen() -> None:
    params = 1_235_814_400
    pure = training(MODEL, precision="bf16").parts
    assert pure["weights"] + pure["gradients_and_optimizer"] == 8 * params
    fp32 = training(MODEL, precision="fp32").parts
    assert fp32["weights"] == 4 * params and fp32["gradients_and_optimizer"] == 12 * params


def test_short_lora_targets_name_the_projections_of_every_family() -> None:
    assert lora_targets("q,v") == {"q_proj", "query", "q_lin", "q", "q_a_proj", "q_b_proj"} | {
        "v_proj",
        "value",
        "v_lin",
        "v",
    }
    assert lora_targets("all-linear") is None and lora_targets("c_attn") == {"c_attn"}
    with pytest.raises(CannotEstimate, match="cannot be combined"):
        lora_targets("all-linear,q")


def test_fewer_lora_targets_mean_fewer_adapters() -> None:
    qv = training(MODEL, method="lora", lora_targets=lora_targets("q,v"))
    every = training(MODEL, method="lora")
    assert qv.parts["gradients_and_optimizer"] < every.parts["gradients_and_optimizer"]


def test_qlora_without_double_quantisation_and_with_fp32_embeddings_holds_more() -> None:
    base = training(MODEL, method="qlora").parts["weights"]
    single = training(MODEL, method="qlora", double_quant=False).parts["weights"]
    upcast = training(MODEL, method="qlora", fp32_io=True).parts["weights"]
    assert single > base and upcast - base >= 2 * 128256 * 2048  # the tied embedding, 2 more bytes


def test_overhead_is_the_cuda_context_plus_slack_in_proportion() -> None:
    run = training(MODEL, method="qlora")
    rest = run.total - run.parts["overhead"]
    assert run.parts["overhead"] == CUDA_CONTEXT + int(-(-SLACK * rest // 1))


def test_headers_are_the_count_of_record_even_for_a_refused_architecture() -> None:
    from hubwatch.estimator import estimate

    header = {
        "w.weight": {"dtype": "BF16", "shape": [1000, 64], "data_offsets": [0, 0]},
        "w.bias": {"dtype": "BF16", "shape": [1000], "data_offsets": [0, 0]},
    }
    result = estimate({"model_type": "brand_new"}, {"model.safetensors": header})
    assert not result.ok and result.reconciliation is not None
    assert result.reconciliation["of_record"] == 65_000
    assert result.reconciliation["derived"] is None
    assert "no config-derived cross-check" in result.reconciliation["explanations"][0]


def test_a_counted_config_is_cross_checked_against_the_count_of_record() -> None:
    from hubwatch.estimator import count_params, reconcile

    total = count_params(MODEL).total
    header = {"all": {"dtype": "BF16", "shape": [total], "data_offsets": [0, 0]}}
    result = reconcile(MODEL, count_params(MODEL), {"model.safetensors": header})
    assert result.of_record == result.derived == total and result.difference == 0


@pytest.mark.parametrize(
    ("spec", "missing"),
    [("foo", "'foo' is not"), ("q,c_attn", "'c_attn' is not"), ("qkv,bar", "'qkv', 'bar' are not")],
)
def test_lora_targets_the_model_lacks_are_an_error_listing_its_modules(
    spec: str, missing: str
) -> None:
    with pytest.raises(UnknownTarget) as raised:
        training(MODEL, Run(method="lora", lora_targets=lora_targets(spec)))
    assert isinstance(raised.value, ValueError) and missing in str(raised.value)
    assert "its modules are down_proj, gate_proj, k_proj" in str(raised.value)
    assert "(short names: down, gate, k, o, q, up, v)" in str(raised.value)


@pytest.mark.parametrize("spec", ["q,v", "q_proj,v_proj", "gate,up,down", "all-linear"])
def test_lora_targets_the_model_has_are_accepted(spec: str) -> None:
    memory = training(MODEL, Run(method="lora", lora_targets=lora_targets(spec)))
    assert memory.parts["gradients_and_optimizer"] > 0


_facts = st.lists(
    st.tuples(
        st.integers(0, 10**10),  # numel
        st.booleans(),  # quantised
        st.booleans(),  # an all-linear LoRA target
        st.integers(0, 10**5),  # adapter width per rank
        st.sampled_from(["q_proj", "v_proj", "down_proj", "wte"]),
    ),
    max_size=12,
)


@settings(max_examples=400, deadline=None)
@given(
    _facts,
    st.sampled_from(["lora", "qlora"]),
    st.booleans(),
    st.booleans(),
    st.sampled_from([None, frozenset({"q_proj", "v_proj"})]),
)
def test_adapted_bytes_from_the_totals_are_those_summed_fact_by_fact(
    params: list[Fact], method: Method, double_quant: bool, fp32_io: bool, targets: Any
) -> None:
    run = Run(method=method, double_quant=double_quant, fp32_io=fp32_io, lora_targets=targets)
    walked = walk(MODEL)
    group = tuple(params)
    whole, summed = _Resident(run, walked), _Resident(run, walked)
    found = whole._whole(group)
    if found is None:  # over 2**53: the loop alone decides
        return
    assert found == summed._summed(group)
    assert (whole.weights, whole.states, whole.adapters) == (
        summed.weights,
        summed.states,
        summed.adapters,
    )
