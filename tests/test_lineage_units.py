"""Lineage's pure parts: declared bases from cards, fingerprints (HF files and GGUF headers),
matching a derivative against its base's history, and the lineage changes."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hubwatch.formats.card import declared_bases
from hubwatch.formats.view import RevisionView
from hubwatch.lineage.assess import (
    assess,
    concerns,
    derivatives_stale_change,
    missed_of,
    stale_change,
)
from hubwatch.lineage.fingerprint import Fingerprint, fingerprint, token_digest
from hubwatch.lineage.judge import staler
from hubwatch.models import Change, CommitSha, FileEntry, ReadResult, ReadStatus, Severity
from hubwatch.models.gguf import GGUFHeader
from hubwatch.models.lineage import Lineage, LineageStatus, Relation
from hubwatch.models.repo import validate_repo_id
from tests.support.lineage import NEW_TEMPLATE, OLD_TEMPLATE, VOCAB, model_files
from tests.support.revisions import view


def sha(n: int) -> CommitSha:
    return CommitSha(f"{n:040x}")


# -- declared bases ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("card", "bases", "relation", "ignored"),
    [
        ({"base_model": "org/base"}, ("org/base",), Relation.UNKNOWN, 0),
        ({"base_model": ["a/x", "b/y", "a/x"], "base_model_relation": "merge"},
         ("a/x", "b/y"), Relation.MERGE, 0),
        ({"base_model": "org/base", "base_model_relation": "Quantized"},
         ("org/base",), Relation.QUANTIZED, 0),
        ({"base_model": "org/base", "base_model_relation": "<b>x</b>"},
         ("org/base",), Relation.UNKNOWN, 0),
        ({"base_model": ["../x", "<script>alert(1)</script>", 7, "org/ok"]},
         ("org/ok",), Relation.UNKNOWN, 3),
        ({"base_model": "https://huggingface.co/org/base"}, (), Relation.UNKNOWN, 1),
        ({}, (), Relation.UNKNOWN, 0),
    ],
)  # fmt: skip
def test_declared_bases_keep_valid_ids_and_say_why_the_rest_is_ignored(
    card: dict[str, Any], bases: tuple[str, ...], relation: Relation, ignored: int
) -> None:
    found = declared_bases(card)
    assert (found.bases, found.relation, len(found.ignored)) == (bases, relation, ignored)


def test_a_card_naming_hundreds_of_bases_is_read_only_so_far() -> None:
    found = declared_bases({"base_model": [f"org/m{i}" for i in range(500)]})
    assert len(found.bases) == 16
    assert found.ignored == ("base_model names 500 models; only the first 16 read",)


_JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=300),
    lambda inner: st.lists(inner, max_size=5),
    max_leaves=20,
)


@given(st.dictionaries(st.sampled_from(["base_model", "base_model_relation", "x"]), _JSONISH))
def test_any_card_value_gives_valid_ids_or_reasons(card: dict[str, Any]) -> None:
    found = declared_bases(card)
    for base in found.bases:
        assert validate_repo_id(base) == base
    assert all("\n" not in reason or "base_model" in reason for reason in found.ignored)


# -- fingerprints -------------------------------------------------------------------------


def test_hf_fingerprint_reads_template_special_tokens_tokenizer_and_stops() -> None:
    found = fingerprint(view(model_files(fixed=True)))
    assert found.values["chat_template"] == {"default": NEW_TEMPLATE}
    assert found.values["special_tokens"] == {"bos": "<s>", "eos": "<|eot|>"}
    # eos <|eot|>, and </s>: llama.cpp ends generation at it by its text (fingerprint.py)
    assert found.values["generation"] == ["</s>", "<|eot|>"]
    ids = {0: "<unk>", 1: "<s>", 2: "</s>", 3: "<|eot|>", 4: "a", 5: "b", 6: "ab"}
    assert found.values["tokenizer"] == token_digest(ids)


def test_a_whitespace_only_template_fix_is_a_difference() -> None:
    old = fingerprint(view(model_files(fixed=False)))
    new = fingerprint(view(model_files(fixed=False, template=OLD_TEMPLATE + "\n")))
    assert old.compared(new) == (
        ("chat_template", "special_tokens", "tokenizer", "generation"),
        ("chat_template",),
    )


def gguf_view(metadata: dict[str, Any], path: str = "model-Q4_K_M.gguf") -> RevisionView:
    header = GGUFHeader(3, 32, 1024, metadata, ())
    data = json.dumps(header.to_json()).encode()
    entry = FileEntry(path, 10_000, "f" * 40, "e" * 64)
    return RevisionView([entry], {}, {path: ReadResult(ReadStatus.STORED, data=data)})


def gguf_metadata(*, fixed: bool) -> dict[str, Any]:
    tokens = [t for t, _ in sorted(VOCAB.items(), key=lambda item: item[1])]
    return {
        "general.architecture": "llama",
        "tokenizer.ggml.model": "gpt2",
        "tokenizer.ggml.tokens": [*tokens, "[PAD7]"],  # llama.cpp pads to vocab_size
        "tokenizer.ggml.bos_token_id": 1,
        "tokenizer.ggml.eos_token_id": 3 if fixed else 2,
        "tokenizer.chat_template": NEW_TEMPLATE if fixed else OLD_TEMPLATE,
    }


def test_a_gguf_header_fingerprints_like_the_hf_files_it_was_converted_from() -> None:
    gguf = fingerprint(gguf_view(gguf_metadata(fixed=True)))
    assert gguf.source == "gguf:model-Q4_K_M.gguf"
    assert gguf.values["special_tokens"] == {"bos": "<s>", "eos": "<|eot|>"}
    hf_fixed = fingerprint(view(model_files(fixed=True)))
    hf_old = fingerprint(view(model_files(fixed=False)))
    every = ("chat_template", "special_tokens", "tokenizer", "generation")
    assert gguf.compared(hf_fixed) == (every, ())
    assert gguf.compared(hf_old) == (every, ("chat_template", "special_tokens", "generation"))


def test_gguf_named_templates_are_compared_by_name() -> None:
    metadata = {**gguf_metadata(fixed=True), "tokenizer.chat_template.tool_use": "{{ tools }}"}
    found = fingerprint(gguf_view(metadata))
    assert found.values["chat_template"] == {"default": NEW_TEMPLATE, "tool_use": "{{ tools }}"}


def test_gguf_ids_outside_the_token_list_are_not_special_tokens() -> None:
    metadata = {**gguf_metadata(fixed=True), "tokenizer.ggml.eos_token_id": 10**9}
    found = fingerprint(gguf_view(metadata))
    assert found.values["special_tokens"] == {"bos": "<s>"}
    assert found.values["generation"] == ["</s>", f"<id {10**9}>"]


def test_a_revision_without_tokenizer_files_has_an_empty_fingerprint() -> None:
    assert fingerprint(view({"README.md": "hi"})).values == {}


# -- matching -----------------------------------------------------------------------------

OLD = Fingerprint({"chat_template": {"default": "A"}, "generation": ["</s>"]})
FIXED = Fingerprint({"chat_template": {"default": "B"}, "generation": ["<|eot|>"]})


def test_the_newest_matching_base_revision_is_the_base_and_later_moves_are_missed() -> None:
    history = {sha(1): OLD, sha(2): OLD, sha(3): FIXED}
    found = assess(OLD, list(history), history.__getitem__)
    assert (found.status, found.base_sha) == (LineageStatus.STALE, sha(2))
    assert found.moved == ((sha(3), ("chat_template", "generation")),)


def test_matching_the_newest_revision_is_current_and_older_ones_are_never_read() -> None:
    read: list[str] = []
    history = {sha(1): OLD, sha(2): FIXED}

    def print_of(s: CommitSha) -> Fingerprint:
        read.append(s)
        return history[s]

    found = assess(FIXED, list(history), print_of)
    assert (found.status, found.base_sha, found.moved) == (LineageStatus.CURRENT, sha(2), ())
    assert read == [sha(2)]


def test_nothing_matching_is_unmatched_naming_the_nearest_difference() -> None:
    other = Fingerprint({"chat_template": {"default": "C"}, "generation": ["</s>"]})
    history = {sha(1): OLD, sha(2): FIXED}
    found = assess(other, list(history), history.__getitem__)
    assert found.status is LineageStatus.UNMATCHED and found.base_sha is None
    assert found.detail == (
        f"no base revision matches; the nearest ({sha(1)[:12]}) differs in chat_template"
    )


def test_no_aspect_in_common_is_no_match() -> None:
    history = {sha(1): Fingerprint({"tokenizer": "d1"})}
    found = assess(OLD, list(history), history.__getitem__)
    assert found.status is LineageStatus.UNMATCHED


@pytest.mark.parametrize(
    ("kind", "aspect", "expected"),
    [
        ("chat_template.rendered", "chat_template", True),
        ("chat_template.cosmetic", "chat_template", True),
        ("generation.stop_tokens", "generation", True),
        ("generation.sampling", "generation", False),
        ("tokenizer.special_tokens", "special_tokens", True),
        ("tokenizer.vocab", "tokenizer", True),
        ("tokenizer.padding", "tokenizer", False),
        ("gguf.chat_template", "chat_template", True),
        ("gguf.stop_tokens", "generation", True),
        ("card.license", "chat_template", False),
    ],
)
def test_change_kinds_concern_their_aspects(kind: str, aspect: str, expected: bool) -> None:
    assert concerns(kind, aspect) is expected


def test_missed_changes_are_the_concerning_kinds_of_each_move_oldest_first() -> None:
    stored = {
        sha(3): [
            Change("generation.stop_tokens", Severity.BREAKING, "eos 2 → 3", "g.json"),
            Change("card.text", Severity.INFO, "prose"),
        ],
        sha(4): [Change("chat_template.rendered", Severity.BEHAVIOR, "renders", "t.json")],
    }
    moved = ((sha(3), ("generation",)), (sha(4), ("chat_template",)), (sha(5), ("tokenizer",)))
    assert [(m["sha"], m["kind"], m["severity"]) for m in missed_of(moved, stored)] == [
        (sha(3), "generation.stop_tokens", "breaking"),
        (sha(4), "chat_template.rendered", "behavior"),
        (sha(5), "lineage.tokenizer", "behavior"),  # no stored change says how
    ]


def test_stale_and_derivatives_stale_take_the_worst_missed_severity() -> None:
    missed = (
        {"sha": sha(3), "kind": "chat_template.rendered", "severity": "behavior",
         "summary": "renders", "path": None},
        {"sha": sha(4), "kind": "generation.stop_tokens", "severity": "breaking",
         "summary": "eos", "path": None},
    )  # fmt: skip
    lineage = Lineage(
        "org/q", sha(9), "org/base", Relation.QUANTIZED, LineageStatus.STALE, sha(2), missed
    )
    change = stale_change(lineage)
    assert change.kind == "lineage.stale" and change.severity is Severity.BREAKING
    assert change.summary == (
        f"Stale: built from org/base @ {sha(2)[:12]}; missed 2 base changes "
        "(chat_template.rendered, generation.stop_tokens)."
    )
    on_base = derivatives_stale_change("org/base", sha(3), [lineage])
    assert (on_base.severity, on_base.after) == (Severity.BEHAVIOR, ["org/q"])


_VALUE = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=6) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=30,
)
_GGUF_KEYS = st.sampled_from(
    [
        "tokenizer.ggml.tokens",
        "tokenizer.ggml.eos_token_id",
        "tokenizer.ggml.bos_token_id",
        "tokenizer.ggml.padding_token_id",
        "tokenizer.ggml.eot_token_id",
        "tokenizer.chat_template",
        "tokenizer.chat_template.tool_use",
        "general.architecture",
    ]
)


@given(st.dictionaries(_GGUF_KEYS, _VALUE))
def test_any_gguf_metadata_fingerprints_without_raising(metadata: dict[str, Any]) -> None:
    found = fingerprint(gguf_view(metadata)).values
    assert set(found) <= {"chat_template", "special_tokens", "tokenizer", "generation"}


@given(
    st.fixed_dictionaries(
        {
            "tokenizer.json": st.fixed_dictionaries(
                {"model": st.fixed_dictionaries({"vocab": _VALUE}), "added_tokens": _VALUE}
            ),
            "tokenizer_config.json": st.fixed_dictionaries(
                {"eos_token": _VALUE, "added_tokens_decoder": _VALUE, "chat_template": _VALUE}
            ),
            "generation_config.json": st.fixed_dictionaries({"eos_token_id": _VALUE}),
            "special_tokens_map.json": _VALUE,
        }
    )
)
def test_any_tokenizer_files_fingerprint_without_raising(files: dict[str, Any]) -> None:
    found = fingerprint(view(files)).values
    assert set(found) <= {"chat_template", "special_tokens", "tokenizer", "generation"}


def test_a_stale_record_is_news_only_when_its_lineage_changed() -> None:
    missed = {"sha": sha(3), "kind": "chat_template.rendered", "severity": "behavior"}
    more = {"sha": sha(4), "kind": "generation.stop_tokens", "severity": "breaking"}
    was = Lineage(
        "org/d", sha(9), "org/b", Relation.QUANTIZED, LineageStatus.STALE, sha(2), (missed,)
    )
    assert not staler(replace(was, sha=sha(10)), was)  # a card edit
    assert staler(replace(was, missed=(missed, more)), was)  # the base changed again
    assert staler(replace(was, base_sha=sha(3), missed=(more,)), was)  # a partial re-upload
    assert staler(was, replace(was, status=LineageStatus.CURRENT))
    assert staler(was, None)
