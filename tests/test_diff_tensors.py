"""The tensor diff's pure parts: new byte ranges from two term lists, tensors from ranges."""

from __future__ import annotations

import json
import struct

import pytest

from hubwatch.diff import apply_policy
from hubwatch.diff.tensors import MAX_CHUNK, TENSOR_DIFF, TensorDiff, classify, tensor_summary
from hubwatch.errors import UnsafeContent
from hubwatch.formats.xet import Reconstruction, Term, new_ranges, parse_reconstruction
from hubwatch.models import Change, Severity

K = 1024


def rec(*terms: tuple[str, int, int, int], offset: int = 0) -> Reconstruction:
    return Reconstruction(offset, tuple(Term(*t) for t in terms))


@pytest.mark.parametrize(
    ("old", "new", "ranges"),
    [
        pytest.param(rec(("a", 0, 4, 400)), rec(("a", 0, 4, 400)), [], id="same-terms"),
        pytest.param(rec(("a", 0, 4, 400)), rec(("b", 0, 4, 400)), [(0, 400)], id="all-new"),
        pytest.param(
            rec(("a", 0, 4, 400)),
            rec(("a", 0, 1, 100), ("b", 0, 1, 90), ("a", 2, 4, 200)),
            [(100, 190)],
            id="one-new-chunk-between-old-ones",
        ),
        pytest.param(
            rec(("a", 0, 2, 200)),
            rec(("a", 1, 3, 150)),
            [(0, 150)],
            id="a-term-with-one-unknown-chunk-counts-whole",
        ),
        pytest.param(
            rec(("a", 0, 2, 200)),
            rec(("b", 0, 1, 50), ("c", 0, 1, 50)),
            [(0, 100)],
            id="adjacent-new-terms-merge",
        ),
    ],
)
def test_new_ranges(
    old: Reconstruction, new: Reconstruction, ranges: list[tuple[int, int]]
) -> None:
    assert new_ranges(old, new) == ranges


def test_a_reconstruction_of_another_shape_is_refused() -> None:
    with pytest.raises(UnsafeContent):
        parse_reconstruction(json.dumps({"terms": [{"hash": "a", "range": {}}]}).encode())
    body = {"offset_into_first_range": 0, "terms": [], "xorbs": {}}
    assert parse_reconstruction(json.dumps(body).encode()) == Reconstruction(0, ())


SPANS = [("a", 0, 1024 * K), ("b", 1024 * K, 1030 * K), ("c", 1030 * K, 2048 * K)]


@pytest.mark.parametrize(
    ("ranges", "changed", "possibly"),
    [
        pytest.param([], [], [], id="nothing-new"),
        pytest.param([(100 * K, 600 * K)], ["a"], [], id="a-run-inside-one-tensor"),
        pytest.param([(0, 2048 * K)], ["a", "b", "c"], [], id="everything-new"),
        pytest.param(
            [(1000 * K, 1040 * K)], [], ["a", "b", "c"], id="a-small-run-across-three-is-a-guess"
        ),
        pytest.param([(900 * K, 1600 * K)], ["b", "c"], ["a"], id="the-run-start-is-only-possibly"),
    ],
)
def test_classify(ranges: list[tuple[int, int]], changed: list[str], possibly: list[str]) -> None:
    found = classify(SPANS, ranges)
    assert (found.changed, found.possibly) == (changed, possibly)
    assert found.identical == len(SPANS) - len(changed) - len(possibly)


def _reuploaded(found: TensorDiff) -> Change:
    after = {"m.safetensors": "x", TENSOR_DIFF: found.json()}
    summary = tensor_summary(["m.safetensors"], found)
    return Change("weights.reuploaded", Severity.BEHAVIOR, summary, None, {}, after)


@pytest.mark.parametrize(
    ("found", "severity", "summary"),
    [
        pytest.param(
            TensorDiff(identical=5, total=5),
            Severity.INFO,
            "m.safetensors: byte-identical re-upload: the same chunks as before, every tensor.",
            id="identical-bytes-are-info",
        ),
        pytest.param(
            TensorDiff(identical=5, total=5, new_bytes=64, size=100, identical_upload=False),
            Severity.INFO,
            "m.safetensors: all 5 tensors byte-identical; only the header changed.",
            id="new-bytes-outside-every-tensor-are-info",
        ),
        pytest.param(
            TensorDiff(["embed"], ["x"], 3, 5, 10, 100, identical_upload=False),
            Severity.BEHAVIOR,
            "m.safetensors: embed changed (10.0% of bytes new), 1 possibly (a new chunk spans "
            "their edge); 3 of 5 tensors byte-identical.",
            id="a-few-tensors-are-behavior",
        ),
        pytest.param(
            TensorDiff(["a", "b", "c"], [], 1, 4, 80, 100, identical_upload=False),
            Severity.BREAKING,
            "m.safetensors: a, b, c changed (80.0% of bytes new); 1 of 4 tensors byte-identical.",
            id="most-tensors-are-breaking",
        ),
    ],
)
def test_severity_follows_the_tensors(found: TensorDiff, severity: Severity, summary: str) -> None:
    (change,) = apply_policy([_reuploaded(found)])
    assert change.severity is severity and change.summary == summary


def test_max_chunk_is_the_specs() -> None:
    assert MAX_CHUNK == 128 * 1024


def test_the_tree_listing_keeps_each_files_xet_hash() -> None:
    from pathlib import Path

    from hubwatch.sources.hubanswers import file_entries

    trace = Path(__file__).parent / "data" / "hub-traces" / "ref-download-plain.json"
    exchanges = json.loads(trace.read_text())["exchanges"]
    (tree,) = [e for e in exchanges if "/tree/" in e["path"]]
    page = json.loads(tree["response_body"]["text"])
    xet = "f857c20483a87a6737b06f718d340429fc080f73c00f6d46b2030b58734a61e4"
    found = {e.path: e.xet_hash for e in file_entries(page)}
    assert found == {"regression/ref-lfs.bin": xet, "regression/ref-regular.txt": None}


def test_a_blob_whose_header_lies_has_no_tensor_digests() -> None:
    from hubwatch.formats.tensorbytes import file_extents

    header = b'{"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}'
    blob = struct.pack("<Q", len(header)) + header + bytes(8)  # 8 of the 16 bytes it claims
    with pytest.raises(UnsafeContent):
        file_extents("m.safetensors", blob)
    assert file_extents("m.safetensors", blob + bytes(8)) == [
        ("w", 8 + len(header), 24 + len(header))
    ]
