"""Every changed file yields a change: the generic differ by file class, claims, and roll-ups."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

import pytest

from hubwatch.diff import DIFFERS, diff_revisions
from hubwatch.diff.generic import CLAIMS, claimants, diff_generic
from hubwatch.models import Change, Severity
from tests.support.revisions import BASE_CONFIG, Weights, view

INDEX = "model.safetensors.index.json"
BIN_INDEX = "pytorch_model.bin.index.json"
LFS = "onnx/model.onnx"
SHARD = {"w": ("BF16", [4, 4])}


def shards(count: int, oid: str, name: str = "model-{:05}-of-{:05}.safetensors") -> dict[str, Any]:
    return {
        name.format(i, count): Weights(dict(SHARD), oid=f"{oid}{i:04}".ljust(64, "0"))
        for i in range(1, count + 1)
    }


@dataclass
class Case:
    name: str
    old: dict[str, Any]
    new: dict[str, Any]
    kind: str
    says: str
    before: Any = None
    after: Any = None
    absent: tuple[str, ...] = ()
    old_card: dict[str, object] = field(default_factory=dict)
    new_card: dict[str, object] = field(default_factory=dict)


CASES = [
    Case("json_keys_in_summary_values_in_before_after",
         {"eval_results.json": {"metadata": {"total_size": 10}, "w": "a"}},
         {"eval_results.json": {"metadata": {"total_size": 12}, "w": "a"}},
         "json.changed", "1 key(s) changed: metadata.total_size",
         {"metadata.total_size": 10}, {"metadata.total_size": 12}),
    Case("index_total_size_is_the_shard_layout",
         {INDEX: {"metadata": {"total_size": 10}, "weight_map": {"w": "a.safetensors"}}},
         {INDEX: {"metadata": {"total_size": 12}, "weight_map": {"w": "a.safetensors"}}},
         "weights.shard_layout", "total_size 10 → 12",
         absent=("json.changed",)),
    Case("bin_index_shards_three_to_two",
         {BIN_INDEX: {"weight_map": {"a": "1.bin", "b": "2.bin", "c": "3.bin"}}},
         {BIN_INDEX: {"weight_map": {"a": "1.bin", "b": "2.bin", "c": "2.bin"}}},
         "weights.shard_layout", "3 shard(s) → 2", absent=("json.changed",)),
    Case("text_lines_in_summary_unified_diff_in_detail", {"notes.txt": "a\nb\n"},
         {"notes.txt": "a\nc\nd\n"}, "text.changed", "+2 -1 lines", ["b"], ["c", "d"]),
    Case("binary_size_and_sha256", {"assets/logo.png": b"\x00\x01"},
         {"assets/logo.png": b"\x00\x01\x02"}, "binary.changed", "2 → 3 bytes",
         {"size": 2, "sha256": hashlib.sha256(b"\x00\x01").hexdigest(),
          "blob_id": hashlib.sha1(b"\x00\x01").hexdigest()},
         {"size": 3, "sha256": hashlib.sha256(b"\x00\x01\x02").hexdigest(),
          "blob_id": hashlib.sha1(b"\x00\x01\x02").hexdigest()}),
    Case("lfs_object_by_its_oid", {LFS: Weights(oid="a" * 64)}, {LFS: Weights(oid="b" * 64)},
         "binary.changed", "aaaaaaaaaaaa → bbbbbbbbbbbb"),
    Case("claimed_config_yields_config_changes_only",
         {"config.json": {**BASE_CONFIG, "vocab_size": 4}},
         {"config.json": {**BASE_CONFIG, "vocab_size": 6}}, "config.vocab_size", "4 → 6",
         absent=("json.changed",)),
    Case("claimed_file_its_differ_ignores_is_still_reported",
         {"generation_config.json": {"eos_token_id": 2, "_from_model_config": True}},
         {"generation_config.json": {"eos_token_id": 2}}, "generation.other", "_from_model_config",
         {"_from_model_config": True}, {"_from_model_config": None}),
    Case("a_hundred_shard_reupload_is_one_change", shards(100, "a"), shards(100, "b"),
         "weights.reuploaded", "100 of 100 shards re-uploaded: new content, identical headers",
         absent=("binary.changed",)),
    Case("pickle_shards_reuploaded_are_one_change",
         {f"pytorch_model-{i}.bin": Weights(oid=f"a{i:02}".ljust(64, "0")) for i in range(40)},
         {f"pytorch_model-{i}.bin": Weights(oid=f"b{i:02}".ljust(64, "0")) for i in range(40)},
         "weights.changed", "40 file(s)"),
    Case("many_json_files_are_one_change", {f"eval/{i}.json": {"acc": i} for i in range(8)},
         {f"eval/{i}.json": {"acc": i + 1} for i in range(8)}, "json.changed",
         "8 JSON files changed"),
    Case("files_added_roll_up_with_pickle_count", {},
         {f"model-{i:05}.safetensors": Weights(oid="c" * 64) for i in range(39)},
         "files.added", "39 files added (pickle: 0)"),
    Case("card_metadata_lists_other_keys", {"README.md": "---\nlicense: mit\n---\nhi\n"},
         {"README.md": "---\nlicense: mit\nextra_gated_prompt: agree\ntags: [a]\n---\nhi\n"},
         "card.metadata", "2 key(s) (extra_gated_prompt, tags)", {},
         {"extra_gated_prompt": "agree", "tags": ["a"]}, ("json.changed", "text.changed"),
         {"license": "mit"}, {"license": "mit"}),
    Case("card_body_edit_is_card_text", {"README.md": "---\nlicense: mit\n---\nhi\n"},
         {"README.md": "---\nlicense: mit\n---\nhello\n"}, "card.text", "+1 -1 lines",
         absent=("card.license", "text.changed"), old_card={"license": "mit"},
         new_card={"license": "mit"}),
    Case("new_readme_keys_count_as_added", {".gitattributes": "x\n"},
         {".gitattributes": "x\n", "README.md": "---\nlicense: mit\nlanguage: en\n---\n"},
         "card.license", 'unset → "mit"', None, "mit", new_card={"license": "mit"}),
    Case("new_readme_other_keys_count_as_added", {".gitattributes": "x\n"},
         {".gitattributes": "x\n", "README.md": "---\nlicense: mit\nlanguage: en\n---\n"},
         "card.metadata", "language", {}, {"language": "en"}, new_card={"license": "mit"}),
]  # fmt: skip


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_every_changed_file_yields_a_change(case: Case) -> None:
    changes = diff_revisions(view(case.old, case.old_card), view(case.new, case.new_card))
    found = [c for c in changes if c.kind == case.kind]
    assert len(found) == 1, [(c.kind, c.summary) for c in changes]
    change = found[0]
    assert case.says in change.summary + (change.detail or ""), change
    if case.before is not None or case.after is not None:
        assert (change.before, change.after) == (case.before, case.after)
    assert not [c for c in changes if c.kind in case.absent], changes
    assert all(len(c.summary) <= 160 for c in changes), [c.summary for c in changes]
    assert not [c for c in changes if c.kind == "diff.failed"]


def test_a_hundred_shard_reupload_lists_every_shard_in_its_detail() -> None:
    changes = diff_revisions(view(shards(100, "a")), view(shards(100, "b")))
    assert [c.kind for c in changes] == ["weights.reuploaded"]
    assert changes[0].detail is not None
    lines = changes[0].detail.splitlines()
    assert sum(line.startswith("model-") for line in lines) == 100
    # and why there is no tensor diff, once for the hundred shards
    assert sum(line.startswith("tensor-level diff unavailable") for line in lines) == 1


def test_text_detail_is_the_unified_diff() -> None:
    (change,) = diff_revisions(view({"notes.txt": "a\n"}), view({"notes.txt": "b\n"}))
    assert change.detail is not None
    assert "--- a/notes.txt" in change.detail
    assert "+b" in change.detail


def test_reformatted_json_reports_nothing() -> None:
    old = view({"extra.json": b'{"a": 1}'})
    new = view({"extra.json": b'{\n  "a": 1\n}\n'})
    assert diff_revisions(old, new) == []


def test_alone_the_generic_differ_skips_every_claimed_file() -> None:
    old = view({"config.json": BASE_CONFIG, "generation_config.json": {"x": 1}, "a.txt": "1"})
    new = view({"config.json": {**BASE_CONFIG, "x": 1}, "generation_config.json": {}, "a.txt": "2"})
    assert [c.path for c in diff_generic(old, new)] == ["a.txt"]


@pytest.mark.parametrize(
    ("path", "owners"),
    [
        ("config.json", ["config"]),
        ("vision/config.json", ["config"]),
        ("generation_config.json", ["generation"]),
        ("tokenizer_config.json", ["tokenizer", "chat_template"]),
        ("sub/tokenizer.json", ["tokenizer"]),
        ("additional_chat_templates/tools.jinja", ["chat_template"]),
        ("model-00001-of-00002.safetensors", ["weights"]),
        ("modeling_x.py", ["code"]),
        ("README.md", ["card"]),
        ("model.safetensors.index.json", []),
        ("sub/generation_config.json", []),
        ("tokenizer.model", ["vocab_files"]),
    ],
)
def test_claims(path: str, owners: list[str]) -> None:
    assert claimants(path) == owners


def test_every_claim_names_a_registered_differ() -> None:
    assert set(CLAIMS) <= set(DIFFERS)


def test_an_owner_that_fails_leaves_its_files_to_the_generic_differ() -> None:
    def broken(old: object, new: object) -> list[Change]:
        raise ValueError("boom")

    old = view({"config.json": {**BASE_CONFIG, "vocab_size": 4}})
    new = view({"config.json": {**BASE_CONFIG, "vocab_size": 6}})
    changes = diff_revisions(old, new, {"config": broken, "generic": diff_generic})
    assert sorted(c.kind for c in changes) == ["config.other", "diff.failed"]
    json_change = next(c for c in changes if c.kind == "config.other")
    assert json_change.severity is Severity.INFO
    assert json.dumps(json_change.after) == '{"vocab_size": 6}'
