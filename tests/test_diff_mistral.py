"""Mistral-native files, table-driven: params.json, tekken.json, SYSTEM_PROMPT.txt."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest

from hubwatch.diff import DIFFERS, diff_revisions
from hubwatch.diff.mistral import diff_mistral
from hubwatch.formats.view import RevisionView
from hubwatch.models import ContentSha, FileEntry, ReadResult, ReadStatus, Severity
from hubwatch.tracker.select import is_safetensors, is_tracked_content
from tests.support.revisions import BASE_CONFIG, view

PARAMS: dict[str, Any] = {
    "dim": 5120, "n_layers": 40, "head_dim": 128, "hidden_dim": 32768, "n_heads": 32,
    "n_kv_heads": 8, "rope_theta": 1e9, "norm_eps": 1e-05, "vocab_size": 131072,
}  # fmt: skip
PROMPT = "You are Devstral.\nYou help with code.\n"


def params(**keys: Any) -> dict[str, Any]:
    return {**PARAMS, **keys}


def tekken(vocab: list[str], specials: list[str], **config: Any) -> dict[str, Any]:
    return {
        "config": {"pattern": "x", "num_vocab_tokens": len(vocab), "version": "v7",
                   "default_vocab_size": len(vocab) + len(specials),
                   "default_num_special_tokens": len(specials), **config},
        "vocab": [{"rank": i, "token_bytes": t, "token_str": t} for i, t in enumerate(vocab)],
        "special_tokens": [
            {"rank": i, "token_str": s, "is_control": True} for i, s in enumerate(specials)
        ],
    }  # fmt: skip


VOCAB = ["YQ==", "Yg==", "Yw=="]
SPECIALS = ["<unk>", "<s>", "</s>"]
TEKKEN = tekken(VOCAB, SPECIALS)


@dataclass
class Case:
    name: str
    old: dict[str, Any]
    new: dict[str, Any]
    kind: str | None
    severity: Severity = Severity.INFO
    says: str = ""
    base: dict[str, Any] | None = None


CASES = [
    Case("dimensions_are_breaking", {"params.json": PARAMS},
         {"params.json": params(n_kv_heads=4)}, "mistral.params", Severity.BREAKING,
         "dimensions (n_kv_heads 8 → 4)"),
    Case("vocab_size_is_breaking", {"params.json": PARAMS},
         {"params.json": params(vocab_size=131073)}, "mistral.params", Severity.BREAKING,
         "vocabulary size"),
    Case("rope_theta_is_behavior", {"params.json": PARAMS},
         {"params.json": params(rope_theta=1e6)}, "mistral.params", Severity.BEHAVIOR,
         "context (rope_theta"),
    Case("context_length_is_behavior", {"params.json": PARAMS},
         {"params.json": params(max_seq_len=131072)}, "mistral.params", Severity.BEHAVIOR,
         "max_seq_len unset → 131072"),
    Case("moe_is_breaking", {"params.json": params(moe={"num_experts": 8})},
         {"params.json": params(moe={"num_experts": 16})}, "mistral.params", Severity.BREAKING,
         "moe"),
    Case("vision_encoder_added_is_breaking", {"params.json": PARAMS},
         {"params.json": params(vision_encoder={"image_size": 1540})}, "mistral.params",
         Severity.BREAKING, "vision encoder"),
    Case("worst_group_sets_severity_of_one_change", {"params.json": PARAMS},
         {"params.json": params(rope_theta=1e6, dim=4096, norm_eps=1e-6)}, "mistral.params",
         Severity.BREAKING, "other (norm_eps)"),
    Case("other_keys_are_info", {"params.json": PARAMS},
         {"params.json": params(norm_eps=1e-6)}, "mistral.params", Severity.INFO, "norm_eps"),
    Case("same_values_rewritten_say_nothing", {"params.json": PARAMS},
         {"params.json": json.dumps(PARAMS)}, None),
    Case("params_added_to_a_model_is_info", {}, {"params.json": PARAMS}, "mistral.params",
         Severity.INFO, "added"),
    Case("params_removed_is_breaking", {"params.json": PARAMS}, {}, "mistral.params",
         Severity.BREAKING, "removed"),
    Case("first_upload_says_nothing", {}, {"params.json": PARAMS, "tekken.json": TEKKEN,
         "SYSTEM_PROMPT.txt": PROMPT}, None, base={}),
    Case("tekken_special_token_changed_is_breaking", {"tekken.json": TEKKEN},
         {"tekken.json": tekken(VOCAB, ["<unk>", "<s>", "[INST]"])}, "mistral.tekken",
         Severity.BREAKING, '1 special token(s) changed (2: "</s>" → "[INST]")'),
    Case("tekken_vocabulary_renumbered_is_breaking", {"tekken.json": TEKKEN},
         {"tekken.json": tekken(["Yg==", "YQ==", "Yw=="], SPECIALS)}, "mistral.tekken",
         Severity.BREAKING, "vocabulary 3 → 3 tokens, 2 rank(s) re-numbered"),
    Case("tekken_vocabulary_grown_is_breaking", {"tekken.json": TEKKEN},
         {"tekken.json": tekken([*VOCAB, "ZA=="], SPECIALS)}, "mistral.tekken",
         Severity.BREAKING, "default_vocab_size 6 → 7"),
    Case("tekken_version_alone_is_behavior", {"tekken.json": TEKKEN},
         {"tekken.json": tekken(VOCAB, SPECIALS, version="v11")}, "mistral.tekken",
         Severity.BEHAVIOR, 'version "v7" → "v11"'),
    Case("tekken_pattern_is_breaking", {"tekken.json": TEKKEN},
         {"tekken.json": tekken(VOCAB, SPECIALS, pattern="y")}, "mistral.tekken",
         Severity.BREAKING, "pattern"),
    Case("system_prompt_changed_is_behavior", {"SYSTEM_PROMPT.txt": PROMPT},
         {"SYSTEM_PROMPT.txt": PROMPT.replace("code", "Python")}, "mistral.system_prompt",
         Severity.BEHAVIOR, "+You help with Python."),
    Case("system_prompt_added_is_behavior", {}, {"SYSTEM_PROMPT.txt": PROMPT},
         "mistral.system_prompt", Severity.BEHAVIOR, "added (+2 -0 lines)"),
    Case("system_prompt_in_a_folder", {"sub/SYSTEM_PROMPT.txt": PROMPT},
         {"sub/SYSTEM_PROMPT.txt": "x\n"}, "mistral.system_prompt", Severity.BEHAVIOR,
         "sub/SYSTEM_PROMPT.txt changed"),
]  # fmt: skip


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
def test_mistral(case: Case) -> None:
    base = {"config.json": BASE_CONFIG} if case.base is None else case.base
    changes = diff_mistral(view({**base, **case.old}), view({**base, **case.new}))
    if case.kind is None:
        assert changes == []
        return
    assert [c.kind for c in changes] == [case.kind], changes
    change = changes[0]
    assert change.severity == case.severity
    assert case.says in change.summary + (change.detail or "")
    assert change.before != change.after


def test_unreadable_tekken_says_nothing() -> None:
    """An LFS pointer in a git mirror: the file changed, its content is unknown."""

    def lfs(oid: str) -> RevisionView:
        entry = FileEntry("tekken.json", 19_399_650, oid * 40, oid * 64)
        result = ReadResult(ReadStatus.UNAVAILABLE, error="LFS pointer")
        return RevisionView([entry], {"tekken.json": result})

    assert diff_mistral(lfs("a"), lfs("b")) == []


def test_tekken_is_loaded_and_parsed_once_per_revision() -> None:
    """Every differ reads the large vocabulary through the view's cache."""
    loads: list[str] = []
    blobs = {
        ContentSha("1" * 64): json.dumps(TEKKEN).encode(),
        ContentSha("2" * 64): json.dumps(tekken(VOCAB, ["<unk>", "<s>", "[INST]"])).encode(),
    }

    def load(sha: ContentSha) -> bytes:
        loads.append(sha)
        return blobs[sha]

    def stored(sha: str) -> RevisionView:
        files = [FileEntry("tekken.json", 10, sha * 40), FileEntry("params.json", 2, "p" * 40)]
        contents = {
            "tekken.json": ReadResult(ReadStatus.STORED, sha256=ContentSha(sha * 64)),
            "params.json": ReadResult(ReadStatus.STORED, data=json.dumps(PARAMS).encode()),
        }
        return RevisionView(files, contents, load=load)

    changes = diff_revisions(stored("1"), stored("2"))
    assert "mistral.tekken" in [c.kind for c in changes]
    assert sorted(loads) == sorted(blobs)


@pytest.mark.parametrize("name", ["params.json", "tekken.json", "SYSTEM_PROMPT.txt"])
def test_mistral_files_are_stored(name: str) -> None:
    assert is_tracked_content(name)


def test_consolidated_headers_are_read() -> None:
    assert is_safetensors("consolidated.safetensors")
    assert is_safetensors("consolidated-00001-of-00002.safetensors")


def test_mistral_is_a_registered_differ() -> None:
    assert DIFFERS["mistral"] is diff_mistral
