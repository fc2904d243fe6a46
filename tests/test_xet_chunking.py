"""The Hub simulator's Xet chunking and hashing against the spec and the kept implementation.

chunking.md publishes no boundary list inline: its sample (the chunks of a CSV in the dataset
xet-team/xet-spec-reference-files) cannot be fetched offline. What stands in for it: hf_xet's
`hash_files` (xet-core, the Hub's own client) computes the file hash from the chunk boundaries
and the Merkle tree, so equal hashes on multi-chunk files mean equal boundaries; the per-byte
pseudocode of chunking.md checks the vectorised cut; and the properties the page states.
"""

from __future__ import annotations

import random
from pathlib import Path

import hf_xet  # a dependency of huggingface_hub, always installed
import pytest

from tests.support.hubsim_xet import (
    MAX_CHUNK,
    MIN_CHUNK,
    TABLE,
    XetStore,
    boundaries,
    chunk_hash,
    file_hash,
    reference_boundaries,
)


def _data(seed: int, size: int) -> bytes:
    return random.Random(seed).randbytes(size)


def _pieces(data: bytes) -> list[tuple[bytes, int]]:
    pieces, start = [], 0
    for end in boundaries(data):
        pieces.append((chunk_hash(data[start:end]), end - start))
        start = end
    return pieces


def test_the_table_is_rust_gearhashs() -> None:
    assert len(TABLE) == 256 and len(set(TABLE)) == 256
    assert (TABLE[0], TABLE[255]) == (0xB088D3A9E840F559, 0x63C7A906C1DD187B)


@pytest.mark.parametrize("size", [0, 9, MIN_CHUNK - 1, MIN_CHUNK, 300_000])
def test_the_vectorised_cut_is_the_pseudocodes(size: int) -> None:
    data = _data(size, size)
    assert boundaries(data) == reference_boundaries(data)


@pytest.mark.parametrize("size", [9, 5_000, 300_000, 2_500_000])
def test_file_hashes_equal_hf_xets(tmp_path: Path, size: int) -> None:
    data = _data(size + 1, size)
    path = tmp_path / "file.bin"
    path.write_bytes(data)
    (info,) = hf_xet.hash_files([str(path)])
    assert file_hash(_pieces(data)) == info.hash
    assert size < MIN_CHUNK or len(boundaries(data)) > 1


def test_chunk_sizes_keep_within_the_bounds() -> None:
    ends = boundaries(_data(7, 3_000_000))
    sizes = [b - a for a, b in zip([0, *ends], ends, strict=False)]
    assert all(MIN_CHUNK <= s <= MAX_CHUNK for s in sizes[:-1])
    assert 32 * 1024 < sum(sizes) / len(sizes) < 96 * 1024  # about 64 KiB on average


def test_a_run_without_a_match_is_cut_at_the_maximum() -> None:
    # NOTE: past 64 zero bytes the hash is constant, -TABLE[0] mod 2**64, which fails the mask
    assert boundaries(bytes(3 * MAX_CHUNK + 5)) == [
        MAX_CHUNK,
        2 * MAX_CHUNK,
        3 * MAX_CHUNK,
        3 * MAX_CHUNK + 5,
    ]


def test_an_edit_changes_only_the_chunks_near_it() -> None:
    data = bytearray(_data(11, 2_000_000))
    before = _pieces(bytes(data))
    data[1_000_000:1_000_010] = b"0123456789"
    after = _pieces(bytes(data))
    assert 1 <= len(set(after) - set(before)) <= 3


def test_a_reupload_is_rebuilt_from_the_old_files_chunks() -> None:
    store = XetStore()
    data = bytearray(_data(12, 1_500_000))
    old = store.upload(bytes(data))
    data[700_000:700_004] = b"\xff\xff\xff\xff"
    new = store.upload(bytes(data))
    old_xorb = store.files[old][0].xorb
    shared = sum(t.unpacked_length for t in store.files[new] if t.xorb == old_xorb)
    assert len(store.files[new]) == 3 and shared > 1_200_000
