"""Which tensors a GGUF re-upload changed, told from Xet reconstructions through the tensor-info
offsets: GGUF files written by llama.cpp's own writer that differ in chosen tensors, committed as
LFS files, served by the Hub simulator with Xet on and tracked by the real Tracker and HubSource.
No byte past the header's first read is requested."""

from __future__ import annotations

import random
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from hubwatch.models import Change
from tests.support.gguf_files import TensorSpec, gguf_file
from tests.support.hubsim import HubSimulator
from tests.support.xet_reuploads import reupload_changes, reupload_repos, xet_hub

FILE = "model-Q8_0.gguf"
EMBED, OUTPUT = "token_embd.weight", "output.weight"
BLOCKS = [f"blk.{i}.ffn_up.weight" for i in range(6)]
ORDER = [EMBED, *BLOCKS, OUTPUT]
# NOTE: each tensor longer than three chunks (3 x 128 KiB), as in test_xet_tensors.py; Q8_0
# (34 bytes per 32 values) and F32 side by side, so each tensor's length is its type's
SHAPES = {EMBED: ((1024, 512), "Q8_0"), OUTPUT: ((512, 512), "F32"), **dict.fromkeys(
    BLOCKS, ((1024, 512), "Q8_0")
)}  # fmt: skip
FIRST_READ = 64 * 1024
"""tracker/headers.py reads a GGUF header 64 KiB at a time: its first read ends past the
header, never further."""


def _spec(name: str, seed: int) -> TensorSpec:
    shape, kind = SHAPES[name]
    spec = TensorSpec(name, shape, kind)
    data = random.Random(f"{seed}:{name}").randbytes(spec.nbytes)
    return TensorSpec(name, shape, kind, data=data)


def model(seed: int, names: set[str] | None = None) -> bytes:
    """A GGUF file: the tensors in `names` (None: all) drawn from `seed`, the rest from 0."""
    specs = [_spec(n, seed if names is None or n in names else 0) for n in ORDER]
    return gguf_file("llama", {"general.name": "tiny"}, specs)


BASE = model(0)
VARIANTS = {
    "one-tensor": model(1, {BLOCKS[2]}),
    "every-tensor": model(2),
    "identical": BASE,
}


@pytest.fixture(scope="module")
def repos(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Path]]:
    root = tmp_path_factory.mktemp("xet-gguf")
    return reupload_repos(root, FILE, BASE, VARIANTS, {"README.md": b"# tiny\n"})


@pytest.fixture
def hub(repos: tuple[Path, dict[str, Path]]) -> Iterator[HubSimulator]:
    with xet_hub(repos) as sim:
        yield sim


def track(hub: HubSimulator, tmp_path: Path, name: str) -> list[Change]:
    return reupload_changes(hub, tmp_path, name, ("weights.", "gguf."))


def far_reads(hub: HubSimulator) -> list[str]:
    """Ranges asked of the CDN (the weights' host) that reach past a header's first read."""
    far = []
    for record in hub.requests:
        found = re.fullmatch(r"bytes=(\d+)-(\d+)", record.range or "")
        if record.route == "cdn" and (found is None or int(found[2]) >= FIRST_READ):
            far.append(record.range or "the whole file")
    return far


def test_one_changed_gguf_tensor_is_named(hub: HubSimulator, tmp_path: Path) -> None:
    (change,) = track(hub, tmp_path, "one-tensor")
    assert (change.kind, change.severity.value) == ("gguf.reuploaded", "behavior")
    told = change.after["tensor_diff"]
    assert told["changed"] == [BLOCKS[2]]
    # chunks are cut by content: a neighbour may share the edge chunk of the change, never more
    assert set(told["possibly_changed"]) <= {BLOCKS[1], BLOCKS[3]}
    assert told["identical"] == len(ORDER) - 1 - len(told["possibly_changed"])
    assert told["tensors"] == len(ORDER) and told["bytes"] == len(BASE)
    assert change.summary.startswith(f"{FILE}: {BLOCKS[2]} changed (")
    assert f"changed: {BLOCKS[2]}" in (change.detail or "")
    assert far_reads(hub) == []
    assert sorted(hub.xet.served.values()) == [1, 1]


def test_every_gguf_tensor_changed_is_breaking(hub: HubSimulator, tmp_path: Path) -> None:
    (change,) = track(hub, tmp_path, "every-tensor")
    assert (change.kind, change.severity.value) == ("gguf.reuploaded", "breaking")
    told = change.after["tensor_diff"]
    assert told["changed"] == ORDER and told["possibly_changed"] == []
    assert f"{FILE}: all {len(ORDER)} tensors changed" in change.summary
    assert far_reads(hub) == []


def test_a_byte_identical_gguf_says_nothing_and_asks_nothing(
    hub: HubSimulator, tmp_path: Path
) -> None:
    assert track(hub, tmp_path, "identical") == []
    assert hub.stats.count("cas") == 0 and far_reads(hub) == []


def test_without_xet_a_gguf_reupload_says_why_once(hub: HubSimulator, tmp_path: Path) -> None:
    hub.xet.enabled = False
    (change,) = track(hub, tmp_path, "one-tensor")
    assert (change.kind, change.severity.value) == ("gguf.reuploaded", "info")
    assert "tensor_diff" not in change.after
    assert (change.detail or "").count("tensor-level diff unavailable") == 1
    assert hub.stats.count("cas") == 0 and far_reads(hub) == []
