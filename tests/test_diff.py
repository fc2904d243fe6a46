"""Table-driven tests of every differ: each change kind, including the incidents hubwatch is for."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import pytest

from hubwatch.caching import Memo
from hubwatch.diff import DIFFERS, diff_revisions
from hubwatch.diff.config import auto_map_changes
from hubwatch.diff.events import event_change
from hubwatch.diff.tokenizer.tokenizer_json import split_tokenizer_json
from hubwatch.formats.view import RevisionView
from hubwatch.models import Change, EventKind, RepoEvent, Severity
from tests.support.revisions import BASE_CONFIG, Weights, view

GEN = "generation_config.json"
TOK = "tokenizer_config.json"
SIMPLE_TEMPLATE = (
    "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)
THINK_TEMPLATE = SIMPLE_TEMPLATE.replace("<|assistant|>\n", "<|assistant|>\n<think>\n")
COSMETIC_TEMPLATE = SIMPLE_TEMPLATE.replace("{% for m in messages %}", "{%- for m in messages %}")


def cfg(**keys: Any) -> dict[str, Any]:
    return {**BASE_CONFIG, **keys}


def tokenizer_json(
    vocab: dict[str, int], added: list[dict[str, Any]] | None = None, **over: Any
) -> dict[str, Any]:
    return {
        "version": "1.0",
        "added_tokens": added or [],
        "normalizer": None,
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False},
        "post_processor": {"type": "ByteLevel"},
        "decoder": {"type": "ByteLevel"},
        "model": {"type": "BPE", "vocab": vocab, "merges": ["a b", "ab c"]},
        **over,
    }


def special(content: str, token_id: int, **attrs: Any) -> dict[str, Any]:
    return {
        "id": token_id, "content": content, "single_word": False, "lstrip": False,
        "rstrip": False, "normalized": False, "special": True, **attrs,
    }  # fmt: skip


VOCAB = {"a": 0, "b": 1, "c": 2, "ab": 3}
F32_SHARDS = {
    "model-00001-of-00002.safetensors": Weights({"embed": ("F32", [100, 8])}, oid="1" * 64),
    "model-00002-of-00002.safetensors": Weights({"head": ("F32", [8, 100])}, oid="2" * 64),
    "model.safetensors.index.json": {
        "metadata": {"total_size": 6400},
        "weight_map": {
            "embed": "model-00001-of-00002.safetensors",
            "head": "model-00002-of-00002.safetensors",
        },
    },
}
ONE_BF16 = {
    "model.safetensors": Weights(
        {"embed": ("BF16", [100, 8]), "head": ("BF16", [8, 100])}, oid="3" * 64
    )
}
REORDERED = {"type": "BPE", "vocab": VOCAB, "merges": ["ab c", "a b"]}
ONE_F32 = {"model.safetensors": Weights({"embed": ("F32", [100, 8])}, oid="4" * 64)}


@dataclass
class Case:
    name: str
    old: dict[str, Any]
    new: dict[str, Any]
    kind: str
    severity: Severity
    says: str = ""
    """A phrase the summary (or detail) must contain."""
    old_card: dict[str, object] | None = None
    new_card: dict[str, object] | None = None
    base: dict[str, Any] = field(default_factory=lambda: {"config.json": cfg()})


CASES = [
    # -- the incidents ---------------------------------------------------------------------
    Case("eos_int_to_list_is_breaking", {GEN: {"eos_token_id": 128001}},
         {GEN: {"eos_token_id": [128001, 128009]}}, "generation.stop_tokens", Severity.BREAKING,
         "Stop tokens changed"),
    Case("template_appending_think_renders_differently",
         {TOK: {"chat_template": SIMPLE_TEMPLATE}}, {TOK: {"chat_template": THINK_TEMPLATE}},
         "chat_template.rendered", Severity.BEHAVIOR, "generation prompt"),
    Case("temperature_and_top_p_swapped", {GEN: {"temperature": 0.6, "top_p": 0.9}},
         {GEN: {"temperature": 0.9, "top_p": 0.6}}, "generation.sampling", Severity.BEHAVIOR,
         "temperature and top_p swapped"),
    Case("vocab_size_grown_is_breaking", {"config.json": cfg(vocab_size=4)},
         {"config.json": cfg(vocab_size=6)}, "config.vocab_size", Severity.BREAKING, "4 → 6"),
    Case("added_special_tokens_are_reported",
         {"tokenizer.json": tokenizer_json(VOCAB)},
         {"tokenizer.json": tokenizer_json(VOCAB, [special("<think>", 4), special("</think>", 5)])},
         "tokenizer.added_tokens", Severity.BEHAVIOR, "2 added"),
    Case("weights_reuploaded_under_identical_headers",
         {"model.safetensors": Weights({"w": ("F32", [4, 4])}, oid="a" * 64)},
         {"model.safetensors": Weights({"w": ("F32", [4, 4])}, oid="b" * 64)},
         "weights.reuploaded", Severity.BEHAVIOR, "identical headers"),
    Case("fp32_shards_to_one_bf16_file_keeps_parameters", F32_SHARDS, ONE_BF16,
         "weights.dtype", Severity.BEHAVIOR, "parameter count unchanged"),
    Case("fp32_shards_to_one_bf16_file_changes_layout", F32_SHARDS, ONE_BF16,
         "weights.shard_layout", Severity.INFO, "2 shard(s) with an index → one file"),
    Case("pickle_added_beside_safetensors", ONE_F32,
         {**ONE_F32, "pytorch_model.bin": Weights(oid="5" * 64)},
         "weights.pickle_added", Severity.SECURITY, "beside safetensors"),
    Case("custom_code_body_changed_is_behavior", {"modeling_x.py": "def f():\n    return 1\n"},
         {"modeling_x.py": "def f():\n    return 2\n"}, "code.custom_changed", Severity.BEHAVIOR,
         "+    return 2"),
    Case("license_changed", {"README.md": "---\nlicense: mit\n---\n"},
         {"README.md": "---\nlicense: other\n---\n"}, "card.license", Severity.BREAKING,
         '"mit" → "other"', old_card={"license": "mit"}, new_card={"license": "other"}),
    # -- config ----------------------------------------------------------------------------
    Case("architecture", {"config.json": cfg()},
         {"config.json": cfg(architectures=["MistralForCausalLM"], model_type="mistral")},
         "config.architecture", Severity.BREAKING, "mistral"),
    Case("dimensions", {"config.json": cfg(num_key_value_heads=8, head_dim=64)},
         {"config.json": cfg(num_key_value_heads=4, head_dim=128)}, "config.dimensions",
         Severity.BREAKING, "num_key_value_heads 8 → 4"),
    Case("nested_tower_compared_on_its_own",
         {"config.json": cfg(text_config={"hidden_size": 1024}, vision_config={"hidden_size": 8})},
         {"config.json": cfg(text_config={"hidden_size": 2048}, vision_config={"hidden_size": 8})},
         "config.dimensions", Severity.BREAKING, "text_config.hidden_size 1024 → 2048"),
    Case("context", {"config.json": cfg(rope_theta=10000.0, rope_scaling=None)},
         {"config.json": cfg(rope_theta=500000.0, rope_scaling={"type": "yarn", "factor": 4})},
         "config.context", Severity.BEHAVIOR, "rope_theta"),
    Case("torch_dtype", {"config.json": cfg(torch_dtype="float32")},
         {"config.json": cfg(torch_dtype="bfloat16")}, "config.dtype", Severity.BEHAVIOR,
         '"float32" → "bfloat16"'),
    Case("config_eos_moved_is_breaking", {"config.json": cfg(eos_token_id=2)},
         {"config.json": cfg(eos_token_id=7)}, "config.special_token_ids", Severity.BREAKING),
    Case("config_pad_moved_is_behavior", {"config.json": cfg(pad_token_id=0)},
         {"config.json": cfg(pad_token_id=7)}, "config.special_token_ids", Severity.BEHAVIOR),
    Case("config_custom_token_id_is_a_special_token_id", {"config.json": cfg()},
         {"config.json": cfg(gmask_token_id=130001)}, "config.special_token_ids",
         Severity.BEHAVIOR, "gmask_token_id unset → 130001"),
    Case("config_eos_int_to_list", {"config.json": cfg(eos_token_id=2)},
         {"config.json": cfg(eos_token_id=[2, 7])}, "config.special_token_ids", Severity.BREAKING),
    Case("tie_word_embeddings", {"config.json": cfg(tie_word_embeddings=True)},
         {"config.json": cfg(tie_word_embeddings=False)}, "config.tie_word_embeddings",
         Severity.BREAKING),
    Case("quantization", {"config.json": cfg()},
         {"config.json": cfg(quantization_config={"quant_method": "fp8"})}, "config.quantization",
         Severity.BREAKING, "fp8"),
    Case("attention_implementation", {"config.json": cfg(attn_implementation="eager")},
         {"config.json": cfg(attn_implementation="flash_attention_2")}, "config.attention",
         Severity.BEHAVIOR),
    Case("auto_map", {"config.json": cfg(auto_map={"AutoModel": "modeling_x.Model"})},
         {"config.json": cfg(auto_map={"AutoModel": "modeling_y.Model"})}, "config.auto_map",
         Severity.SECURITY),
    Case("auto_map_into_another_repo", {"config.json": cfg(auto_map={"AutoModel": "modeling_x.M"})},
         {"config.json": cfg(auto_map={"AutoModel": "evil/repo--modeling_x.M"})},
         "config.auto_map_external", Severity.SECURITY, "evil/repo"),
    Case("other_config_keys", {"config.json": cfg(initializer_range=0.02)},
         {"config.json": cfg(initializer_range=0.01)}, "config.other", Severity.INFO,
         "initializer_range"),
    # -- generation ------------------------------------------------------------------------
    Case("stop_token_removed", {GEN: {"eos_token_id": [1, 2]}}, {GEN: {"eos_token_id": 1}},
         "generation.stop_tokens", Severity.BREAKING, "may run on"),
    Case("max_new_tokens", {GEN: {"max_new_tokens": 256}}, {GEN: {"max_new_tokens": 4096}},
         "generation.length", Severity.BEHAVIOR, "256 → 4096"),
    Case("generation_pad_id", {GEN: {"pad_token_id": 0}}, {GEN: {"pad_token_id": 5}},
         "generation.special_token_ids", Severity.BEHAVIOR),
    Case("do_sample", {GEN: {"do_sample": False}}, {GEN: {"do_sample": True}},
         "generation.sampling", Severity.BEHAVIOR, "do_sample false → true"),
    # -- tokenizer -------------------------------------------------------------------------
    Case("tokens_renumbered_is_breaking", {"tokenizer.json": tokenizer_json(VOCAB)},
         {"tokenizer.json": tokenizer_json({**VOCAB, "a": 3, "ab": 0})}, "tokenizer.vocab",
         Severity.BREAKING, "2 re-numbered"),
    Case("tokens_added_to_vocab", {"tokenizer.json": tokenizer_json(VOCAB)},
         {"tokenizer.json": tokenizer_json({**VOCAB, "abc": 4})}, "tokenizer.vocab",
         Severity.BEHAVIOR, "1 added"),
    Case("vocab_in_unusual_layout_is_parsed_whole",
         {"tokenizer.json": tokenizer_json(VOCAB, truncation=None)},
         {"tokenizer.json": tokenizer_json({**VOCAB, "a": 3, "ab": 0}, truncation=None)},
         "tokenizer.vocab", Severity.BREAKING, "2 re-numbered"),
    Case("merges", {"tokenizer.json": tokenizer_json(VOCAB)},
         {"tokenizer.json": tokenizer_json(VOCAB) | {"model": REORDERED}},
         "tokenizer.merges", Severity.BEHAVIOR, "another order"),
    Case("special_token_attributes", {"tokenizer.json": tokenizer_json(VOCAB, [special("<s>", 4)])},
         {"tokenizer.json": tokenizer_json(VOCAB, [special("<s>", 4, lstrip=True)])},
         "tokenizer.added_tokens", Severity.BEHAVIOR, "lstrip false → true"),
    Case("special_token_id_changed", {"tokenizer.json": tokenizer_json(VOCAB, [special("<s>", 4)])},
         {"tokenizer.json": tokenizer_json(VOCAB, [special("<s>", 5)])}, "tokenizer.added_tokens",
         Severity.BREAKING, "id 4 → 5"),
    *[
        Case(f"pipeline_{section}", {"tokenizer.json": tokenizer_json(VOCAB)},
             {"tokenizer.json": tokenizer_json(VOCAB, **{section: {"type": "Sequence"}})},
             f"tokenizer.{section}", Severity.BEHAVIOR, "Sequence")
        for section in ("normalizer", "pre_tokenizer", "post_processor", "decoder")
    ],
    Case("eos_token_in_tokenizer_config", {TOK: {"eos_token": "</s>"}},
         {TOK: {"eos_token": {"content": "<|eot_id|>"}}}, "tokenizer.special_tokens",
         Severity.BEHAVIOR, '"</s>" → "<|eot_id|>"'),
    Case("add_bos_token", {TOK: {"add_bos_token": True}}, {TOK: {"add_bos_token": False}},
         "tokenizer.add_special_tokens", Severity.BEHAVIOR),
    Case("model_max_length", {TOK: {"model_max_length": 2048}}, {TOK: {"model_max_length": 8192}},
         "tokenizer.model_max_length", Severity.INFO),
    Case("padding_side", {TOK: {"padding_side": "right"}}, {TOK: {"padding_side": "left"}},
         "tokenizer.padding", Severity.BEHAVIOR),
    Case("added_tokens_decoder", {TOK: {"added_tokens_decoder": {"4": special("<s>", 4)}}},
         {TOK: {"added_tokens_decoder": {"4": special("<s>", 4), "5": special("<t>", 5)}}},
         "tokenizer.added_tokens", Severity.BEHAVIOR, '"<t>" id 5 special'),
    Case("special_tokens_map", {"special_tokens_map.json": {"pad_token": "<pad>"}},
         {"special_tokens_map.json": {"pad_token": "<unk>"}}, "tokenizer.special_tokens",
         Severity.BEHAVIOR),
    Case("added_tokens_json", {"added_tokens.json": {"<a>": 10}},
         {"added_tokens.json": {"<a>": 11}}, "tokenizer.added_tokens", Severity.BREAKING),
    Case("vocab_json", {"vocab.json": VOCAB}, {"vocab.json": {"a": 0, "b": 1}},
         "tokenizer.vocab", Severity.BREAKING, "2 removed"),
    Case("vocab_txt", {"vocab.txt": "a\nb\nc\n"}, {"vocab.txt": "a\nc\nb\n"}, "tokenizer.vocab",
         Severity.BREAKING, "re-numbered"),
    Case("merges_txt", {"merges.txt": "#version: 0.2\na b\n"},
         {"merges.txt": "#version: 0.2\na b\nab c\n"},
         "tokenizer.merges", Severity.BEHAVIOR, "1 added"),
    # -- chat templates --------------------------------------------------------------------
    Case("cosmetic_template_edit", {TOK: {"chat_template": SIMPLE_TEMPLATE}},
         {TOK: {"chat_template": COSMETIC_TEMPLATE}}, "chat_template.cosmetic", Severity.INFO,
         "renders all 6 canonical conversations identically"),
    Case("named_templates",
         {TOK: {"chat_template": [{"name": "tool_use", "template": SIMPLE_TEMPLATE}]}},
         {TOK: {"chat_template": [{"name": "tool_use", "template": THINK_TEMPLATE}]}},
         "chat_template.rendered", Severity.BEHAVIOR, "'tool_use' chat template"),
    Case("chat_template_jinja_file", {"chat_template.jinja": SIMPLE_TEMPLATE},
         {"chat_template.jinja": SIMPLE_TEMPLATE.replace("<|assistant|>", "<|bot|>")},
         "chat_template.rendered", Severity.BEHAVIOR, "chat_template.jinja"),
    Case("thinking_switch", {TOK: {"chat_template": SIMPLE_TEMPLATE}},
         {TOK: {"chat_template": SIMPLE_TEMPLATE + "{% if enable_thinking %}<think>{% endif %}"}},
         "chat_template.rendered", Severity.BEHAVIOR, "'multi-turn, thinking on'"),
    Case("template_removed", {TOK: {"chat_template": SIMPLE_TEMPLATE}}, {TOK: {}},
         "chat_template.removed", Severity.BREAKING),
    # -- weights ---------------------------------------------------------------------------
    Case("tensor_renamed", {"model.safetensors": Weights({"a.w": ("F32", [2, 3])}, oid="1" * 64)},
         {"model.safetensors": Weights({"b.w": ("F32", [2, 3])}, oid="2" * 64)},
         "weights.tensors", Severity.BREAKING, "a.w → b.w"),
    Case("tensor_reshaped", {"model.safetensors": Weights({"w": ("F32", [2, 3])}, oid="1" * 64)},
         {"model.safetensors": Weights({"w": ("F32", [2, 4])}, oid="2" * 64)}, "weights.shape",
         Severity.BREAKING, "[2, 3] → [2, 4]"),
    Case("safetensors_to_pickle", ONE_F32, {"pytorch_model.bin": Weights(oid="5" * 64)},
         "weights.format", Severity.BEHAVIOR, "safetensors → pickle"),
    Case("pickle_removed", {**ONE_F32, "model.pt": Weights()}, ONE_F32,
         "weights.pickle_removed", Severity.INFO),
    Case("gguf_added", ONE_F32, {**ONE_F32, "model-q4.gguf": Weights()}, "gguf.files",
         Severity.INFO, "GGUF models: 1 added (Q4)"),
    Case("weights_changed_without_headers",
         {"model.safetensors": Weights(oid="1" * 64, header_available=False)},
         {"model.safetensors": Weights(oid="2" * 64, header_available=False)},
         "weights.changed", Severity.BEHAVIOR, "headers unavailable"),
    # -- files, code, card -----------------------------------------------------------------
    Case("file_added", {}, {"notes.txt": "x"}, "files.added", Severity.INFO, "notes.txt"),
    Case("file_removed", {"notes.txt": "x"}, {}, "files.removed", Severity.INFO, "notes.txt"),
    Case("custom_code_added", {}, {"sub/modeling_x.py": "import os\n"}, "code.custom_added",
         Severity.SECURITY, "trust_remote_code"),
    Case("requirements", {"requirements.txt": "torch\n"}, {"requirements.txt": "torch\nevil\n"},
         "code.requirements", Severity.SECURITY, "+evil"),
    Case("card_gated", {"README.md": "a"}, {"README.md": "b"}, "card.gated", Severity.BEHAVIOR,
         old_card={}, new_card={"gated": True}),
    Case("card_base_model", {"README.md": "a"}, {"README.md": "b"}, "card.base_model",
         Severity.INFO, old_card={"base_model": "x/a"}, new_card={"base_model": "x/b"}),
    Case("card_pipeline_tag", {"README.md": "a"}, {"README.md": "b"}, "card.pipeline_tag",
         Severity.INFO, old_card={"pipeline_tag": "text-generation"},
         new_card={"pipeline_tag": "image-text-to-text"}),
]  # fmt: skip


def _find(changes: list[Change], kind: str) -> Change:
    found = [c for c in changes if c.kind == kind]
    assert found, f"no {kind} in {[(c.kind, c.summary) for c in changes]}"
    return found[0]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_change_kind(case: Case) -> None:
    old = view({**case.base, **case.old}, case.old_card)
    new = view({**case.base, **case.new}, case.new_card)
    changes = diff_revisions(old, new)
    change = _find(changes, case.kind)
    assert change.severity is case.severity, change.summary
    assert case.says in change.summary + (change.detail or ""), change
    assert not [c for c in changes if c.kind == "diff.failed"]


MODEL = "class Model:\n    pass\n\n\nclass Other:\n    pass\n"


def auto_map(**entries: str) -> dict[str, Any]:
    return {"config.json": cfg(auto_map=entries)}


@pytest.mark.parametrize(
    ("old", "new", "summary"),
    [
        (
            {**auto_map(AutoModel="modeling_x.Model"), "modeling_x.py": MODEL},
            {**auto_map(AutoModel="modeling_y.Model"), "modeling_y.py": "class Model: ...\n"},
            "config.json: auto_map changed: AutoModel now loads code the repo did not have "
            "(modeling_y.py).",
        ),
        (
            {**auto_map(AutoModel="modeling_x.Model"), "modeling_x.py": MODEL},
            {
                **auto_map(AutoModel="modeling_x.Other", AutoConfig="c.C"),
                "modeling_x.py": MODEL,
                "c.py": "class C: ...\n",
            },
            "config.json: auto_map changed: AutoConfig now loads code the repo did not have "
            "(c.py); AutoModel now loads another of the repo's classes (modeling_x.py).",
        ),
        (
            auto_map(AutoModel="m.A", AutoConfig="m.B"),
            auto_map(AutoModel="n.A", AutoConfig="org/r--n.B"),
            "config.json: auto_map changed: AutoConfig, AutoModel now load code the repo did not "
            "have (n.py in org/r, n.py).",
        ),
    ],
)
def test_an_auto_map_change_says_what_each_class_now_loads(
    old: dict[str, Any], new: dict[str, Any], summary: str
) -> None:
    change = _find(diff_revisions(view(old), view(new)), "config.auto_map")
    assert change.summary == summary


def test_an_auto_map_change_unseen_says_the_code_differs_and_where() -> None:
    before, after = {"AutoModel": "modeling_x.M"}, {"AutoModel": "modeling_y.M"}
    [change] = auto_map_changes(before, after, "vision/config.json")
    assert change.summary == (
        "vision/config.json: auto_map changed: AutoModel now loads different custom code "
        "(vision/modeling_y.py)."
    )


def test_identical_revisions_have_no_changes() -> None:
    files = {"config.json": cfg(), TOK: {"chat_template": SIMPLE_TEMPLATE}, **F32_SHARDS}
    assert diff_revisions(view(files), view(files)) == []


def test_first_upload_reports_files_not_every_setting() -> None:
    new = view(
        {"config.json": cfg(), GEN: {"eos_token_id": 2}, TOK: {"chat_template": "x"}}
        | {"model.safetensors": Weights({"w": ("F32", [4, 4])})}
    )
    changes = diff_revisions(RevisionView.empty(), new)
    assert [c.kind for c in changes] == ["files.added"]


def test_think_span_is_the_first_difference() -> None:
    old = view({"config.json": cfg(), TOK: {"chat_template": SIMPLE_TEMPLATE}})
    new = view({"config.json": cfg(), TOK: {"chat_template": THINK_TEMPLATE}})
    change = _find(diff_revisions(old, new), "chat_template.rendered")
    assert "<think>\n" in change.after["user only, generation prompt"]
    assert "no generation prompt" not in change.summary  # those render identically


def test_stop_token_change_sorts_first() -> None:
    old = view({"config.json": cfg(), GEN: {"eos_token_id": 1}, "a.txt": "x"})
    new = view({"config.json": cfg(), GEN: {"eos_token_id": [1, 2]}, "b.txt": "x"})
    assert diff_revisions(old, new)[0].kind == "generation.stop_tokens"


def test_a_failing_differ_is_recorded_not_raised() -> None:
    def broken(old: RevisionView, new: RevisionView) -> list[Change]:
        raise ValueError("boom")

    changes = diff_revisions(view({}), view({}), {**DIFFERS, "broken": broken})
    assert [(c.kind, c.summary) for c in changes] == [
        ("diff.failed", "The broken differ failed: ValueError: boom")
    ]


@pytest.mark.parametrize(
    "content",
    [
        b"\xff\xfe not utf-8",
        b"{not json",
        b"[1, 2]",
        b'{"model": 3, "added_tokens": "x"}',
        b"[" * 100_000,
    ],
    ids=["not-utf8", "not-json", "list", "wrong-types", "deep"],
)
def test_garbage_files_never_crash_a_differ(content: bytes) -> None:
    paths = ["config.json", GEN, TOK, "tokenizer.json", "added_tokens.json", "vocab.json"]
    old = view({"config.json": cfg(), **dict.fromkeys(paths[1:], {})})
    new = view(dict.fromkeys(paths, content))
    changes = diff_revisions(old, new)
    assert not [c for c in changes if c.kind == "diff.failed"], changes


@pytest.mark.parametrize(
    ("kind", "expected", "severity"),
    [
        (EventKind.HISTORY_REWRITTEN, "repo.history_rewritten", Severity.BREAKING),
        (EventKind.REPO_GATED, "repo.gated", Severity.BREAKING),
        (EventKind.REPO_DISABLED, "repo.disabled", Severity.BREAKING),
        (EventKind.REPO_DELETED, "repo.deleted", Severity.BREAKING),
        (EventKind.REPO_RENAMED, "repo.renamed", Severity.INFO),
        (EventKind.REPO_IDENTITY_CHANGED, "repo.identity_changed", Severity.SECURITY),
        (EventKind.REPO_UNAVAILABLE, "repo.unavailable", Severity.BREAKING),
    ],
)
def test_repo_events_read_as_changes(kind: EventKind, expected: str, severity: Severity) -> None:
    change = event_change(RepoEvent(kind, "what happened"))
    assert change is not None and (change.kind, change.severity) == (expected, severity)


def test_poll_failures_are_not_changes() -> None:
    assert event_change(RepoEvent(EventKind.POLL_FAILED, "503")) is None


def test_tokenizer_json_is_cut_without_parsing_vocab_and_merges() -> None:
    raw = json.dumps(tokenizer_json(VOCAB), indent=2).encode()
    split = split_tokenizer_json(raw)
    assert split is not None
    assert split.skeleton["model"] == {"type": "BPE", "vocab": None, "merges": None}
    assert (split.load("vocab"), split.load("merges")) == (VOCAB, ["a b", "ab c"])
    moved = json.dumps({**tokenizer_json(VOCAB), "truncation": None}).encode()
    assert split_tokenizer_json(moved) is None  # model is not last: parsed whole instead
    # Keys after `model` whose value ends in `}` too: the file still ends in `}}`.
    after = json.dumps({**tokenizer_json(VOCAB), "extra": {"type": "ByteLevel"}}).encode()
    assert split_tokenizer_json(after) is None


def test_a_tokenizer_json_in_two_diffs_reports_as_from_cold() -> None:
    """The new side of one change is the old side of the next: taken apart (its vocabulary
    parsed, its merges read) once, shared by content; the second diff reports what a cold one
    does."""
    sides = [
        (VOCAB, ["a b", "ab c"]),
        ({**VOCAB, "d": 4}, ["a b", "ab c", "c d"]),
        ({"b": 0, "a": 1, "c": 2, "ab": 3}, ["ab c", "c d"]),
    ]

    def views(memo: Memo) -> list[RevisionView]:
        return [
            view(
                {
                    "tokenizer.json": {
                        **tokenizer_json(v),
                        "model": {"type": "BPE", "vocab": v, "merges": m},
                    }
                },
                memo=memo,
            )
            for v, m in sides
        ]

    first = views(Memo())  # one memo: the second diff takes the shared side from it
    assert DIFFERS["tokenizer"](first[0], first[1])
    warm = DIFFERS["tokenizer"](first[1], first[2])
    cold = DIFFERS["tokenizer"](*views(Memo())[1:])
    assert warm == cold
    assert [c.kind for c in cold] == ["tokenizer.vocab", "tokenizer.merges"]


def test_the_same_objects_with_other_stored_headers_are_still_compared() -> None:
    """Headers are skipped only when both revisions hold the same objects with the same stored
    header bytes; a header stored otherwise for the same object is compared as before."""
    shard = "model.safetensors"

    def revision(shape: list[int]) -> RevisionView:
        return view({"config.json": cfg(), shard: Weights({"a.w": ("F32", shape)}, oid="1" * 64)})

    assert DIFFERS["weights"](revision([2, 2]), revision([2, 2])) == []
    changes = DIFFERS["weights"](revision([2, 2]), revision([4, 2]))
    assert [c.kind for c in changes] == ["weights.shape"], changes
