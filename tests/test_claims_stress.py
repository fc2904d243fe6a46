"""Claims under stress (issue 29): a file back after a gap compared with where it was last read,
an unreadable file never said to be unset, headers whose sizes contradict the file refused, a
tree entry with '/' in its name refused."""

from __future__ import annotations

import json
from pathlib import Path

from hubwatch.formats.gguf import layout_problem
from hubwatch.formats.safetensors import check_header
from hubwatch.models import Change, ReadStatus, RepoRef, SourceKind
from hubwatch.models.gguf import GGUFHeader, GGUFTensor
from hubwatch.sources.git import GitSource
from hubwatch.sources.retry import RetryPolicy
from hubwatch.store.sql import SqlStore
from hubwatch.tracker.poll import Tracker
from tests.support.gitrepo import CommitSpec, make_repo
from tests.support.hostile import commit, files_at, obj, tip, tree

SMALL = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 64,
         "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
         "num_key_value_heads": 4, "vocab_size": 1000}  # fmt: skip
WIDE = {**SMALL, "hidden_size": 512, "intermediate_size": 2048, "num_hidden_layers": 8}


def tracked(store: SqlStore, tmp_path: Path, repo: Path) -> list[list[Change]]:
    """Each revision's changes, oldest first, once `repo` is tracked from git."""
    source = GitSource(tmp_path / "mirrors", timeout_s=60)
    retry = RetryPolicy(attempts=2, sleep=lambda _s: None)
    Tracker(store, {SourceKind.GIT: source}, retry=retry).track(
        RepoRef("org/stress", SourceKind.GIT, str(repo))
    )
    by_sha = {rc.revision.sha: rc.changes for rc in store.changes("org/stress")}
    return [list(by_sha.get(r.sha, ())) for r in store.history("org/stress")]


def kinds(changes: list[Change]) -> set[str]:
    return {c.kind for c in changes}


def test_a_config_deleted_and_added_back_wider_is_compared_with_where_it_was_read(
    store: SqlStore, tmp_path: Path
) -> None:
    make_repo(
        tmp_path / "up",
        [
            CommitSpec({"config.json": json.dumps(SMALL).encode(), "README.md": b"# m\n"}),
            CommitSpec({"config.json": None}, message="Remove the config"),
            CommitSpec({"config.json": json.dumps(WIDE).encode()}, message="Add it back wider"),
        ],
    )
    back = tracked(store, tmp_path, tmp_path / "up")[2]
    dimensions = next(c for c in back if c.kind == "config.dimensions")
    assert "hidden_size 64 → 512" in dimensions.summary and "last read" in dimensions.summary
    assert "estimate.parameters" in kinds(back)
    assert not [c for c in back if "unset →" in c.summary]  # not against nothing


def test_an_unreadable_config_is_not_said_to_be_unset_and_its_return_is_compared(
    store: SqlStore, tmp_path: Path
) -> None:
    make_repo(
        tmp_path / "up",
        [
            CommitSpec({"config.json": json.dumps(SMALL).encode(), "README.md": b"# m\n"}),
            CommitSpec({"config.json": b'{"model_type": "llama",'}, message="Break it"),
            CommitSpec({"config.json": json.dumps(WIDE).encode()}, message="Mend it wider"),
        ],
    )
    _, broken, mended = tracked(store, tmp_path, tmp_path / "up")
    assert "config.unread" in kinds(broken)
    assert not [c for c in broken if c.kind.startswith("config.") and c.kind != "config.unread"]
    assert not [c for c in broken + mended if "→ unset" in c.summary or "unset →" in c.summary]
    dimensions = next(c for c in mended if c.kind == "config.dimensions")
    assert "hidden_size 64 → 512" in dimensions.summary


def test_a_tree_entry_whose_name_holds_a_slash_is_refused(store: SqlStore, tmp_path: Path) -> None:
    repo = tmp_path / "up.git"
    make_repo(repo, [CommitSpec({"README.md": b"# m\n"})], bare=True, lfs_patterns=())
    files = files_at(repo)
    entries = [(mode, path, oid) for path, (mode, oid) in files.items()]
    bad = ("100644", b"sub/config.json", obj(repo, "blob", json.dumps(SMALL).encode()))
    commit(repo, tree(repo, [*entries, bad]), [tip(repo)], b"A name with a slash\n")
    tracked(store, tmp_path, repo)
    head = store.history("org/stress")[-1].sha
    by_path = {f.path: f for f in store.files("org/stress", head)}
    entry = by_path["sub/config.json"]
    assert entry.content_status is ReadStatus.INVALID
    assert "a tree entry's name holds '/'" in (entry.content_error or "")


def test_a_safetensors_shape_its_offsets_cannot_hold_is_invalid() -> None:
    lie = {"w": {"dtype": "F16", "shape": [100000, 100000], "data_offsets": [0, 32]}}
    status, _, reason = check_header("m.safetensors", json.dumps(lie).encode(), 32)
    assert status is ReadStatus.INVALID
    assert "needs 20000000000 bytes, but its data_offsets hold 32" in (reason or "")


def test_safetensors_tensors_sharing_bytes_are_invalid() -> None:
    both = {
        "a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]},
        "b": {"dtype": "F32", "shape": [4], "data_offsets": [8, 24]},
    }
    status, _, reason = check_header("m.safetensors", json.dumps(both).encode(), 24)
    assert status is ReadStatus.INVALID and "share bytes" in (reason or "")


def test_an_honest_safetensors_header_is_stored() -> None:
    fine = {"a": {"dtype": "BF16", "shape": [2, 4], "data_offsets": [0, 16]}}
    assert check_header("m.safetensors", json.dumps(fine).encode(), 16)[0] is ReadStatus.STORED


def gguf(*tensors: GGUFTensor) -> GGUFHeader:
    return GGUFHeader(3, 32, 4096, {"general.architecture": "llama"}, tensors)


def test_gguf_tensors_sharing_bytes_are_invalid() -> None:
    a = GGUFTensor("a", (64,), "F32", 0, 64, 256)
    b = GGUFTensor("b", (64,), "F32", 128, 64, 256)
    assert "share bytes" in (layout_problem(gguf(a, b), 10_000) or "")


def test_a_gguf_tensor_off_the_alignment_is_invalid() -> None:
    a = GGUFTensor("a", (8,), "F32", 4, 8, 32)
    assert "alignment" in (layout_problem(gguf(a), 10_000) or "")


def test_gguf_data_past_the_end_of_the_file_is_invalid() -> None:
    a = GGUFTensor("a", (1 << 20,), "F32", 0, 1 << 20, 4 << 20)
    assert "would end at byte" in (layout_problem(gguf(a), 10_000) or "")
    assert layout_problem(gguf(GGUFTensor("a", (8,), "F32", 0, 8, 32)), 10_000) is None
