"""CatFileBatch: one `git cat-file --batch` process answering many reads, in turn."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from hubwatch.errors import SourceUnavailable, UnexpectedResponse
from hubwatch.sources.gitbatch import CatFileBatch
from tests.support.gitrepo import CommitSpec, git, make_repo

BIG = bytes(range(256)) * 400  # larger than a pipe's buffer


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    make_repo(path, [CommitSpec({"a.txt": b"A\n", "big.dat": BIG})], bare=True)
    return path


def test_one_process_reads_many_objects_in_order(repo: Path) -> None:
    small, big = git(repo, "rev-parse", "HEAD:a.txt"), git(repo, "rev-parse", "HEAD:big.dat")
    reader = CatFileBatch(repo, timeout_s=60)
    try:
        found = reader.read_many([big, small, "0" * 40, *[small] * 600])  # several chunks
        assert [obj.kind for obj in found[:3]] == ["blob", "blob", None]
        assert found[0].data == BIG and found[1].data == b"A\n"
        assert all(obj.data == b"A\n" for obj in found[3:]) and len(found) == 603
        assert reader.read(big).data == BIG and reader.read(big) is reader.read(big)
    finally:
        reader.close()


def test_a_closed_reader_starts_afresh(repo: Path) -> None:
    small = git(repo, "rev-parse", "HEAD:a.txt")
    reader = CatFileBatch(repo, timeout_s=60)
    reader.read_many([small])
    reader.close()
    try:
        assert reader.read(small).data == b"A\n"
    finally:
        reader.close()


def test_only_object_ids_reach_git(repo: Path) -> None:
    reader = CatFileBatch(repo, timeout_s=60)
    with pytest.raises(UnexpectedResponse, match="not a git object id"):
        reader.read_many(["HEAD:a.txt"])
    reader.close()


def test_a_git_that_cannot_answer_is_unavailable(tmp_path: Path) -> None:
    reader = CatFileBatch(tmp_path / "not-a-repo", timeout_s=60)
    with pytest.raises(SourceUnavailable, match="cat-file --batch ended"):
        reader.read("0" * 40)
    reader.close()


def test_a_reader_past_half_its_time_limit_reads_through_a_fresh_process(repo: Path) -> None:
    # a reader held for a whole backfill outlives any one process's time limit: the process
    # that the limit killed meanwhile is replaced between two reads, and the read succeeds
    small = git(repo, "rev-parse", "HEAD:a.txt")
    reader = CatFileBatch(repo, timeout_s=0.2)
    try:
        assert reader.read_many([small])[0].data == b"A\n"
        time.sleep(0.4)  # past the limit: the first process was killed
        assert reader.read_many([small])[0].data == b"A\n"
    finally:
        reader.close()
