"""Honest claims (issue 27): architecture, health flips, merges, renames; and the severity misses
on standard models that the one policy table now decides."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hubwatch.diff import diff_revisions
from hubwatch.formats.view import RevisionView
from hubwatch.models import Change, Severity
from tests.support.gitrepo import CommitSpec, make_repo
from tests.support.revisions import BASE_CONFIG, Weights, view
from tests.support.truth import track_git

B, S, BEH, INFO = Severity.BREAKING, Severity.SECURITY, Severity.BEHAVIOR, Severity.INFO
W = {"model.safetensors": Weights({"w": ("F32", [4, 4])})}


def changes(old: dict[str, Any] | None, new: dict[str, Any]) -> dict[str, Change]:
    before = RevisionView.empty() if old is None else view(old)
    return {c.kind: c for c in diff_revisions(before, view(new))}


# -- architecture ------------------------------------------------------------------------------


def test_a_missing_model_type_filled_in_is_not_an_architecture_change() -> None:
    old = {"config.json": {"architectures": ["XForCausalLM"]}, **W}
    new = {"config.json": {"architectures": ["XForCausalLM"], "model_type": "x"}, **W}
    assert changes(old, new)["config.architecture"].severity is INFO


def test_another_model_type_is_still_breaking() -> None:
    old = {"config.json": {"architectures": ["X"], "model_type": "x"}, **W}
    new = {"config.json": {"architectures": ["X"], "model_type": "y"}, **W}
    assert changes(old, new)["config.architecture"].severity is B


# -- health flips only when the state they name holds ------------------------------------------

SHARDS = {f"pytorch_model-0000{n}-of-00002.bin": Weights(oid=str(n) * 64) for n in (1, 2)}
INDEX = {
    "pytorch_model.bin.index.json": {
        "metadata": {"total_size": 8},
        "weight_map": {
            "a": "pytorch_model-00001-of-00002.bin",
            "b": "pytorch_model-00002-of-00002.bin",
        },
    }
}


def test_a_config_without_weights_is_not_loadable() -> None:
    change = changes(None, {"config.json": BASE_CONFIG})["health.weights"]
    assert change.severity is B and "no weight file is present" in change.summary


def test_every_shard_present_without_an_index_is_not_loadable_yet() -> None:
    found = changes({"config.json": BASE_CONFIG}, {"config.json": BASE_CONFIG, **SHARDS})
    assert "health.weights" not in found  # still not loadable: no flip


def test_the_index_arriving_makes_them_loadable() -> None:
    old = {"config.json": BASE_CONFIG, **SHARDS}
    change = changes(old, {**old, **INDEX})["health.weights"]
    assert change.severity is INFO and change.summary.startswith("Weights now loadable")


def test_placeholder_shards_are_not_weights() -> None:
    symlinks = dict.fromkeys(SHARDS, "/mnt/checkpoints/shard.bin")
    found = changes(None, {"config.json": BASE_CONFIG, **INDEX, **symlinks})
    assert "placeholders" in found["health.weights"].summary
    assert "weights.pickle_added" not in found


def test_a_custom_tokenizers_vocabulary_file_gone_breaks_the_tokenizer() -> None:
    code = (
        "from transformers import PreTrainedTokenizer\n\n\nclass T(PreTrainedTokenizer):\n"
        "    vocab_files_names = {'vocab_file': 'ice.model'}\n"
    )
    files = {
        "config.json": BASE_CONFIG,
        **W,
        "tokenizer_config.json": {"auto_map": {"AutoTokenizer": ["tokenization_t.T", None]}},
        "tokenization_t.py": code,
        "ice.model": b"\x00sentencepiece",
    }
    gone = {k: v for k, v in files.items() if k != "ice.model"}
    change = changes(files, gone)["health.tokenizer"]
    assert change.severity is B and "ice.model is missing" in change.summary
    assert changes(gone, files)["health.tokenizer"].severity is INFO


# -- merges and renames ------------------------------------------------------------------------


def test_a_merge_reports_what_it_brings_against_its_first_parent(tmp_path: Path) -> None:
    make_repo(
        tmp_path / "up",
        [
            CommitSpec({"config.json": b'{"model_type": "x"}', "NOTES.md": b"a\n"}, message="up"),
            CommitSpec({"NOTES.md": b"side\n"}, message="side edit", branch="side"),
            CommitSpec({"config.json": b'{"model_type": "x", "note": 1}'}, message="main edit"),
            CommitSpec({"NOTES.md": b"side\n"}, message="merge", merge="side"),
        ],
    )
    reports = {r.title: r.reported for r in track_git(tmp_path / "up", "t/m", tmp_path / "w")}
    assert [(r.kind, r.path) for r in reports["merge"]] == [("text.changed", "NOTES.md")]


def test_a_renamed_file_is_one_change() -> None:
    old = {"config.json": BASE_CONFIG, **W, "docs/a.md": "notes\n", "helper.py": "X = 1\n"}
    new = {"config.json": BASE_CONFIG, **W, "docs/b.md": "notes\n", "util.py": "X = 1\n"}
    found = diff_revisions(view(old), view(new))
    assert [c.kind for c in found] == ["files.renamed"]
    assert found[0].after == ["docs/b.md", "util.py"]


def test_a_renamed_and_edited_module_is_one_code_change() -> None:
    body = "".join(f"def f{i}(x):\n    return x + {i}\n\n\n" for i in range(10))
    old = {"config.json": BASE_CONFIG, **W, "helper.py": body}
    new = {"config.json": BASE_CONFIG, **W, "util.py": body.replace("x + 3", "x * 3")}
    found = diff_revisions(view(old), view(new))
    assert sorted(c.kind for c in found) == ["code.custom_changed", "files.renamed"]
    code = next(c for c in found if c.kind == "code.custom_changed")
    assert "helper.py → util.py" in code.summary and "f3 changed" in code.summary


# -- the misses on standard models -------------------------------------------------------------


def tokenizer(
    old: dict[str, Any], new: dict[str, Any], path: str = "tokenizer_config.json"
) -> dict[str, Change]:
    base = {"config.json": BASE_CONFIG, **W}
    return changes({**base, path: old}, {**base, path: new})


def test_use_fast_set_or_removed_is_behavior() -> None:
    assert tokenizer({}, {"use_fast": False})["tokenizer.other"].severity is BEH
    assert tokenizer({"use_fast": False}, {})["tokenizer.other"].severity is BEH


def test_model_max_length_lifted_to_no_limit_is_behavior() -> None:
    lifted = tokenizer({"model_max_length": 131072}, {"model_max_length": int(1e30)})
    assert lifted["tokenizer.model_max_length"].severity is BEH
    moved = tokenizer({"model_max_length": 2048}, {"model_max_length": 4096})
    assert moved["tokenizer.model_max_length"].severity is INFO


def test_a_reformatted_special_tokens_map_with_the_same_tokens_changes_no_token() -> None:
    dicts = {"eos_token": {"content": "</s>", "lstrip": False, "normalized": False}}
    found = tokenizer({"eos_token": "</s>"}, dicts, "special_tokens_map.json")
    assert "tokenizer.special_tokens" not in found


def test_a_special_tokens_map_added_with_the_configs_tokens_changes_nothing() -> None:
    base = {"config.json": BASE_CONFIG, **W, "tokenizer_config.json": {"eos_token": "</s>"}}
    found = changes(base, {**base, "special_tokens_map.json": {"eos_token": "</s>"}})
    assert sorted(found) == ["files.added"]


def test_tokens_beyond_vocab_size_in_a_first_revision_are_flagged() -> None:
    decoder = {"8": {"content": "<x>", "special": True}}
    first = {
        "config.json": {**BASE_CONFIG, "vocab_size": 8},
        **W,
        "tokenizer_config.json": {"added_tokens_decoder": decoder},
    }
    assert changes(None, first)["health.tokenizer"].severity is B
