"""The Hub simulator's Xet chunking and hashing against the spec and the kept implementation.

chunking.md publishes no boundary list inline: its sample (the chunks of a CSV in the dataset
xet-team/xet-spec-reference-files) cannot be fetched offline. The reference vectors xet-core's
own tests publish stand in for it (boundaries and chunk hashes of 1 MB of splitmix64 output and of
1 MB of one byte value), and so does hf_xet's `hash_files` (xet-core, the Hub's own client), which
computes the file hash from the chunk boundaries and the Merkle tree, so equal hashes on
multi-chunk files mean equal boundaries; the per-byte pseudocode of chunking.md checks the
vectorised cut; and the properties the page states.
"""

from __future__ import annotations

import hashlib
import random
import struct
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
    hash_string,
    reference_boundaries,
)

# xet-core's reference vectors, as huggingface.js republishes them in
# packages/xetchunk-wasm/tests/index.test.ts ("Expected boundaries from Rust reference"):
# 1,000,000 bytes of splitmix64 output from seed 0 (sha256 below), cut by the default chunker.
_SPLITMIX_SHA256 = "b3d0a1f7938cd4d8413a4dcffd4313e2e8ac0cb61cb1090eb140ea8e9154befb"
_SPLITMIX_BOUNDARIES = [
    84493, 134421, 144853, 243318, 271793, 336457, 467529, 494581, 582000, 596735,
    616815, 653164, 678202, 724510, 815591, 827760, 958832, 991092, 1000000,
]  # fmt: skip
_SPLITMIX_FIRST_HASHES = [
    "6eca1e7dadaf08cca5d82d318c800f07c2ddcec115a7e8627e5edd9605b94b8d",
    "624ea34d72a06e5d43a1b8dd10763f0d22f165992c397ed97563899b27fdd88a",
    "4411d2ec847c6e3f451a7451ff3933adb4f1c31587421b9f730b698a78313b47",
    "6342bde97433e29e0779ad33eb8040d986679040361b3cc3a06230fe60dd6c9b",
]
_SPLITMIX_LAST_HASH = "03e5b5f5a088269ec4b329f1e04debfac4cb54b9c0facf038f7e8e0f054be7e2"
# The same file's vector for 1,000,000 bytes of the value 59: no cut is ever found, so every
# chunk is the maximum (128 KiB) but the last.
_CONSTANT_BOUNDARIES = [131072, 262144, 393216, 524288, 655360, 786432, 917504, 1000000]
_MASK64 = (1 << 64) - 1


def _splitmix64(size: int, seed: int) -> bytes:
    """splitmix64 output as little-endian u64s, the generator the reference vectors use."""
    out, state = bytearray(), seed
    while len(out) < size:
        state = (state + 0x9E3779B97F4A7C15) & _MASK64
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
        out += struct.pack("<Q", z ^ (z >> 31))
    return bytes(out[:size])


def _data(seed: int, size: int) -> bytes:
    return random.Random(seed).randbytes(size)


def _pieces(data: bytes) -> list[tuple[bytes, int]]:
    pieces, start = [], 0
    for end in boundaries(data):
        pieces.append((chunk_hash(data[start:end]), end - start))
        start = end
    return pieces


def test_the_reference_vector_of_random_data_is_cut_and_hashed_as_xet_core_does() -> None:
    data = _splitmix64(1_000_000, 0)
    assert hashlib.sha256(data).hexdigest() == _SPLITMIX_SHA256  # the vector's own input
    cuts = boundaries(data)
    assert cuts == _SPLITMIX_BOUNDARIES
    hashes = [
        hash_string(chunk_hash(data[a:b])) for a, b in zip([0, *cuts[:-1]], cuts, strict=True)
    ]
    assert hashes[:4] == _SPLITMIX_FIRST_HASHES
    assert hashes[-1] == _SPLITMIX_LAST_HASH


def test_the_reference_vector_of_constant_data_is_cut_at_the_maximum() -> None:
    assert boundaries(bytes([59]) * 1_000_000) == _CONSTANT_BOUNDARIES


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
