"""Read a git repository's commits, trees, refs and blobs for the Hub simulator, cached per sha."""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

_HEX = re.compile(r"[0-9a-f]{7,40}")
# git-lfs: "Pointer files must be less than 1024 bytes in size" (docs/spec.md).
_POINTER_MAX = 1024
_POINTER_SPECS = (
    b"version https://git-lfs.github.com/spec/v1\n",
    b"version https://hawser.github.com/spec/v1\n",
)


@dataclass(frozen=True)
class LfsInfo:
    """The LFS object a pointer file stands for."""

    sha256: str
    size: int
    pointer_size: int


@dataclass(frozen=True)
class Entry:
    """One file or directory of a commit's tree."""

    path: str
    kind: Literal["file", "directory"]
    oid: str
    """Git blob sha (the pointer's, for LFS files) or tree sha."""
    size: int
    """Content size: the LFS object's for LFS files, 0 for directories (as the Hub reports)."""
    lfs: LfsInfo | None = None


@dataclass(frozen=True)
class Commit:
    """One commit as `git log` shows it."""

    sha: str
    author: str
    email: str
    timestamp: int
    """Committer date, seconds since the epoch."""
    message: str

    @property
    def title(self) -> str:
        return self.message.split("\n", 1)[0]

    @property
    def body(self) -> str:
        return self.message.partition("\n")[2].strip("\n")


@dataclass(frozen=True)
class Ref:
    """A branch, tag or other ref that points (maybe through an annotated tag) at a commit."""

    ref: str
    sha: str


class GitReader:
    """Read one repository through the `git` command; everything keyed by a sha is cached."""

    def __init__(self, git_dir: Path) -> None:
        self.git_dir = git_dir
        self._logs: dict[str, tuple[Commit, ...]] = {}
        self._trees: dict[str, tuple[Entry, ...]] = {}
        self._blobs: dict[str, bytes] = {}
        self._commits: set[str] = set()
        self._git("rev-parse", "--git-dir")  # fail early on a directory that is no repository

    def refs(self) -> list[Ref]:
        """All refs that lead to a commit, read afresh (tests move branches between requests)."""
        fmt = "%(refname)%00%(objecttype)%00%(objectname)%00%(*objecttype)%00%(*objectname)"
        refs = []
        for line in self._git("for-each-ref", f"--format={fmt}").decode().splitlines():
            name, kind, sha, peeled_kind, peeled = line.split("\0")
            if kind == "commit" or peeled_kind == "commit":
                refs.append(Ref(name, sha if kind == "commit" else peeled))
        return refs

    def resolve(self, rev: str) -> str | None:
        """The commit sha that a branch, tag, full ref or (short) sha names; None if none does."""
        by_name = {r.ref: r.sha for r in self.refs()}
        for name in (rev, f"refs/heads/{rev}", f"refs/tags/{rev}"):
            if name.startswith("refs/") and name in by_name:
                return by_name[name]
        if rev in self._commits:
            return rev
        if not _HEX.fullmatch(rev):  # the Hub takes no rev expressions like main~1
            return None
        sha = self._run("rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}").stdout.decode()
        sha = sha.strip()
        if not sha:
            return None
        self._commits.add(sha)
        return sha

    def log(self, sha: str) -> tuple[Commit, ...]:
        """The history of `sha`, newest first, in `git log` order."""
        if sha not in self._logs:
            raw = self._git("log", "--format=%H%x1f%an%x1f%ae%x1f%ct%x1f%B%x1e", sha)
            out = raw.decode(errors="replace")
            commits = []
            for record in out.split("\x1e"):
                if record.strip():
                    csha, name, email, stamp, message = record.lstrip("\n").split("\x1f", 4)
                    commits.append(Commit(csha, name, email, int(stamp), message.rstrip("\n")))
            self._logs[sha] = tuple(commits)
        return self._logs[sha]

    def tree(self, sha: str) -> tuple[Entry, ...]:
        """Every file and directory of commit `sha`, recursively, in git's order (a tree before its
        contents)."""
        if sha in self._trees:
            return self._trees[sha]
        out = self._git("ls-tree", "-r", "-t", "-l", "-z", "--full-tree", sha)
        rows = []
        for record in out.split(b"\0"):
            if record:
                meta, path = record.split(b"\t", 1)
                _mode, kind, oid, size = meta.decode().split()
                if kind in ("blob", "tree"):  # "commit" is a submodule, which the Hub does not list
                    rows.append((path.decode(), kind, oid, 0 if size == "-" else int(size)))
        self._read_blobs([row[2] for row in rows if row[1] == "blob" and row[3] < _POINTER_MAX])
        entries = []
        for path, kind, oid, size in rows:
            if kind == "tree":
                entries.append(Entry(path, "directory", oid, 0))
                continue
            lfs = _parse_pointer(self._blobs[oid]) if size < _POINTER_MAX else None
            entries.append(Entry(path, "file", oid, lfs.size if lfs else size, lfs))
        self._trees[sha] = tuple(entries)
        return self._trees[sha]

    def blob(self, oid: str) -> bytes:
        """The content of blob `oid`."""
        if oid not in self._blobs:
            self._blobs[oid] = self._git("cat-file", "blob", oid)
        return self._blobs[oid]

    def _read_blobs(self, oids: list[str]) -> None:
        missing = [oid for oid in dict.fromkeys(oids) if oid not in self._blobs]
        if not missing:
            return
        out = self._git("cat-file", "--batch", stdin="\n".join(missing).encode() + b"\n")
        pos = 0
        for oid in missing:
            header_end = out.index(b"\n", pos)
            size = int(out[pos:header_end].split()[2])
            self._blobs[oid] = out[header_end + 1 : header_end + 1 + size]
            pos = header_end + 1 + size + 1  # content is followed by a newline

    def _run(self, *args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
        cmd = ["git", "-C", str(self.git_dir), *args]
        return subprocess.run(cmd, input=stdin, capture_output=True, check=False)

    def _git(self, *args: str, stdin: bytes | None = None) -> bytes:
        done = self._run(*args, stdin=stdin)
        if done.returncode != 0:
            raise RuntimeError(f"git {args[0]} failed in {self.git_dir}: {done.stderr.decode()}")
        return done.stdout


def _parse_pointer(content: bytes) -> LfsInfo | None:
    if not content.startswith(_POINTER_SPECS):
        return None
    fields = dict(line.split(" ", 1) for line in content.decode(errors="replace").splitlines()[1:])
    oid, size = fields.get("oid", ""), fields.get("size", "")
    if not (oid.startswith("sha256:") and size.isdigit()):
        return None
    return LfsInfo(oid.removeprefix("sha256:"), int(size), len(content))
