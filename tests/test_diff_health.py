"""Revision health, table-driven: each judgement reported when it flips, and on a first revision."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

import pytest

from hubwatch.caching import Memo
from hubwatch.diff import DIFFERS
from hubwatch.diff.health import diff_health
from hubwatch.diff.health_tokens import tokenizer_problems
from hubwatch.formats.view import RevisionView
from hubwatch.models import ContentSha, ReadStatus, Severity, StoredFile
from tests.support.revisions import BASE_CONFIG, Weights, view

INDEX = "model.safetensors.index.json"
SHARDS = [f"model-0000{n}-of-00003.safetensors" for n in (1, 2, 3)]


def cfg(**keys: Any) -> dict[str, Any]:
    return {**BASE_CONFIG, "vocab_size": 8, "hidden_size": 4, **keys}


def index(*tensors: tuple[str, str]) -> dict[str, Any]:
    return {"metadata": {"total_size": 1}, "weight_map": dict(tensors)}


def shard(n: int, *names: str) -> Weights:
    return Weights({name: ("F32", [2, 2]) for name in names}, oid=str(n) * 64)


FULL_INDEX = index(("a", SHARDS[0]), ("b", SHARDS[1]), ("c", SHARDS[2]))
SHARD_FILES = {SHARDS[0]: shard(1, "a"), SHARDS[1]: shard(2, "b"), SHARDS[2]: shard(3, "c")}
COMPLETE = {"config.json": cfg(), INDEX: FULL_INDEX, **SHARD_FILES}
ONE_OF_THREE = {"config.json": cfg(), INDEX: FULL_INDEX, SHARDS[0]: SHARD_FILES[SHARDS[0]]}
TWO_OF_THREE = {**ONE_OF_THREE, SHARDS[1]: SHARD_FILES[SHARDS[1]]}


def tok(vocab: dict[str, int], added: tuple[tuple[str, int], ...] = ()) -> dict[str, Any]:
    return {
        "added_tokens": [{"id": i, "content": t, "special": True} for t, i in added],
        "model": {"type": "BPE", "vocab": vocab, "merges": []},
    }


VOCAB = {f"t{i}": i for i in range(8)}
TOKENIZER = {"config.json": cfg(eos_token_id=2), "tokenizer.json": tok(VOCAB)}


@dataclass
class Case:
    name: str
    old: dict[str, Any] | None
    """None: the revision before a repo's first commit."""
    new: dict[str, Any]
    kind: str | None
    """None: nothing reported."""
    severity: Severity = Severity.BREAKING
    says: str = ""
    new_card: dict[str, object] | None = None


CASES = [
    # -- weights ---------------------------------------------------------------------------
    Case("first_revision_with_missing_shards_is_unloadable", None, ONE_OF_THREE,
         "health.weights", Severity.BREAKING, "not loadable: 2 of 3 shards missing"),
    Case("healthy_first_revision_says_nothing", None, COMPLETE, None),
    Case("upload_still_in_progress_says_nothing_again", ONE_OF_THREE, TWO_OF_THREE, None),
    Case("upload_completed_is_now_loadable", TWO_OF_THREE, COMPLETE, "health.weights",
         Severity.INFO, "now loadable"),
    Case("shard_removed_breaks_loading", COMPLETE,
         {k: v for k, v in COMPLETE.items() if k != SHARDS[2]}, "health.weights",
         Severity.BREAKING, "1 of 3 shards missing"),
    Case("numbered_shards_without_index_half_present", None,
         {"config.json": cfg(), "pytorch_model-00001-of-00002.bin": Weights(oid="9" * 64)},
         "health.weights", Severity.BREAKING, "1 of 2 shards missing"),
    Case("bin_index_shards_missing", None,
         {"config.json": cfg(), "pytorch_model.bin.index.json": index(("a", "p-1.bin"))},
         "health.weights", Severity.BREAKING, "1 of 1 shards missing"),
    Case("shard_of_another_upload_is_a_mix", COMPLETE,
         {**COMPLETE, SHARDS[1]: shard(7, "b", "b2")}, "health.weights", Severity.BREAKING,
         "shards of two uploads mixed"),
    Case("embedding_rows_against_vocab_size", None,
         {"config.json": cfg(),
          "model.safetensors": Weights({"model.embed_tokens.weight": ("F32", [9, 4])})},
         "health.weights", Severity.BREAKING, "9 rows, config.json vocab_size 8"),
    Case("embedding_width_against_hidden_size", None,
         {"config.json": cfg(),
          "model.safetensors": Weights({"lm_head.weight": ("F32", [8, 6])})},
         "health.weights", Severity.BREAKING, "6 wide, config.json hidden size 4"),
    Case("consolidated_embedding_against_params", None,
         {"params.json": {"dim": 4, "vocab_size": 8},
          "consolidated.safetensors": Weights({"tok_embeddings.weight": ("F32", [16, 4])})},
         "health.weights", Severity.BREAKING, "16 rows, params.json vocab_size 8"),
    Case("matching_embeddings_are_healthy", None,
         {"config.json": cfg(),
          "model.safetensors": Weights({"model.embed_tokens.weight": ("F32", [8, 4])})}, None),
    # -- tokenizer -------------------------------------------------------------------------
    Case("eos_beyond_vocab_size", TOKENIZER,
         {**TOKENIZER, "generation_config.json": {"eos_token_id": [2, 9]}}, "health.tokenizer",
         Severity.BREAKING, "eos_token_id 9 in generation_config.json is beyond vocab_size 8"),
    Case("pad_not_in_tokenizer_vocabulary",
         {"config.json": cfg(vocab_size=10), "tokenizer.json": tok(VOCAB)},
         {"config.json": cfg(vocab_size=10, pad_token_id=9), "tokenizer.json": tok(VOCAB)},
         "health.tokenizer", Severity.BREAKING, "pad_token_id 9 in config.json is not in the"),
    Case("added_tokens_beyond_vocab_size", TOKENIZER,
         {**TOKENIZER, "tokenizer.json": tok(VOCAB, (("<think>", 8), ("</think>", 9)))},
         "health.tokenizer", Severity.BREAKING, "2 added token(s) beyond vocab_size 8"),
    Case("added_tokens_json_beyond_vocab_size", TOKENIZER,
         {**TOKENIZER, "added_tokens.json": {"<x>": 8}}, "health.tokenizer", Severity.BREAKING,
         "1 added token(s) beyond vocab_size 8"),
    Case("vocab_size_grown_to_fit_is_consistent_again",
         {**TOKENIZER, "tokenizer.json": tok(VOCAB, (("<think>", 8),))},
         {"config.json": cfg(eos_token_id=2, vocab_size=9),
          "tokenizer.json": tok(VOCAB, (("<think>", 8),))},
         "health.tokenizer", Severity.INFO, "now consistent with config"),
    Case("first_revision_with_eos_outside_is_judged", None,
         {"config.json": cfg(eos_token_id=100), "model.safetensors": Weights()},
         "health.tokenizer", Severity.BREAKING,
         "eos_token_id 100"),
    Case("unset_pad_of_minus_one_is_fine", None,
         {"config.json": cfg(pad_token_id=-1), "model.safetensors": Weights()}, None),
    Case("tekken_beyond_params_vocab", {"params.json": {"vocab_size": 8}},
         {"params.json": {"vocab_size": 8}, "tekken.json": {"config": {"default_vocab_size": 9}}},
         "health.tokenizer", Severity.BREAKING, "default_vocab_size 9 is beyond vocab_size 8"),
    # -- card ------------------------------------------------------------------------------
    Case("card_base_model_against_name_or_path", {"config.json": cfg()},
         {"config.json": cfg(_name_or_path="org/other"), "README.md": "---\n---\n"},
         "health.card", Severity.INFO, "base_model org/base, config.json _name_or_path org/other",
         new_card={"base_model": "org/base"}),
    Case("card_base_model_matching_is_fine", {"config.json": cfg()},
         {"config.json": cfg(_name_or_path="org/base"), "README.md": "---\n---\n"}, None,
         new_card={"base_model": ["org/base"]}),
    Case("local_name_or_path_is_not_judged", {"config.json": cfg()},
         {"config.json": cfg(_name_or_path="/scratch/ckpt"), "README.md": "---\n---\n"}, None,
         new_card={"base_model": "org/base"}),
    Case("card_pipeline_against_architecture", {"config.json": cfg()},
         {"config.json": cfg(), "README.md": "---\n---\n"}, "health.card", Severity.INFO,
         "pipeline_tag fill-mask, config.json architecture LlamaForCausalLM",
         new_card={"pipeline_tag": "fill-mask"}),
]  # fmt: skip


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
def test_health(case: Case) -> None:
    old = RevisionView.empty() if case.old is None else view(case.old)
    changes = diff_health(old, view(case.new, case.new_card))
    if case.kind is None:
        assert changes == []
        return
    assert [c.kind for c in changes] == [case.kind], changes
    change = changes[0]
    assert change.severity == case.severity
    assert case.says in change.summary + (change.detail or "")
    assert len(change.summary) <= 160
    assert change.before["healthy"] is not change.after["healthy"]


def test_unchanged_inputs_are_not_judged_again() -> None:
    """Two unhealthy revisions that differ elsewhere report nothing (no flip, no re-read)."""
    old = view({**ONE_OF_THREE, "README.md": "a"})
    new = view({**ONE_OF_THREE, "README.md": "b"})
    assert diff_health(old, new) == []


def test_all_problems_in_detail_and_before_after() -> None:
    broken = {**ONE_OF_THREE, "config.json": cfg(eos_token_id=99)}
    changes = {c.kind: c for c in diff_health(RevisionView.empty(), view(broken))}
    weights = changes["health.weights"]
    assert SHARDS[1] in (weights.detail or "") and SHARDS[2] in (weights.detail or "")
    assert weights.before == {"healthy": True, "problems": []}
    assert weights.after["healthy"] is False
    assert "health.tokenizer" in changes


def test_health_is_a_registered_differ() -> None:
    assert DIFFERS["health"] is diff_health


# -- tokenizer.json judged once per content (health_tokens.TOKENIZERS) -------------------------


def stored(files: dict[str, Any], blobs: dict[str, bytes], memo: Memo) -> RevisionView:
    """`files` as a stored revision reads them: contents by sha256, loaded from `blobs`."""
    fresh = view(files)  # contents only: every file has bytes
    rows = []
    for path, entry in fresh.files.items():
        data = fresh.raw(path) or b""
        sha = ContentSha(hashlib.sha256(data).hexdigest())
        blobs.setdefault(sha, data)
        rows.append(
            StoredFile(
                path,
                entry.size,
                entry.blob_id,
                None,
                sha,
                ReadStatus.STORED,
                None,
                None,
                None,
                None,
            )
        )

    def load(sha: ContentSha) -> bytes:
        return blobs[sha]  # a KeyError: a blob missing from the store

    return RevisionView.of_stored(rows, None, load, memo=memo)


SMALL = {f"t{i}": i for i in range(4)}
"""Fewer tokens than vocab_size (8): eos_token_id 6 is not in it."""


def test_a_stored_tokenizer_is_judged_as_the_same_bytes_read_afresh() -> None:
    memo = Memo()
    files = {"config.json": cfg(eos_token_id=6), "tokenizer.json": tok(SMALL)}
    afresh = tokenizer_problems(view(files, memo=memo))
    assert afresh and "not in the tokenizer's vocabulary" in afresh[0]
    assert tokenizer_problems(stored(files, {}, memo)) == afresh  # judged by the store's sha
    assert tokenizer_problems(stored(files, {}, Memo())) == afresh  # and from cold


def test_a_changed_tokenizer_is_judged_again() -> None:
    memo = Memo()
    config = cfg(eos_token_id=6)
    before = view({"config.json": config, "tokenizer.json": tok(VOCAB)}, memo=memo)
    assert tokenizer_problems(before) == []
    after = view({"config.json": config, "tokenizer.json": tok(SMALL)}, memo=memo)
    problems = tokenizer_problems(after)
    assert problems == [
        "eos_token_id 6 in config.json is not in the tokenizer's vocabulary (4 tokens)"
    ]


def test_a_tokenizer_missing_from_the_store_is_not_judged_by_its_sha() -> None:
    """A blob the store lost reads as no tokenizer.json, even once those bytes were judged."""
    memo = Memo()
    files = {"config.json": cfg(eos_token_id=6), "tokenizer.json": tok(SMALL)}
    assert tokenizer_problems(view(files, memo=memo))  # judged and kept in the memo
    blobs: dict[str, bytes] = {}
    lost = stored(files, blobs, memo)
    blobs.pop(hashlib.sha256(view(files).raw("tokenizer.json") or b"").hexdigest())
    assert tokenizer_problems(lost) == []


def test_a_vocabulary_with_a_value_that_is_not_an_id_keeps_only_the_ids() -> None:
    odd = {"t0": 0, "t1": True, "t2": 2.0, "t3": 3}  # JSON true and 2.0 are not token ids
    config = cfg(eos_token_id=1, bos_token_id=3)
    problems = tokenizer_problems(view({"config.json": config, "tokenizer.json": tok(odd)}))
    assert problems == [
        "eos_token_id 1 in config.json is not in the tokenizer's vocabulary (2 tokens)"
    ]
