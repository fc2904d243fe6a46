"""Read a git repository for the Hub simulator and put its data in the Hub's JSON shapes."""

from __future__ import annotations

import html
import json
import re
import subprocess
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import yaml

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
class Snapshot:
    """What model_info shows of one commit beyond its tree listing."""

    files: tuple[Entry, ...]
    card: dict[str, Any]
    """README.md's YAML front matter."""
    config: dict[str, Any]
    """The config.json keys the Hub repeats in model_info."""
    committed: int
    created: int
    """Committer date of the root commit, standing in for the repo's creation."""


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
        self._snapshots: dict[str, Snapshot] = {}
        self._commits: set[str] = set()
        self._peeled: dict[str, str | None] = {}
        self._dir = Path(self._git("rev-parse", "--absolute-git-dir").decode().strip())

    def refs(self) -> list[Ref]:
        """All refs that lead to a commit, read afresh (tests move branches between requests)."""
        # NOTE: read the ref files rather than run `git for-each-ref`: every request resolves a
        # revision, and a subprocess each would make the simulator a benchmark's bottleneck.
        targets: dict[str, str] = {}
        packed = self._dir / "packed-refs"
        if packed.is_file():
            for line in packed.read_text().splitlines():
                if line and line[0] not in "#^":
                    sha, name = line.split(" ", 1)
                    targets[name] = sha
        for ref_file in (self._dir / "refs").rglob("*"):
            if ref_file.is_file():
                content = ref_file.read_text().strip()
                if _HEX.fullmatch(content):  # skips symbolic refs ("ref: ...") and lock files
                    targets[ref_file.relative_to(self._dir).as_posix()] = content
        self._peel([sha for sha in targets.values() if sha not in self._peeled])
        peeled = ((name, self._peeled[sha]) for name, sha in sorted(targets.items()))
        return [Ref(name, commit) for name, commit in peeled if commit]

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
        rows: list[tuple[str, str, str, int]] = []  # path, kind, oid, git size
        for record in out.split(b"\0"):
            if record:
                meta, raw_path = record.split(b"\t", 1)
                _mode, kind, oid, git_size = meta.decode().split()
                if kind in ("blob", "tree"):  # "commit" is a submodule, which the Hub does not list
                    size = 0 if git_size == "-" else int(git_size)
                    rows.append((raw_path.decode(), kind, oid, size))
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

    def snapshot(self, sha: str) -> Snapshot:
        """Files, card data and dates of commit `sha`."""
        if sha not in self._snapshots:
            files = tuple(e for e in self.tree(sha) if e.kind == "file")
            by_path = {e.path: e for e in files if not e.lfs}
            readme = by_path.get("README.md")
            config = by_path.get("config.json")
            history = self.log(sha)
            self._snapshots[sha] = Snapshot(
                files,
                _front_matter(self.blob(readme.oid)) if readme else {},
                _config_summary(self.blob(config.oid)) if config else {},
                history[0].timestamp,
                history[-1].timestamp,
            )
        return self._snapshots[sha]

    def blob(self, oid: str) -> bytes:
        """The content of blob `oid`."""
        if oid not in self._blobs:
            self._blobs[oid] = self._git("cat-file", "blob", oid)
        return self._blobs[oid]

    def _peel(self, shas: list[str]) -> None:
        """Map each object sha to the commit it names (through annotated tags), or None."""
        if not shas:
            return
        query = "".join(f"{sha}\n{sha}^{{commit}}\n" for sha in dict.fromkeys(shas))
        out = self._run(
            "cat-file", "--batch-check=%(objectname) %(objecttype)", stdin=query.encode()
        )
        lines = out.stdout.decode().splitlines()
        for sha, commit_line in zip(lines[::2], lines[1::2], strict=True):
            commit = commit_line.split()
            self._peeled[sha.split()[0]] = commit[0] if commit[-1] == "commit" else None

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


def entry_json(entry: Entry) -> dict[str, Any]:
    """A tree or paths-info item, as the Hub sends it."""
    item: dict[str, Any] = {"type": entry.kind, "oid": entry.oid, "size": entry.size}
    item["path"] = entry.path
    if entry.lfs:
        lfs = entry.lfs
        item["lfs"] = {"oid": lfs.sha256, "size": lfs.size, "pointerSize": lfs.pointer_size}
    return item


def commit_json(commit: Commit, *, formatted: bool = False) -> dict[str, Any]:
    """A /commits item; the Hub names authors by user, which its noreply emails spell out."""
    email_user, _, domain = commit.email.partition("@")
    user = email_user if domain == "users.noreply.huggingface.co" else commit.author
    item: dict[str, Any] = {
        "id": commit.sha,
        "title": commit.title,
        "message": commit.body,
        "authors": [{"user": user}],
        "date": iso(commit.timestamp),
    }
    if formatted:
        item["formatted"] = {
            "title": html.escape(commit.title),
            "message": html.escape(commit.body),
        }
    return item


def iso(when: int | datetime) -> str:
    """A time as the Hub writes it: 2024-12-19T19:49:53.000Z."""
    moment = datetime.fromtimestamp(when, UTC) if isinstance(when, int) else when.astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def _front_matter(readme: bytes) -> dict[str, Any]:
    text = readme.decode(errors="replace")
    if not text.startswith("---\n"):
        return {}
    try:
        data = yaml.safe_load(text[4:].split("\n---", 1)[0])
    except yaml.YAMLError:
        return {}
    return data if isinstance(data, dict) else {}


def _config_summary(raw: bytes) -> dict[str, Any]:
    try:
        data = json.loads(raw)
    except ValueError:
        return {}
    # The Hub repeats a few config.json keys in model_info; these two are the ones clients read.
    keys = ("architectures", "model_type")
    return {k: data[k] for k in keys if k in data} if isinstance(data, dict) else {}
