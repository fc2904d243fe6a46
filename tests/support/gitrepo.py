"""Build deterministic git repositories (with git-LFS pointers and safetensors files) for tests."""

from __future__ import annotations

import fnmatch
import hashlib
import json
import math
import struct
import subprocess
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

#: What the Hub's default .gitattributes stores with LFS (a subset that matters for model repos).
DEFAULT_LFS_PATTERNS: tuple[str, ...] = ("*.safetensors", "*.bin", "*.pt", "*.pth", "*.gguf")
LFS_SPEC = b"version https://git-lfs.github.com/spec/v1\n"
_FIRST_DATE = datetime(2024, 1, 1, tzinfo=UTC)
_BLOB_MARKS = 1_000_000_000
"""The first fast-import mark of a blob sent once for several paths (commits are 1, 2, …)."""
# For porcelain commands that tests run through `git()` on a machine without a git identity.
_IDENTITY = (
    "-c", "user.name=hubwatch-tester", "-c", "user.email=tester@example.com",
    "-c", "commit.gpgsign=false", "-c", "tag.gpgsign=false",
)  # fmt: skip
_DTYPE_SIZES = {
    "BOOL": 1, "U8": 1, "I8": 1, "F8_E4M3": 1, "F8_E5M2": 1,
    "U16": 2, "I16": 2, "F16": 2, "BF16": 2,
    "U32": 4, "I32": 4, "F32": 4,
    "U64": 8, "I64": 8, "F64": 8,
}  # fmt: skip


@dataclass(frozen=True)
class CommitSpec:
    """One commit: files to write (bytes) or delete (None), on top of the branch's tip."""

    files: Mapping[str, bytes | None]
    message: str = "Update files"
    author: str = "hubwatch-tester"
    """A Hub user name, or "Name <email>"; a bare name gets a users.noreply.huggingface.co email."""
    date: datetime | None = None
    """Author and committer date (naive = UTC); None: an hour after the parent, or 2024-01-01."""
    branch: str = "main"
    """A missing branch starts from the tip of HEAD's branch, like `git checkout -b`."""
    tag: str | None = None
    """A lightweight tag to put on this commit."""
    merge: str | None = None
    """A branch merged in: its tip becomes the second parent. The tree is still the first
    parent's with `files` applied, so list what the merge brings."""


def git(repo: Path, *args: str, stdin: bytes | None = None) -> str:
    """Run `git -C repo args...` and return its stdout (stripped); raise on failure."""
    done = subprocess.run(
        ["git", "-C", str(repo), *_IDENTITY, *args],
        input=stdin,
        capture_output=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} failed: {done.stderr.decode(errors='replace')}")
    return done.stdout.decode().strip()


def lfs_pointer(content: bytes) -> bytes:
    """The git-LFS pointer file that stands for `content`."""
    oid = hashlib.sha256(content).hexdigest()
    return LFS_SPEC + f"oid sha256:{oid}\nsize {len(content)}\n".encode()


def safetensors_bytes(
    tensors: Mapping[str, tuple[str, Sequence[int]]], *, metadata: Mapping[str, str] | None = None
) -> bytes:
    """A valid safetensors file holding zero-filled `tensors` ({name: (dtype, shape)}), in order."""
    header: dict[str, object] = {"__metadata__": dict(metadata)} if metadata else {}
    offset = 0
    for name, (dtype, shape) in tensors.items():
        n = _DTYPE_SIZES[dtype] * math.prod(shape)
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + n]}
        offset += n
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)  # the reference writer pads the header to 8-byte alignment
    return struct.pack("<Q", len(raw)) + raw + bytes(offset)


def make_repo(
    path: Path,
    commits: Iterable[CommitSpec],
    *,
    bare: bool = False,
    lfs_dir: Path | None = None,
    lfs_patterns: Sequence[str] = DEFAULT_LFS_PATTERNS,
) -> list[str]:
    """Create a git repository at `path` from `commits` (oldest first); return their shas in order.

    Files whose name matches `lfs_patterns` are committed as LFS pointers and their content is
    written to `lfs_dir/<sha256>` (when `lfs_dir` is given), like `git lfs push` would upload it.
    """
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main", *(["--bare"] if bare else []))
    return add_commits(path, commits, lfs_dir=lfs_dir, lfs_patterns=lfs_patterns)


def add_commits(
    path: Path,
    commits: Iterable[CommitSpec],
    *,
    lfs_dir: Path | None = None,
    lfs_patterns: Sequence[str] = DEFAULT_LFS_PATTERNS,
) -> list[str]:
    """Append `commits` to the repository at `path` (see `make_repo`); return their shas."""
    # NOTE: one `git fast-import` writes every commit without a work tree, so bare and plain
    # repos are built alike, and fast (benchmarks build long histories).
    head = git(path, "symbolic-ref", "--short", "HEAD")
    tips: dict[str, tuple[str, datetime]] = {}  # branch -> (sha or :mark, its date)

    def tip(branch: str) -> tuple[str, datetime] | None:
        if branch not in tips:
            fmt = "--format=%(objectname) %(committerdate:unix)"
            found = git(path, "for-each-ref", fmt, f"refs/heads/{branch}")
            if not found:
                return None
            sha, seconds = found.split()
            tips[branch] = (sha, datetime.fromtimestamp(int(seconds), UTC))
        return tips[branch]

    stream = []
    specs = list(commits)
    blobs: dict[int, tuple[bytes, int]] = {}  # id(content) -> (content, its blob mark)
    for mark, spec in enumerate(specs, 1):
        parent = tip(spec.branch) or tip(head)
        when = spec.date or (parent[1] + timedelta(hours=1) if parent else _FIRST_DATE)
        when = when if when.tzinfo else when.replace(tzinfo=UTC)
        merged = tip(spec.merge) if spec.merge else None
        parents = (parent and parent[0], merged and merged[0])
        stream.append(_commit_block(spec, mark, parents, when, lfs_dir, lfs_patterns, blobs))
        tips[spec.branch] = (f":{mark}", when)
        if spec.tag:
            stream.append(f"reset refs/tags/{spec.tag}\nfrom :{mark}\n\n".encode())
    with tempfile.TemporaryDirectory() as tmp:
        marks = Path(tmp) / "marks"
        git(path, "fast-import", "--quiet", f"--export-marks={marks}", stdin=b"".join(stream))
        shas = dict(line.split() for line in marks.read_text().splitlines())
    # Keep a plain repo's work tree in step, for tests that go on with porcelain commands.
    if git(path, "rev-parse", "--is-bare-repository") == "false" and tip(head):
        git(path, "reset", "-q", "--hard")
    return [shas[f":{mark}"] for mark in range(1, len(specs) + 1)]


def _commit_block(
    spec: CommitSpec,
    mark: int,
    parents: tuple[str | None, str | None],
    when: datetime,
    lfs_dir: Path | None,
    lfs_patterns: Sequence[str],
    blobs: dict[int, tuple[bytes, int]],
) -> bytes:
    parent, merged = parents
    sent = []  # blob commands, before the commit that names them
    name, _, email = spec.author.partition(" <")
    email = email.rstrip(">") or f"{name}@users.noreply.huggingface.co"
    ident = f"{name} <{email}> {int(when.timestamp())} {when.strftime('%z')}"
    message = spec.message.encode()
    out = [
        f"commit refs/heads/{spec.branch}\nmark :{mark}\n".encode(),
        f"author {ident}\ncommitter {ident}\ndata {len(message)}\n".encode() + message + b"\n",
    ]
    if parent:
        out.append(f"from {parent}\n".encode())
    if merged:
        out.append(f"merge {merged}\n".encode())
    for file_path, content in spec.files.items():
        if content is None:
            out.append(f"D {file_path}\n".encode())
            continue
        if any(fnmatch.fnmatch(Path(file_path).name, p) for p in lfs_patterns):
            if lfs_dir is not None:
                lfs_dir.mkdir(parents=True, exist_ok=True)
                (lfs_dir / hashlib.sha256(content).hexdigest()).write_bytes(content)
            content = lfs_pointer(content)
            out.append(f"M 100644 inline {file_path}\ndata {len(content)}\n".encode())
            out.append(content + b"\n")
            continue
        # NOTE: the same bytes under several paths (one blob in a hundred folders) is sent to
        # fast-import once, as a marked blob; its marks start past every commit's.
        if id(content) not in blobs:
            blobs[id(content)] = (content, _BLOB_MARKS + len(blobs))
            blob_mark = blobs[id(content)][1]
            sent.append(f"blob\nmark :{blob_mark}\ndata {len(content)}\n".encode() + content)
            sent.append(b"\n")
        out.append(f"M 100644 :{blobs[id(content)][1]} {file_path}\n".encode())
    return b"".join(sent) + b"".join(out) + b"\n"
