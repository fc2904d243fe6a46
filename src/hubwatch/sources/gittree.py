"""Listing one commit's files from a git mirror, damaged or not, without paths reaching git."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from hubwatch.errors import RevisionNotFound, SourceError
from hubwatch.models import CommitSha, FileEntry, RepoRef
from hubwatch.sources.gitbatch import CatFileBatch
from hubwatch.sources.gitcmd import GitFailed, GitRunner, damaged, missing_object
from hubwatch.sources.gitparse import (
    LFS_POINTER_MAX,
    TreeRow,
    parse_lfs_pointer,
    parse_raw_tree,
    parse_tree,
    path_problem,
    slash_in_name,
)

_TREE, _SUBMODULE = "40000", "160000"


@dataclass(frozen=True, slots=True)
class Listing:
    """One commit's tree, kept so that reads find blobs by id, never by a path git would parse."""

    sha: CommitSha
    entries: list[FileEntry]
    blobs: dict[str, tuple[FileEntry, int]]
    """By path: the entry and the size of the git blob (the pointer's, for an LFS file)."""


def list_tree(
    git: GitRunner, repo: RepoRef, mirror: Path, sha: CommitSha, reader: CatFileBatch | None = None
) -> Listing:
    """Every file of `sha`; a file or folder the mirror lacks is listed with its problem.

    `reader`: the snapshot's `cat-file --batch`, which reads the small blobs when given.

    RevisionNotFound for an unknown sha; RepositoryDamaged when the commit's own tree is missing.
    """
    if sha.startswith("-"):
        raise RevisionNotFound(f"{repo.repo_id}: invalid revision {sha!r}")
    rows = _read_rows(reader, sha) if reader is not None else None
    if rows is None:
        try:
            rows = parse_tree(git("ls-tree", "-r", "-l", "-z", "--full-tree", sha, cwd=mirror))
        except GitFailed:
            # a missing folder stops `ls-tree -r` where it is met: walk what can be read instead
            rows = _walk(git, mirror, _root_tree(git, repo, mirror, sha))
    files: list[tuple[str, str, int, str | None]] = []  # path, blob, size, problem
    for row in rows:
        if row.kind == "commit":
            continue  # submodules have no bytes here
        path = row.path.decode("utf-8", "surrogateescape")
        problem = row.problem or path_problem(row.path)
        if problem is None and (row.size is None or row.kind == "tree"):
            problem = missing_object(row.oid)  # only a folder git could not read is listed
        files.append((path, row.oid, row.size or 0, problem))
    return _entries(git, mirror, sha, files, reader)


_MEMO_MAX = 200_000
"""Parsed trees and blob sizes a reader keeps (`CatFileBatch.memo`) before starting afresh."""


def _read_rows(reader: CatFileBatch, sha: CommitSha) -> list[TreeRow] | None:
    """The rows `ls-tree -r -l` prints, read through the snapshot's `cat-file` processes
    instead of starting one more per revision. None when anything is missing, odd or fails:
    `ls-tree` then lists the commit, and says what is wrong."""
    memo = reader.memo
    if len(memo) > _MEMO_MAX:
        memo.clear()
    try:
        (commit,) = reader.read_many([sha])
        header = commit.data.split(b"\n", 1)[0].split(b" ")
        if commit.kind != "commit" or len(header) != 2 or header[0] != b"tree":
            return None
        trees = _trees(reader, header[1].decode("ascii"))
        root = header[1].decode("ascii")
        blobs: list[tuple[str, bytes, str]] = []  # mode, path, oid
        malformed: set[bytes] = set()  # paths under an entry whose name holds a "/"
        stack = [(b"", iter(trees[root]), False)]
        while stack:  # depth first, each tree's entries in order: ls-tree -r's order
            prefix, entries, bad = stack[-1]
            entry = next(entries, None)
            if entry is None:
                stack.pop()
                continue
            bad_here = bad or b"/" in entry[1]
            if entry[0] == _TREE:
                stack.append((prefix + entry[1] + b"/", iter(trees[entry[2]]), bad_here))
                continue
            blobs.append((entry[0], prefix + entry[1], entry[2]))
            if bad_here:
                malformed.add(prefix + entry[1])
        # sizes by blob id, kept by the reader: most files of a commit are its parent's
        sizes = {oid: memo.get(("size", oid)) for mode, _, oid in blobs if mode != _SUBMODULE}
        unknown = sorted(oid for oid, size in sizes.items() if size is None)
        for obj in reader.sizes(unknown) if unknown else []:
            if obj.kind != "blob":
                return None  # missing, or not a file: ls-tree says what
            memo["size", obj.name] = sizes[obj.name] = obj.size
    except (SourceError, UnicodeDecodeError, ValueError):
        return None  # git gone, or an answer not as expected: ls-tree says what
    return [
        TreeRow(mode, "commit", oid, None, path)
        if mode == _SUBMODULE
        else TreeRow(
            mode, "blob", oid, sizes[oid], path, slash_in_name(path) if path in malformed else None
        )
        for mode, path, oid in blobs
    ]


def _trees(reader: CatFileBatch, root: str) -> dict[str, list[tuple[str, bytes, str]]]:
    """Every tree under `root` by object id, parsed (those parsed before kept by the reader:
    most folders of a commit are its parent's); ValueError when one is missing."""
    memo = reader.memo
    trees: dict[str, list[tuple[str, bytes, str]]] = {}
    level = [root]
    while level:
        unread = [oid for oid in dict.fromkeys(level) if ("tree", oid) not in memo]
        for obj in reader.read_many(unread) if unread else []:
            if obj.kind != "tree":
                raise ValueError(f"not a tree: {obj.name}")
            memo["tree", obj.name] = parse_raw_tree(obj.data, len(obj.name) // 2)
        below = []
        for oid in level:
            trees[oid] = memo["tree", oid]
            below += [child for mode, _, child in trees[oid] if mode == _TREE]
        level = below
    return trees


def _root_tree(git: GitRunner, repo: RepoRef, mirror: Path, sha: CommitSha) -> str:
    try:
        tree = git("rev-parse", "--verify", "--quiet", f"{sha}^{{tree}}", cwd=mirror).decode()
    except GitFailed:
        raise RevisionNotFound(f"{repo.repo_id}: revision {sha} not found") from None
    (obj,) = git.batch(mirror, [tree.strip()], check=True)
    if obj.kind != "tree":
        raise damaged(repo, f"the tree of commit {sha} is {missing_object(obj.name)}")
    return obj.name


def _walk(git: GitRunner, mirror: Path, root: str) -> list[TreeRow]:
    """The rows `ls-tree -r -l` would print, read a level at a time; unreadable folders as rows."""
    rows: list[TreeRow] = []
    blobs: list[tuple[str, bytes, str, bool]] = []  # mode, path, oid, under a name with "/"
    level: list[tuple[bytes, str, bool]] = [(b"", root, False)]
    while level:
        below: list[tuple[bytes, str, bool]] = []
        objects = git.batch(mirror, [o for _, o, _ in level])
        for (prefix, oid, bad), obj in zip(level, objects, strict=True):
            if obj.kind != "tree":
                rows.append(TreeRow(_TREE, "tree", oid, None, prefix.rstrip(b"/")))
                continue
            for mode, name, child in parse_raw_tree(obj.data, len(oid) // 2):
                bad_here = bad or b"/" in name
                if mode == _TREE:
                    below.append((prefix + name + b"/", child, bad_here))
                elif mode == _SUBMODULE:
                    rows.append(TreeRow(mode, "commit", child, None, prefix + name))
                else:
                    blobs.append((mode, prefix + name, child, bad_here))
        level = below
    sizes = git.batch(mirror, [oid for _, _, oid, _ in blobs], check=True)
    for (mode, path, oid, bad), obj in zip(blobs, sizes, strict=True):
        size = obj.size if obj.kind else None
        rows.append(TreeRow(mode, "blob", oid, size, path, slash_in_name(path) if bad else None))
    return sorted(rows, key=lambda row: row.path)  # ls-tree's order: a folder's files in place


def _entries(
    git: GitRunner,
    mirror: Path,
    sha: CommitSha,
    files: list[tuple[str, str, int, str | None]],
    reader: CatFileBatch | None,
) -> Listing:
    """FileEntries of a tree's files: small blobs are read once to find LFS pointers."""
    small = sorted({b for _, b, size, problem in files if not problem and size < LFS_POINTER_MAX})
    read = reader.read_many(small) if reader is not None else git.batch(mirror, small)
    found = {obj.name: obj for obj in read}
    entries: list[FileEntry] = []
    blobs: dict[str, tuple[FileEntry, int]] = {}
    for path, blob, size, problem in files:
        obj = found.get(blob)
        if obj is not None and obj.kind is None:
            problem = missing_object(blob)
        lfs = parse_lfs_pointer(obj.data) if obj is not None and obj.kind else None
        entry = FileEntry(
            path=path,
            size=lfs[1] if lfs else size,
            blob_id=blob,
            lfs_sha256=lfs[0] if lfs else None,
            problem=problem,
        )
        entries.append(entry)
        blobs.setdefault(path, (entry, size))
    return Listing(sha, entries, blobs)
