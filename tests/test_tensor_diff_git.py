"""Which tensors a re-upload changed, where a git mirror holds the weight files themselves: both
blobs read whole and compared tensor by tensor (exact), within HUBWATCH_MAX_COMPARE_BYTES. A
small git repo made in tmp_path, tracked by the real Tracker and GitSource."""

from __future__ import annotations

import json
import random
import struct
from collections.abc import Mapping
from pathlib import Path

from hubwatch.models import Change, RepoRef, SourceKind
from hubwatch.sources.git import GitSource
from hubwatch.sources.retry import RetryPolicy
from hubwatch.store.sql import SqlStore
from hubwatch.tracker.compare import diff_stored
from hubwatch.tracker.poll import Tracker
from hubwatch.tracker.reads import Limits
from tests.support.gguf_files import TensorSpec, gguf_file
from tests.support.gitrepo import CommitSpec, make_repo

NAMES = ["embed.weight", "layers.0.weight", "layers.1.weight", "norm.weight", "head.weight"]
SIZES = {"norm.weight": 16}  # a small tensor beside changed ones: told exactly all the same


def safetensors(seed: int, changed: set[str]) -> bytes:
    """F32 tensors: those in `changed` drawn from `seed`, the others from 0."""
    header: dict[str, object] = {}
    data, offset = b"", 0
    for name in NAMES:
        count = SIZES.get(name, 4096)
        raw = random.Random(f"{seed if name in changed else 0}:{name}").randbytes(4 * count)
        header[name] = {
            "dtype": "F32",
            "shape": [count],
            "data_offsets": [offset, offset + 4 * count],
        }
        data, offset = data + raw, offset + 4 * count
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + data


def gguf(seed: int, changed: set[str]) -> bytes:
    """Q8_0 tensors (34 bytes per 32 values), drawn as `safetensors` draws them."""
    specs = []
    for name in NAMES:
        size = TensorSpec(name, (256, 4), "Q8_0").nbytes
        data = random.Random(f"{seed if name in changed else 0}:{name}").randbytes(size)
        specs.append(TensorSpec(name, (256, 4), "Q8_0", data=data))
    return gguf_file("llama", {"general.name": "tiny"}, specs)


def track(
    tmp_path: Path,
    files: list[Mapping[str, bytes]],
    limits: Limits | None = None,
) -> list[Change]:
    """Track the commits of `files` (weights kept in git, not LFS); the last one's re-uploads."""
    upstream = tmp_path / "up"
    commits = [CommitSpec(dict(f), f"upload {i}") for i, f in enumerate(files)]
    make_repo(upstream, commits, lfs_patterns=())
    store = SqlStore(f"sqlite:///{tmp_path / 'hubwatch.db'}")
    store.start()
    source = GitSource(tmp_path / "mirrors", timeout_s=60)
    retry = RetryPolicy(attempts=2, sleep=lambda _s: None)
    tracker = Tracker(store, {SourceKind.GIT: source}, limits or Limits(), retry)
    result = tracker.track(RepoRef("org/m", SourceKind.GIT, str(upstream)))
    assert result.error is None and len(result.new) == len(files)
    changes = store.revision_changes("org/m", result.new[-1]).changes
    source.close()
    store.close()
    return [c for c in changes if c.kind.endswith("reuploaded")]


def test_git_blobs_tell_exactly_which_tensors_changed(tmp_path: Path) -> None:
    changed = {"layers.1.weight", "norm.weight"}
    (change,) = track(
        tmp_path,
        [
            {"model.safetensors": safetensors(0, set())},
            {"model.safetensors": safetensors(1, changed)},
        ],
    )
    assert (change.kind, change.severity.value) == ("weights.reuploaded", "behavior")
    told = change.after["tensor_diff"]
    assert told["changed"] == ["layers.1.weight", "norm.weight"]
    assert told["possibly_changed"] == [] and told["identical"] == 3 and told["tensors"] == 5
    assert told["new_bytes"] == 4 * (4096 + 16)
    assert change.summary.startswith("model.safetensors: layers.1.weight and norm.weight changed")
    assert "tensor-level diff unavailable" not in (change.detail or "")


def test_git_blobs_of_a_gguf_tell_its_tensors(tmp_path: Path) -> None:
    (change,) = track(
        tmp_path, [{"m-Q8_0.gguf": gguf(0, set())}, {"m-Q8_0.gguf": gguf(2, set(NAMES))}]
    )
    assert (change.kind, change.severity.value) == ("gguf.reuploaded", "breaking")
    assert change.after["tensor_diff"]["changed"] == NAMES


def test_git_blobs_over_the_limit_are_too_large_to_compare_once(tmp_path: Path) -> None:
    shards = ["a.safetensors", "b.safetensors"]
    (change,) = track(
        tmp_path,
        [
            {p: safetensors(0, set()) for p in shards},
            {p: safetensors(3, {"embed.weight"}) for p in shards},
        ],
        Limits(max_compare_bytes=1024),
    )
    assert "tensor_diff" not in change.after
    lines = [line for line in (change.detail or "").splitlines() if "unavailable" in line]
    assert lines == [
        "tensor-level diff unavailable: a.safetensors, b.safetensors: too large to compare "
        "(over 1,024 bytes, HUBWATCH_MAX_COMPARE_BYTES)"
    ]


def test_a_comparison_of_stored_git_revisions_says_why_it_has_no_tensor_diff(
    tmp_path: Path,
) -> None:
    files = [{"model.safetensors": safetensors(i, {"head.weight"})} for i in range(3)]
    track(tmp_path, files)
    store = SqlStore(f"sqlite:///{tmp_path / 'hubwatch.db'}")
    store.start()
    first, _, third = sorted((r.date, r.sha) for r in store.history("org/m"))
    found = diff_stored(store, "org/m", first[1], third[1])
    (change,) = [c for c in found if "reuploaded" in c.kind]
    store.close()
    assert "tensor_diff" not in change.after
    assert "model.safetensors: its git blobs are compared only as a revision is polled" in (
        change.detail or ""
    )
