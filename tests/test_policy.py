"""The severity policy: every row with a change it decides, no-ops dropped, summaries one line."""

from __future__ import annotations

from typing import Any

import pytest

from hubwatch.diff import diff_revisions
from hubwatch.diff.estimate import estimate_changes
from hubwatch.diff.policy import (
    MISSED_BEHAVIOR,
    MISSED_BREAKING,
    MISSED_SECURITY,
    RULES,
    SUMMARY_MAX,
    Rule,
    apply_policy,
    is_noop,
    markdown,
    severity_of,
)
from hubwatch.models import Change, Estimate, Severity
from tests.support.revisions import BASE_CONFIG, view

B, S, INFO = Severity.BREAKING, Severity.SECURITY, Severity.INFO
BREAKS = "a name the loader or the code uses is gone, a signature broke, it no longer parses"
RISKY = "newly reaches network, processes, dynamic code, deserialisation or native code"
UNREACHED = "no loader imports it (auto_map reaches none of it)"
UNREAD = "not read as Python (too large, not stored)"
RUNS = "functions or classes changed, added or removed, a default moved, a new package"
MORE = (
    "a restriction added (non-commercial, attribution, redistribution, acceptable use) or the "
    "licence removed"
)
LESS = "a restriction lifted, or a licence where there was none"


def c(
    kind: str,
    before: Any = None,
    after: Any = None,
    *,
    severity: Severity = INFO,
    path: str | None = None,
    summary: str = "something changed",
) -> Change:
    return Change(kind, severity, summary, path, before, after)


# For each row, by (kind, condition): a change that this row, and no earlier one, decides.
# A row meeting only "any" gets `c(kind)`, or a kind under its prefix, unless listed here.
def _tensors(changed: int, possibly: int, total: int) -> dict[str, int]:
    """The counts of a re-upload's tensor diff (diff/tensors.py)."""
    return {"changed_count": changed, "possibly_count": possibly, "tensors": total}


EXAMPLES: dict[tuple[str, str], Change] = {
    ("config.special_token_ids", "eos list → int (or int → list)"): c(
        "config.special_token_ids", {"eos_token_id": [2, 7]}, {"eos_token_id": 2}
    ),
    ("config.special_token_ids", "pad or eos id removed"): c(
        "config.special_token_ids", {"pad_token_id": 0}, {"pad_token_id": None}
    ),
    ("config.special_token_ids", "any"): c(
        "config.special_token_ids", {"bos_token_id": 1}, {"bos_token_id": 2}
    ),
    ("mistral.params", "dimensions, vocabulary, MoE or vision changed"): c(
        "mistral.params", {"dim": 4096}, {"dim": 5120}
    ),
    ("mistral.params", "context or rope changed"): c(
        "mistral.params", {"max_seq_len": 32768}, {"max_seq_len": 131072}
    ),
    ("mistral.params", "any"): c("mistral.params", {"lora": None}, {"lora": {"rank": 8}}),
    ("tokenizer.vocab", "tokens removed or re-numbered (the differ's finding)"): c(
        "tokenizer.vocab", severity=B
    ),
    ("tokenizer.added_tokens", "tokens removed or re-numbered (the differ's finding)"): c(
        "tokenizer.added_tokens", severity=B
    ),
    ("tokenizer.special_tokens", "a special token removed"): c(
        "tokenizer.special_tokens", {"pad_token": "<pad>"}, {"pad_token": None}
    ),
    ("tokenizer.special_tokens", "eos_token moved to another token"): c(
        "tokenizer.special_tokens", {"eos_token": "</s>"}, {"eos_token": "<|end|>"}
    ),
    ("tokenizer.special_tokens", "any"): c(
        "tokenizer.special_tokens", {"bos_token": "<s>"}, {"bos_token": "<|begin|>"}
    ),
    ("tokenizer.model_max_length", "model_max_length lifted to the no-limit value or removed"): c(
        "tokenizer.model_max_length",
        {"model_max_length": 131072},
        {"model_max_length": 1000000000000000019884624838656},
    ),
    ("tokenizer.model_max_length", "any"): c(
        "tokenizer.model_max_length", {"model_max_length": 2048}, {"model_max_length": 4096}
    ),
    ("tokenizer.other", "use_fast set, changed or removed"): c(
        "tokenizer.other", {"use_fast": False}, {"use_fast": None}
    ),
    (
        "config.architecture",
        "model_type filled in where missing, or the same architectures reordered",
    ): c("config.architecture", {"model_type": None}, {"model_type": "chatglm"}),
    ("config.architecture", "any"): c(
        "config.architecture", {"model_type": "llama"}, {"model_type": "mistral"}
    ),
    ("config.special_token_ids", "eos id moved to another id"): c(
        "config.special_token_ids", {"eos_token_id": 150005}, {"eos_token_id": 130005}
    ),
    **{
        ("config.auto_map", condition): c(
            "config.auto_map", {"AutoModel": "m.A"}, {"moves": {"AutoModel": status}}
        )
        for condition, status in (
            ("an Auto class no longer mapped", "removed"),
            ("an Auto class now loads a class the repo did not have", "new code"),
            ("an Auto class now loads another class the repo already had", "retargeted"),
            ("an Auto class added for a class the repo already had", "existing"),
        )
    },
    ("weights.changed", "a weight file's size moved by 1% or more (headers unavailable)"): c(
        "weights.changed", {"sizes": {"a.bin": 1_233_126_123}}, {"sizes": {"a.bin": 1_069_286_123}}
    ),
    ("weights.changed", "any"): c(
        "weights.changed", {"sizes": {"a.bin": 94}}, {"sizes": {"a.bin": 1_069_286_123}}
    ),
    ("weights.reuploaded", "the tensor diff shows every tensor byte-identical"): c(
        "weights.reuploaded",
        {"model.safetensors": "a"},
        {"model.safetensors": "b", "tensor_diff": _tensors(changed=0, possibly=0, total=292)},
    ),
    ("weights.reuploaded", "the tensor diff shows most tensors changed"): c(
        "weights.reuploaded",
        {"model.safetensors": "a"},
        {"model.safetensors": "b", "tensor_diff": _tensors(changed=290, possibly=2, total=292)},
    ),
    ("gguf.reuploaded", "the tensor diff shows every tensor byte-identical"): c(
        "gguf.reuploaded",
        {"m-Q4_K_M.gguf": "a"},
        {"m-Q4_K_M.gguf": "b", "tensor_diff": _tensors(changed=0, possibly=0, total=201)},
    ),
    ("gguf.reuploaded", "the tensor diff shows most tensors changed"): c(
        "gguf.reuploaded",
        {"m-Q4_K_M.gguf": "a"},
        {"m-Q4_K_M.gguf": "b", "tensor_diff": _tensors(changed=200, possibly=0, total=201)},
    ),
    ("gguf.reuploaded", "the tensor diff shows tensors changed"): c(
        "gguf.reuploaded",
        {"m-Q4_K_M.gguf": "a"},
        {"m-Q4_K_M.gguf": "b", "tensor_diff": _tensors(changed=1, possibly=1, total=201)},
    ),
    **{
        (kind, condition): c(kind, {"git_blob": "a"}, {"git_blob": "b", "findings": findings})
        for kind, condition, findings in (
            ("code.custom_added", "the repo's first custom code", {"first": True}),
            ("code.custom_added", RISKY, {"risky": ["network: requests.get in f (line 3)"]}),
            ("code.custom_added", UNREACHED, {"reachable": False}),
            ("code.custom_added", UNREAD, {"unread": "over the limit"}),
            ("code.custom_changed", BREAKS, {"breaks": ["X is gone (named by AutoModel)"]}),
            ("code.custom_changed", RISKY, {"risky": ["dynamic code: eval in f (line 3)"]}),
            ("code.custom_changed", UNREACHED, {"reachable": False, "changed": ["f"]}),
            ("code.custom_changed", UNREAD, {"unread": "over the limit"}),
            ("code.custom_changed", RUNS, {"changed": ["f"], "reachable": True}),
            ("code.custom_changed", "any", {"cosmetic": ["docstrings"]}),
            ("code.custom_removed", BREAKS, {"breaks": ["m.py still imports it"]}),
        )
    },
    (
        "code.dependency_changed",
        "the dependency's own changes include a security or breaking one",
    ): c("code.dependency_changed", {"sha": "a" * 40}, {"sha": "b" * 40, "worst": "security"}),
    ("code.dependency_changed", "any"): c(
        "code.dependency_changed", {"sha": "a" * 40}, {"sha": "b" * 40, "worst": "info"}
    ),
    ("license.", MORE): c(
        "license.changed", {"restrictions": []}, {"restrictions": ["non-commercial"]}
    ),
    ("license.", LESS): c(
        "license.changed", {"restrictions": ["non-commercial"]}, {"restrictions": []}
    ),
    ("license.", "any"): c(
        "license.changed",
        {"restrictions": ["attribution"]},
        {"restrictions": ["attribution"], "name": "B"},
    ),
    ("tokenizer.padding", "in tokenizer.json (its padding settings)"): c(
        "tokenizer.padding", path="tokenizer.json"
    ),
    ("tokenizer.padding", "any"): c("tokenizer.padding", path="tokenizer_config.json"),
    ("tokenizer.", "any"): c("tokenizer.pre_tokenizer"),
    ("mistral.tekken", "tokens removed or re-numbered (the differ's finding)"): c(
        "mistral.tekken", severity=B
    ),
    ("chat_template.render_failed", "a sandbox violation (the differ's finding)"): c(
        "chat_template.render_failed", severity=S
    ),
    ("gguf.chat_template.render_failed", "a sandbox violation (the differ's finding)"): c(
        "gguf.chat_template.render_failed", severity=S
    ),
    ("gguf.special_tokens", "a stop token (eos, eot, eom) changed"): c(
        "gguf.special_tokens", {"eot": None}, {"eot": {"id": 128009, "token": "<|eot_id|>"}}
    ),
    ("gguf.special_tokens", "any"): c(
        "gguf.special_tokens", {"add_bos_token": True}, {"add_bos_token": False}
    ),
    ("gguf.vocabulary", "tokens removed or re-numbered (the differ's finding)"): c(
        "gguf.vocabulary", severity=B
    ),
    ("gguf.metadata", "architecture, dimensions or expert count changed"): c(
        "gguf.metadata", {"qwen3moe.expert_count": 128}, {"qwen3moe.expert_count": 64}
    ),
    ("gguf.metadata", "any"): c(
        "gguf.metadata", {"qwen3moe.expert_used_count": 8}, {"qwen3moe.expert_used_count": 4}
    ),
    ("health.weights", "healthy again (after ok)"): c(
        "health.weights", {"ok": False}, {"ok": True}
    ),
    ("health.tokenizer", "healthy again (after ok)"): c(
        "health.tokenizer", {"healthy": False}, {"healthy": True}
    ),
    ("health.weights", "any"): c(
        "health.weights", {"ok": True}, {"ok": False}, summary="2 shards the index names missing"
    ),
    ("card.license", "license restored (before empty)"): c("card.license", None, "apache-2.0"),
    ("card.license", "any"): c("card.license", "apache-2.0", None),
    ("card.", "any"): c("card.pipeline_tag", None, "text-generation"),
    ("estimate.parameters", "total parameters moved by 1% or more"): c(
        "estimate.parameters", {"total": 100}, {"total": 200}
    ),
    ("estimate.parameters", "any"): c("estimate.parameters", {"total": 1000}, {"total": 1001}),
    ("estimate.serving_memory", "serving memory moved by 10% or more"): c(
        "estimate.serving_memory", 100, 200
    ),
    ("estimate.serving_memory", "any"): c("estimate.serving_memory", 100, 101),
    ("estimate.max_batch", "a card that fitted no longer does"): c(
        "estimate.max_batch",
        {"T4": {"max_batch": 1, "cards": 1}},
        {"T4": {"max_batch": 0, "cards": 1}},
    ),
    ("estimate.max_batch", "any"): c(
        "estimate.max_batch",
        {"T4": {"max_batch": 1, "cards": 1}},
        {"T4": {"max_batch": 7, "cards": 1}},
    ),
    ("estimate.gguf_parameters", "total parameters moved by 1% or more"): c(
        "estimate.gguf_parameters", {"total": 100}, {"total": 200}
    ),
    ("estimate.gguf_parameters", "any"): c(
        "estimate.gguf_parameters", {"total": 1000}, {"total": 1001}
    ),
    ("estimate.gguf_weights", "weights memory moved by 10% or more"): c(
        "estimate.gguf_weights", 4_920_000_000, 8_540_000_000
    ),
    ("estimate.gguf_weights", "any"): c("estimate.gguf_weights", 1000, 1001),
    ("estimate.gguf_fit", "a card that fitted no longer does"): c(
        "estimate.gguf_fit",
        {"L4": {"max_batch": 1, "cards": 1}},
        {"L4": {"max_batch": 0, "cards": 1}},
    ),
    ("estimate.gguf_fit", "any"): c(
        "estimate.gguf_fit",
        {"L4": {"max_batch": 1, "cards": 1}},
        {"L4": {"max_batch": 3, "cards": 1}},
    ),
    ("files.", "any"): c("files.added"),
    ("advisories.changed", "an advisory now applies"): c(
        "advisories.changed", [], ["transformers:GHSA-1"]
    ),
    ("advisories.changed", "any"): c("advisories.changed", ["transformers:GHSA-1"], []),
    **{
        (kind, condition.name): c(kind, severity=severity)
        for kind in ("lineage.stale", "lineage.derivatives_stale")
        for condition, severity in (
            (MISSED_BREAKING, B),
            (MISSED_SECURITY, S),
            (MISSED_BEHAVIOR, Severity.BEHAVIOR),
        )
    },
}


def example(rule: Rule) -> Change:
    found = EXAMPLES.get((rule.kind, rule.condition.name))
    if found is not None:
        return found
    assert rule.condition.name == "any", f"no example for {rule.kind} / {rule.condition.name}"
    return c(rule.kind)


@pytest.mark.parametrize("rule", RULES, ids=[f"{r.kind}/{r.condition.name}" for r in RULES])
def test_each_row_decides_its_example(rule: Rule) -> None:
    change = example(rule)
    assert severity_of(change) == (rule.severity, rule)
    [applied] = apply_policy([change])
    assert applied.severity is rule.severity


def test_no_row_is_shadowed_by_an_earlier_one() -> None:
    pairs = [(r.kind, r.condition.name) for r in RULES]
    assert len(pairs) == len(set(pairs))


def test_a_kind_no_row_names_keeps_the_differs_severity() -> None:
    assert severity_of(c("my_plugin.thing", severity=S)) == (S, None)


@pytest.mark.parametrize(
    "change",
    [
        c("config.other", {"a": 1}, {"a": 1}),
        c(
            "tokenizer.special_tokens",
            summary='t: special tokens changed: eos_token "</s>" → "</s>".',
        ),
        c("generation.other", summary="Generation other changed: a 1 → 1, b unset → unset."),
        c("config.context", summary="max_position_embeddings [1, 2] → [1, 2]"),
    ],
)
def test_no_op_changes_are_dropped(change: Change) -> None:
    assert is_noop(change)
    assert apply_policy([change]) == []


@pytest.mark.parametrize(
    "summary",
    [
        "tokenizer.json: the normalizer changed (Sequence → Sequence).",  # kinds shown, not values
        "largest serving batch per card: T4 1 → 1 ×2 (two cards)",
        "Weights changed: 2 file(s), 10 bytes → 2 file(s), 10 bytes.",
        'special tokens changed: eos_token "</s>" → "</s>", pad_token unset → "<pad>".',
        "a 11 → 1.",
    ],
)
def test_changes_that_moved_are_kept(summary: str) -> None:
    change = c("config.other", {"a": 1}, {"a": 2}, summary=summary)
    assert not is_noop(change)
    assert apply_policy([change]) == [change]


def test_two_nones_are_not_a_no_op() -> None:
    assert apply_policy([c("chat_template.cosmetic")]) != []


def test_a_long_summary_is_cut_to_one_line_and_kept_whole_in_the_detail() -> None:
    long = "x changed: " + ", ".join(f"key_{i} 1 → 2" for i in range(40))
    [change] = apply_policy([Change("config.other", INFO, long, detail="the diff")])
    assert len(change.summary) <= SUMMARY_MAX and change.summary.endswith("…")
    assert change.detail == f"{long}\n\nthe diff"


def test_a_summary_on_several_lines_becomes_one() -> None:
    [change] = apply_policy([c("config.other", summary="one\ntwo   three")])
    assert change.summary == "one two three"


def test_a_short_summary_is_left_alone() -> None:
    change = c("config.other", summary="x" * SUMMARY_MAX)
    assert apply_policy([change]) == [change]


# The disagreements issue 13 lists, through diff_revisions as a poll runs it.


def cfg(**extra: Any) -> dict[str, Any]:
    return {**BASE_CONFIG, **extra}


Card = dict[str, object] | None


def kinds(
    old: dict[str, Any], new: dict[str, Any], card: tuple[Card, Card] = (None, None)
) -> dict[str, Change]:
    return {ch.kind: ch for ch in diff_revisions(view(old, card[0]), view(new, card[1]))}


def test_eos_list_to_int_in_config_is_breaking() -> None:
    found = kinds({"config.json": cfg(eos_token_id=[2, 7])}, {"config.json": cfg(eos_token_id=2)})
    assert found["config.special_token_ids"].severity is B


def test_a_removed_pad_id_in_config_is_breaking() -> None:
    found = kinds({"config.json": cfg(pad_token_id=0)}, {"config.json": cfg()})
    assert found["config.special_token_ids"].severity is B


def test_a_removed_pad_token_is_breaking() -> None:
    old = {"config.json": cfg(), "tokenizer_config.json": {"pad_token": "<pad>"}}
    new = {"config.json": cfg(), "tokenizer_config.json": {}}
    assert kinds(old, new)["tokenizer.special_tokens"].severity is B


def test_special_tokens_with_the_same_text_are_not_reported() -> None:
    token = {"content": "</s>", "lstrip": False}
    old = {"config.json": cfg(), "tokenizer_config.json": {"eos_token": token}}
    new = {"config.json": cfg(), "tokenizer_config.json": {"eos_token": {**token, "lstrip": True}}}
    assert "tokenizer.special_tokens" not in kinds(old, new)


def test_use_fast_changes_carry_their_values() -> None:
    old = {"config.json": cfg(), "tokenizer_config.json": {"use_fast": False}}
    new = {"config.json": cfg(), "tokenizer_config.json": {"use_fast": True}}
    change = kinds(old, new)["tokenizer.other"]
    assert "use_fast false → true" in change.summary
    assert (change.before, change.after) == ({"use_fast": False}, {"use_fast": True})


def test_a_restored_license_is_info_and_a_removed_one_breaking() -> None:
    files = {"config.json": cfg(), "README.md": "card"}
    restored = kinds(files, files, ({}, {"license": "apache-2.0"}))["card.license"]
    removed = kinds(files, files, ({"license": "apache-2.0"}, {}))["card.license"]
    assert (restored.severity, removed.severity) == (INFO, B)


def test_max_batch_keeps_the_two_card_qualifier() -> None:
    def est(batch: int, cards: int) -> Estimate:
        fit = {"max_batch": batch, "cards": cards, "split": cards > 1}
        return Estimate(ok=True, max_batch={"serving": {"T4": fit}})

    [change] = estimate_changes(est(1, 2), est(7, 2))
    assert "T4 1 ×2 (two cards) → 7 ×2 (two cards)" in change.summary
    [change] = estimate_changes(est(1, 1), est(1, 2))
    assert "T4 1 → 1 ×2 (two cards)" in change.summary and not is_noop(change)


def test_the_markdown_table_has_a_row_per_rule() -> None:
    assert markdown().count("\n") == len(RULES) + 2
