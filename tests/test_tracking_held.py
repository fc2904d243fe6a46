"""A backfill diffs each revision against its parent held in memory, not read back: the same
changes, and the same known reads, as the stored revisions give."""

from __future__ import annotations

import json
from pathlib import Path

from hubwatch.models import RepoRef, SourceKind
from hubwatch.store.sql import SqlStore
from hubwatch.tracker.compare import diff_stored
from tests.support.gitrepo import CommitSpec, make_repo, safetensors_bytes
from tests.test_tracking_git import make_tracker

CONFIG = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 64,
          "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 128,
          "intermediate_size": 128, "max_position_embeddings": 2048}  # fmt: skip
SHARDS = {f"model-0000{i}-of-00002.safetensors": i for i in (1, 2)}
INDEX = {"weight_map": {f"w{i}": name for name, i in SHARDS.items()}}


def card(license_: str, body: str = "A model.") -> bytes:
    return f"---\nlicense: {license_}\n---\n\n# model\n\n{body}\n".encode()


INDEX_PATH = "model.safetensors.index.json"


def shard(i: int) -> bytes:
    return safetensors_bytes({f"w{i}": ("F16", [4, 4])})


def history() -> list[CommitSpec]:
    template = {"chat_template": "{% for m in messages %}{{ m.content }}{% endfor %}"}
    first = {
        "config.json": json.dumps(CONFIG).encode(),
        "tokenizer_config.json": json.dumps(template).encode(),
        "README.md": card("mit"),
        "model.safetensors.index.json": json.dumps(INDEX).encode(),
        "model-00001-of-00002.safetensors": shard(1),  # the second shard comes later
    }
    return [
        CommitSpec(first),
        CommitSpec({"README.md": card("apache-2.0")}),
        CommitSpec({"model-00002-of-00002.safetensors": shard(2)}),
        CommitSpec({"config.json": json.dumps({**CONFIG, "hidden_size": 128}).encode()}),
        CommitSpec({"tokenizer_config.json": b"{not json"}),
        CommitSpec({"notes.md": b"# notes\n", "README.md": card("apache-2.0", "Better.")}),
        CommitSpec({"tokenizer_config.json": json.dumps(template).encode()}),
    ]


def test_a_backfill_stores_what_diffing_the_stored_revisions_gives(
    store: SqlStore, tmp_path: Path
) -> None:
    make_repo(tmp_path / "up", history(), lfs_patterns=())
    tracker = make_tracker(store, tmp_path)
    result = tracker.track(RepoRef("org/m", SourceKind.GIT, str(tmp_path / "up")))
    assert result.error is None and len(result.new) == 7
    stored = store.changes("org/m")
    by_sha = {entry.revision.sha: entry for entry in stored}
    kinds = []
    for sha in result.new[1:-1]:
        entry = by_sha.get(sha)
        held = [c for c in entry.changes if c.kind != "revision.partial"] if entry else []
        base = store.revision("org/m", sha).parents[0]
        assert held == diff_stored(store, "org/m", base, sha), sha  # the parent read back
        kinds.append(sorted({change.kind for change in held}))
    # the tokenizer config mended is compared with where it was last read (the same bytes),
    # not with the parent that could not read it (issue 29): no template said to appear
    mended = result.new[-1]
    assert mended not in by_sha
    since = diff_stored(store, "org/m", result.new[3], mended)  # before it was broken
    assert not [c for c in since if c.path == "tokenizer_config.json"]
    assert "card.license" in kinds[0]
    assert "health.weights" in kinds[1]  # the second shard arrived: no longer missing
    assert "config.dimensions" in kinds[2]
    assert "card.text" in kinds[4]


def test_reads_answered_from_the_held_revision_are_the_ones_the_store_records(
    store: SqlStore, tmp_path: Path
) -> None:
    make_repo(tmp_path / "up", history(), lfs_patterns=())
    tracker = make_tracker(store, tmp_path)
    shas = tracker.track(RepoRef("org/m", SourceKind.GIT, str(tmp_path / "up"))).new
    files = [{f.path: f for f in store.files("org/m", sha)} for sha in shas]
    # unchanged files keep the read recorded when their bytes were first read
    for path in ("config.json", "model.safetensors.index.json", "tokenizer_config.json"):
        assert files[1][path] == files[0][path]
    assert files[2]["README.md"] == files[1]["README.md"]
    assert (
        files[2]["model-00001-of-00002.safetensors"] == files[0]["model-00001-of-00002.safetensors"]
    )
    # the tokenizer config put back reuses the first read of the same bytes
    assert files[6]["tokenizer_config.json"] == files[0]["tokenizer_config.json"]
    assert files[4]["tokenizer_config.json"].content_status.value == "invalid"


def test_an_index_marked_for_missing_shards_is_valid_once_they_arrive(
    store: SqlStore, tmp_path: Path
) -> None:
    make_repo(tmp_path / "up", history(), lfs_patterns=())
    tracker = make_tracker(store, tmp_path)
    shas = tracker.track(RepoRef("org/m", SourceKind.GIT, str(tmp_path / "up"))).new
    index = [{f.path: f for f in store.files("org/m", sha)}[INDEX_PATH] for sha in shas]
    assert [f.content_status.value for f in index[:3]] == ["invalid", "invalid", "stored"]
    assert "model-00002-of-00002.safetensors" in (index[1].content_error or "")
    assert index[2].content_error is None and index[2].blob_id == index[0].blob_id
    assert {f.content_status.value for f in index[3:]} == {"stored"}
