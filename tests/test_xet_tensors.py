"""Which tensors a re-upload changed, told from Xet reconstructions alone: safetensors files that
differ in chosen tensors, committed as LFS files, served by the Hub simulator with Xet on (its
chunks cut by the documented CDC) and tracked by the real Tracker and HubSource. No weight byte
past a header is requested: the simulator's CDN log says so."""

from __future__ import annotations

import json
import random
import re
import struct
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from hubwatch.models import Change
from tests.support.hubsim import HubSimulator
from tests.support.xet_reuploads import reupload_changes, reupload_repos, xet_hub

EMBED, HEAD = "model.embed_tokens.weight", "lm_head.weight"
LAYERS = [f"model.layers.{i}.mlp.weight" for i in range(10)]
ORDER = [EMBED, *LAYERS, HEAD]
# NOTE: tensors of more than three chunks' length (3 x 128 KiB): the diff tells a smaller one
# changed beside a changed one only as "possibly changed" (docs/tensor-diff.md)
SHAPES = {EMBED: [512, 512], HEAD: [512, 512], **dict.fromkeys(LAYERS, [512, 256])}
FILE = "model.safetensors"


def tensors(seed: int, names: set[str] | None = None) -> dict[str, bytes]:
    """Random F32 data per tensor; `names` (None: all) get data drawn from `seed`, the others
    from seed 0, so two calls share exactly the tensors not named."""
    out = {}
    for name in ORDER:
        picked = names is None or name in names
        rng = random.Random(f"{seed if picked else 0}:{name}")
        out[name] = rng.randbytes(4 * SHAPES[name][0] * SHAPES[name][1])
    return out


def safetensors(data: Mapping[str, bytes], shapes: Mapping[str, list[int]] = SHAPES) -> bytes:
    header: dict[str, object] = {"__metadata__": {"format": "pt"}}
    offset = 0
    for name in ORDER:
        end = offset + len(data[name])
        header[name] = {"dtype": "F32", "shape": shapes[name], "data_offsets": [offset, end]}
        offset = end
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)
    return struct.pack("<Q", len(raw)) + raw + b"".join(data[n] for n in ORDER)


BASE = safetensors(tensors(0))
HEADER_END = 8 + struct.unpack("<Q", BASE[:8])[0]
VARIANTS = {
    "one-tensor": safetensors(tensors(1, {LAYERS[4]})),
    "embed-and-head": safetensors(tensors(2, {EMBED, HEAD})),
    "every-tensor": safetensors(tensors(3)),
    "identical": BASE,
    "shape": safetensors(tensors(0), {**SHAPES, HEAD: [256, 1024]}),
}


@pytest.fixture(scope="module")
def repos(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Path]]:
    root = tmp_path_factory.mktemp("xet")
    return reupload_repos(root, FILE, BASE, VARIANTS, {"config.json": b"{}"})


@pytest.fixture
def hub(repos: tuple[Path, dict[str, Path]]) -> Iterator[HubSimulator]:
    with xet_hub(repos) as sim:
        yield sim


def track(hub: HubSimulator, tmp_path: Path, name: str) -> list[Change]:
    return reupload_changes(hub, tmp_path, name, ("weights.",))


def weight_bytes_requested(hub: HubSimulator) -> list[str]:
    """Ranges asked of the CDN (the weights' host) that reach past the header."""
    far = []
    for record in hub.requests:
        if record.route != "cdn":
            continue
        found = re.fullmatch(r"bytes=(\d+)-(\d+)", record.range or "")
        if found is None or int(found[2]) >= HEADER_END:
            far.append(record.range or "the whole file")
    return far


@pytest.mark.parametrize(
    ("name", "changed", "severity"),
    [
        ("one-tensor", [LAYERS[4]], "behavior"),
        ("embed-and-head", [EMBED, HEAD], "behavior"),
        ("every-tensor", ORDER, "breaking"),
    ],
)
def test_the_reupload_names_the_tensors_that_changed(
    hub: HubSimulator, tmp_path: Path, name: str, changed: list[str], severity: str
) -> None:
    (change,) = track(hub, tmp_path, name)
    assert change.kind == "weights.reuploaded"
    assert change.severity.value == severity
    told = change.after["tensor_diff"]
    assert told["changed"] == changed
    near = {i + d for i, n in enumerate(ORDER) if n in changed for d in (-1, 1)}
    neighbours = {ORDER[i] for i in near if 0 <= i < len(ORDER)}
    assert set(told["possibly_changed"]) <= neighbours - set(changed)
    assert told["identical"] == len(ORDER) - len(changed) - len(told["possibly_changed"])
    assert changed[0] in change.summary or f"all {len(ORDER)} tensors changed" in change.summary
    assert weight_bytes_requested(hub) == []
    # two reconstructions (before and after), each asked for once
    assert sorted(hub.xet.served.values()) == [1, 1]


def test_embed_and_head_summary_says_what_the_issue_asks() -> None:
    from hubwatch.diff.tensors import TensorDiff, tensor_summary

    found = TensorDiff([EMBED, HEAD], [], 290, 292, 4, 1000, identical_upload=False)
    assert tensor_summary([FILE], found) == (
        f"{FILE}: {EMBED} and {HEAD} changed (0.4% of bytes new); "
        "290 of 292 tensors byte-identical."
    )


def test_a_byte_identical_reupload_costs_nothing_and_says_nothing(
    hub: HubSimulator, tmp_path: Path
) -> None:
    assert track(hub, tmp_path, "identical") == []
    assert hub.stats.count("cas") == 0 and weight_bytes_requested(hub) == []


def test_a_shape_change_is_the_headers_to_tell(hub: HubSimulator, tmp_path: Path) -> None:
    (change,) = track(hub, tmp_path, "shape")
    assert change.kind == "weights.shape" and change.severity.value == "breaking"
    assert change.after == {HEAD: [256, 1024]}
    assert weight_bytes_requested(hub) == []


def test_without_xet_the_tensor_diff_says_why_not(hub: HubSimulator, tmp_path: Path) -> None:
    hub.xet.enabled = False  # plain LFS: the listing names no xetHash
    (change,) = track(hub, tmp_path, "one-tensor")
    assert change.kind == "weights.reuploaded" and change.severity.value == "behavior"
    assert "tensor_diff" not in change.after
    assert "tensor-level diff unavailable: model.safetensors: not stored in Xet" in (
        change.detail or ""
    )
    assert hub.stats.count("cas") == 0 and weight_bytes_requested(hub) == []


def test_a_token_given_in_headers_only_serves_as_well(hub: HubSimulator, tmp_path: Path) -> None:
    # NOTE: huggingface_hub reads the token from X-Xet-* headers; auth.md documents the JSON body
    hub.xet.token_headers_only = True
    (change,) = track(hub, tmp_path, "one-tensor")
    assert change.after["tensor_diff"]["changed"] == [LAYERS[4]]
