"""Listing a commit's files through the poll's `cat-file` processes, as `ls-tree` lists them."""

from __future__ import annotations

from pathlib import Path

from hubwatch.models import CommitSha, RepoRef, SourceKind
from hubwatch.sources.git import GitSource
from tests.support.gitrepo import CommitSpec, make_repo

BIG = bytes(range(256)) * 40  # over an LFS pointer's size: its size comes from git, unread
FILES = {
    "b.txt": b"b\n",
    "a.txt": b"a\n",
    "a/z.txt": b"z\n",
    "a/b/c.json": b"{}",
    "a-b/x.txt": b"x\n",
    "weights.bin": BIG,
}


def test_a_listing_read_through_cat_file_is_the_one_ls_tree_gives(tmp_path: Path) -> None:
    shas = make_repo(
        tmp_path / "up",
        [CommitSpec(FILES), CommitSpec({"a/z.txt": b"zz\n", "b.txt": None})],
        lfs_patterns=(),
    )
    repo = RepoRef("org/m", SourceKind.GIT, str(tmp_path / "up"))
    source = GitSource(tmp_path / "mirrors", timeout_s=60)
    try:
        source.list_commits(repo)
        with source.reading(repo, CommitSha(shas[-1])):  # trees and sizes through cat-file
            read = [source.list_files(repo, CommitSha(sha)) for sha in shas]
        # git's order: a folder sorts as its name and "/" ("a-b/" < "a.txt" < "a/")
        assert [(f.path, f.size) for f in read[0]] == [
            ("a-b/x.txt", 2),
            ("a.txt", 2),
            ("a/b/c.json", 2),
            ("a/z.txt", 2),
            ("b.txt", 2),
            ("weights.bin", len(BIG)),
        ]
        assert [(f.path, f.size) for f in read[1]] == [
            ("a-b/x.txt", 2),
            ("a.txt", 2),
            ("a/b/c.json", 2),
            ("a/z.txt", 3),
            ("weights.bin", len(BIG)),
        ]
        fresh = GitSource(tmp_path / "mirrors", timeout_s=60)  # no cached listing: ls-tree
        fresh.list_commits(repo)
        assert [fresh.list_files(repo, CommitSha(sha)) for sha in shas] == read
        fresh.close()
    finally:
        source.close()
