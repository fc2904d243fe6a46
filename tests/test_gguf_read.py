"""GGUF headers read through the Hub simulator (real huggingface_hub client) and git mirrors."""

from __future__ import annotations

import hashlib
import json
import re
import struct
from collections.abc import Iterator
from pathlib import Path

import pytest
from gguf import GGMLQuantizationType as Q
from gguf import GGUFValueType as V

from hubwatch.estimator import estimate_json
from hubwatch.formats.gguf import header_bytes, parse_header, to_header
from hubwatch.formats.view import RevisionView
from hubwatch.models import ReadStatus, RepoRef, SourceKind, StoredFile
from hubwatch.sources.git import GitSource
from hubwatch.sources.hub import HubSource
from hubwatch.sources.retry import RetryPolicy
from hubwatch.store.sql import SqlStore
from hubwatch.tracker.headers import CHUNK
from hubwatch.tracker.poll import Tracker
from hubwatch.tracker.snapshot import Limits
from tests.support.gguf_files import (
    dense_tensors,
    gguf_split,
    llama3_gguf,
    llama3_metadata,
    model_gguf,
    raw_array,
    raw_gguf,
    raw_kv,
    raw_string,
    raw_tensor,
)
from tests.support.gitrepo import CommitSpec, add_commits, make_repo
from tests.support.hubsim import HubSimulator, RequestRecord

_RANGE = re.compile(r"bytes=(\d+)-(\d+)")


@pytest.fixture
def hub() -> Iterator[HubSimulator]:
    with HubSimulator() as sim:
        yield sim
    assert sim.errors == []


def _tracker(store: SqlStore, hub: HubSimulator, tmp_path: Path, **limits: int) -> Tracker:
    sources = {
        SourceKind.HUB: HubSource(hub.url, None, timeout_s=10),
        SourceKind.GIT: GitSource(tmp_path / "mirrors"),
    }
    retry = RetryPolicy(attempts=2, sleep=lambda _s: None)
    return Tracker(store, sources, limits=Limits(**limits), retry=retry)


def _serve(hub: HubSimulator, tmp_path: Path, repo_id: str, files: dict[str, bytes]) -> str:
    shas = make_repo(tmp_path / repo_id, [CommitSpec(files)], lfs_dir=tmp_path / "lfs")
    hub.add_repo(repo_id, tmp_path / repo_id, lfs_dir=tmp_path / "lfs")
    return shas[-1]


def _files(store: SqlStore, repo_id: str, sha: str) -> dict[str, StoredFile]:
    return {f.path: f for f in store.files(repo_id, sha)}


def _view(store: SqlStore, repo_id: str, sha: str) -> RevisionView:
    return RevisionView.of_stored(store.files(repo_id, sha), None, store.blob, sha)


def _cdn_reads(hub: HubSimulator, content: bytes) -> list[RequestRecord]:
    oid = hashlib.sha256(content).hexdigest()
    return [r for r in hub.requests if r.route == "cdn" and r.path.endswith(oid)]


def _start(record: RequestRecord) -> int:
    match = _RANGE.fullmatch(record.range or "")
    assert match is not None, record.range  # every LFS read is a range read
    return int(match[1])


def test_headers_cost_at_most_header_plus_64k_and_no_tensor_data(
    store: SqlStore, hub: HubSimulator, tmp_path: Path
) -> None:
    files = {
        "Llama-3-8B-Instruct-Q4_K_M.gguf": llama3_gguf(vocab_rows=2048),
        "Llama-3-8B-Instruct-Q8_0.gguf": llama3_gguf(default_type="Q8_0", vocab_rows=2048),
        "Big-Vocab-Q4_K_M.gguf": llama3_gguf(regular=150_000),
        "README.md": b"---\nlicense: llama3\n---\n",
    }
    sha = _serve(hub, tmp_path, "org/gguf", files)
    result = _tracker(store, hub, tmp_path).track(RepoRef("org/gguf"))
    assert result.error is None
    stored = _files(store, "org/gguf", sha)
    read_total = 0
    for path in (p for p in files if p.endswith(".gguf")):
        assert stored[path].header_status is ReadStatus.STORED, stored[path].header_error
        header = json.loads(store.blob(stored[path].header_sha256))
        data_offset = header["data_offset"]
        reads = _cdn_reads(hub, files[path])
        starts = [_start(r) for r in reads]
        assert all(start < data_offset for start in starts), (path, starts, data_offset)
        assert sum(r.sent for r in reads) <= data_offset + CHUNK, path
        read_total += sum(r.sent for r in reads)
        assert header["format"] == "gguf" and len(header["tensors"]) == 21
    big = json.loads(store.blob(stored["Big-Vocab-Q4_K_M.gguf"].header_sha256))
    assert len(big["metadata"]["tokenizer.ggml.tokens"]) == 150_005
    assert big["metadata"]["tokenizer.ggml.eos_token_id"] == 150_004
    assert big["data_offset"] > 2_000_000  # the vocabulary took several growing reads
    assert len(_cdn_reads(hub, files["Big-Vocab-Q4_K_M.gguf"])) > 1
    assert hub.stats.lfs_bytes == read_total  # no other LFS byte went out


def test_a_150k_token_header_is_read_back_through_the_view(
    store: SqlStore, hub: HubSimulator, tmp_path: Path
) -> None:
    files = {"Qwen-Q4_K_M.gguf": model_gguf("qwen2", regular=150_000)}
    sha = _serve(hub, tmp_path, "org/qwen", files)
    _tracker(store, hub, tmp_path).track(RepoRef("org/qwen"))
    view = _view(store, "org/qwen", sha)
    assert view.header("Qwen-Q4_K_M.gguf") is not None  # loads_bounded takes it
    header = view.gguf_header("Qwen-Q4_K_M.gguf")
    assert header is not None and header.architecture == "qwen2"
    assert header.metadata["tokenizer.ggml.tokens"][150_002] == "<|im_end|>"
    assert header.arch_value("context_length") == 32768


def test_split_files_join_into_one_model(
    store: SqlStore, hub: HubSimulator, tmp_path: Path
) -> None:
    parts = gguf_split("M-Q4_K_M.gguf", "llama", llama3_metadata(), dense_tensors(), 3)
    files = {f"q/{name}": data for name, data in parts.items()}
    files["q/M-Q8_0.gguf"] = llama3_gguf(default_type="Q8_0")
    sha = _serve(hub, tmp_path, "org/split", files)
    _tracker(store, hub, tmp_path).track(RepoRef("org/split"))
    models = _view(store, "org/split", sha).gguf_models()
    assert sorted(models) == ["q/M-Q4_K_M.gguf", "q/M-Q8_0.gguf"]
    split = models["q/M-Q4_K_M.gguf"]
    assert split.parts == tuple(f"q/M-Q4_K_M-0000{n}-of-00003.gguf" for n in (1, 2, 3))
    assert split.quantization == "Q4_K_M" and split.missing == ()
    assert len(split.tensors) == 21 and split.architecture == "llama"
    assert split.metadata["tokenizer.ggml.eos_token_id"] == 511
    assert models["q/M-Q8_0.gguf"].quantization == "Q8_0"


def test_reupload_stores_the_same_header_and_reads_only_new_objects(
    store: SqlStore, hub: HubSimulator, tmp_path: Path
) -> None:
    first = llama3_gguf()
    _serve(hub, tmp_path, "org/re", {"M-Q4_K_M.gguf": first, "README.md": b"a"})
    tracker = _tracker(store, hub, tmp_path)
    tracker.track(RepoRef("org/re"))
    again = llama3_gguf(fill=7)  # same metadata, other tensor bytes
    assert again != first
    (card_only, reupload) = add_commits(
        tmp_path / "org/re",
        [CommitSpec({"README.md": b"b"}), CommitSpec({"M-Q4_K_M.gguf": again})],
        lfs_dir=tmp_path / "lfs",
    )
    hub.reset_stats()
    tracker.poll("org/re")
    assert _cdn_reads(hub, first) == []  # the unchanged object's header is reused
    assert len(_cdn_reads(hub, again)) == 1
    before = _files(store, "org/re", card_only)["M-Q4_K_M.gguf"]
    after = _files(store, "org/re", reupload)["M-Q4_K_M.gguf"]
    assert before.lfs_sha256 != after.lfs_sha256
    assert before.header_sha256 == after.header_sha256  # identical headers, identical bytes


def _str_kv(key: str, value: str) -> bytes:
    return raw_kv(key, V.STRING, raw_string(value))


GOOD_KV = _str_kv("general.architecture", "llama")
HOSTILE = {
    "lying-tensor-count.gguf": (raw_gguf([GOOD_KV], n_tensors=2**40), "tensors (at most"),
    "string-2-63.gguf": (
        raw_gguf([raw_kv("general.name", V.STRING, raw_string("x", length=2**63))]),
        "claims 9223372036854775808 bytes",
    ),
    "truncated.gguf": (llama3_gguf()[:5000], "header truncated"),
    "bad-magic.gguf": (b"GGML" + bytes(100), "not a GGUF file"),
    "version-7.gguf": (raw_gguf([GOOD_KV], version=7), "GGUF version 7"),
    "unknown-value-type.gguf": (raw_gguf([raw_string("k") + struct.pack("<I", 77)]), "type 77"),
    "unknown-ggml-type.gguf": (raw_gguf([], [raw_tensor("w", (32,), 200, 0)]), "ggml type 200"),
    "huge-dims.gguf": (raw_gguf([], [raw_tensor("w", (2**62, 2**62), Q.F32, 0)]), "too large"),
    "past-the-end.gguf": (
        raw_gguf([], [raw_tensor("w", (1024,), Q.F32, 0)], data=bytes(100)),
        "tensor data would end at byte 4160",  # 64-byte header + 4096 bytes of F32
    ),
    "million-strings.gguf": (
        raw_gguf([raw_kv("t", V.ARRAY, raw_array(V.STRING, raw_string("a"), 1_000_000))]),
        "over the cap of 1048576",
    ),
}


def test_hostile_headers_are_recorded_and_the_rest_is_stored(
    store: SqlStore, hub: HubSimulator, tmp_path: Path
) -> None:
    files = {name: data for name, (data, _reason) in HOSTILE.items()}
    files["good-Q4_K_M.gguf"] = llama3_gguf()
    files["config.json"] = b'{"model_type": "llama"}'
    sha = _serve(hub, tmp_path, "org/hostile", files)
    result = _tracker(store, hub, tmp_path, max_header_bytes=1 << 20).track(RepoRef("org/hostile"))
    assert result.error is None
    stored = _files(store, "org/hostile", sha)
    for name, (_data, reason) in HOSTILE.items():
        read = stored[name]
        want = ReadStatus.OVER_CAP if "over the cap" in reason else ReadStatus.INVALID
        assert read.header_status is want, (name, read.header_status, read.header_error)
        assert reason in (read.header_error or ""), (name, read.header_error)
        assert read.header_sha256 is None, name  # nothing stored for a lie
    assert stored["good-Q4_K_M.gguf"].header_status is ReadStatus.STORED
    assert stored["config.json"].content_status is ReadStatus.STORED
    (recorded,) = store.changes("org/hostile")
    partial = [c for c in recorded.changes if c.kind == "revision.partial"]
    assert partial and "truncated.gguf" in (partial[0].detail or "")


def test_a_gguf_kept_in_plain_git_is_range_read_and_an_lfs_pointer_is_unavailable(
    store: SqlStore, hub: HubSimulator, tmp_path: Path
) -> None:
    data = llama3_gguf()
    plain = tmp_path / "plain"
    (sha,) = make_repo(plain, [CommitSpec({"M-Q4_K_M.gguf": data})], lfs_patterns=())
    pointer = tmp_path / "pointer"
    (psha,) = make_repo(pointer, [CommitSpec({"M-Q4_K_M.gguf": data})])
    tracker = _tracker(store, hub, tmp_path)
    tracker.track(RepoRef("mirror/plain", SourceKind.GIT, str(plain)))
    tracker.track(RepoRef("mirror/pointer", SourceKind.GIT, str(pointer)))
    read = _files(store, "mirror/plain", sha)["M-Q4_K_M.gguf"]
    assert read.header_status is ReadStatus.STORED, read.header_error
    header = _view(store, "mirror/plain", sha).gguf_header("M-Q4_K_M.gguf")
    assert header is not None and header.metadata["llama.context_length"] == 8192
    unread = _files(store, "mirror/pointer", psha)["M-Q4_K_M.gguf"]
    assert unread.header_status is ReadStatus.UNAVAILABLE
    assert "LFS" in (unread.header_error or "")


def test_a_gguf_header_is_not_counted_as_the_configs_checkpoint() -> None:
    config = (Path(__file__).parent / "data" / "configs" / "Qwen__Qwen3-0.6B.json").read_bytes()
    header = header_bytes(to_header(parse_header(model_gguf("qwen3"))))
    with_gguf = estimate_json(config, {"Qwen3-0.6B-Q4_K_M.gguf": header})
    assert with_gguf.ok and with_gguf == estimate_json(config)
