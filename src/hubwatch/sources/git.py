"""GitSource: a RevisionSource over the `git` command, for any git URL or local path."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
from datetime import UTC, datetime
from pathlib import Path

from hubwatch.errors import (
    ContentTooLarge,
    ContentUnavailable,
    EntryNotFound,
    RepoNotFound,
    RevisionNotFound,
    SourceError,
    SourceUnavailable,
)
from hubwatch.models import CommitInfo, CommitSha, FileEntry, RepoRef, RepoStatus
from hubwatch.sources.base import RevisionSource

# git-lfs pointer spec: https://github.com/git-lfs/git-lfs/blob/main/docs/spec.md
# Pointers are small (spec: < 1024 bytes) text files with a version line, an oid and a size.
LFS_POINTER_MAX = 1024
_LFS_POINTER = re.compile(
    rb"^version https://git-lfs\.github\.com/spec/v1\n(?:[a-z0-9.-]+ [^\n]*\n)*?"
    rb"oid sha256:(?P<oid>[0-9a-f]{64})\n(?:[a-z0-9.-]+ [^\n]*\n)*?size (?P<size>\d+)\n"
)
_SEP = "\x1f"
_END = "\x1e"


def parse_lfs_pointer(data: bytes) -> tuple[str, int] | None:
    """(sha256, size) if `data` is a git-lfs pointer file, else None."""
    if len(data) >= LFS_POINTER_MAX:
        return None
    match = _LFS_POINTER.match(data)
    if match is None:
        return None
    return match["oid"].decode(), int(match["size"])


class GitSource(RevisionSource):
    """Reads repos through a local bare mirror kept in `mirrors_dir`, refreshed on each listing."""

    def __init__(self, mirrors_dir: Path, timeout_s: float = 600.0) -> None:
        self._mirrors = mirrors_dir
        self._timeout = timeout_s
        self._fetched: set[str] = set()

    # -- plumbing ---------------------------------------------------------------------------

    def _mirror(self, repo: RepoRef) -> Path:
        digest = hashlib.sha256(f"{repo.repo_id}\0{repo.url}".encode()).hexdigest()[:16]
        return self._mirrors / f"{repo.repo_id.replace('/', '--')}-{digest}.git"

    def _git(self, *args: str, cwd: Path | None = None, stdin: bytes | None = None) -> bytes:
        env = {
            **os.environ,
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_LFS_SKIP_SMUDGE": "1",
            "LC_ALL": "C",
            # remote helpers like ext:: run commands; a tracked URL must never do that
            "GIT_PROTOCOL_FROM_USER": "0",
            "GIT_ALLOW_PROTOCOL": "file:git:http:https:ssh",
        }
        try:
            proc = subprocess.run(
                ["git", *(["-C", str(cwd)] if cwd else []), *args],
                input=stdin,
                capture_output=True,
                timeout=self._timeout,
                env=env,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            raise SourceUnavailable(f"git {args[0]} timed out after {self._timeout:.0f}s") from exc
        if proc.returncode != 0:
            raise _GitFailed(args[0], proc.stderr.decode("utf-8", "replace").strip())
        return proc.stdout

    def _sync(self, repo: RepoRef) -> Path:
        """Clone or fetch the mirror; `git clone --mirror` makes branch names match upstream."""
        mirror = self._mirror(repo)
        url = repo.url or ""
        if not url:
            raise RepoNotFound(f"{repo.repo_id}: a git source needs a URL or path")
        if Path(url).exists():
            url = str(Path(url).resolve())
        try:
            if (mirror / "HEAD").exists():
                self._git(
                    "fetch", "--prune", "--force", "--quiet", "origin", "+refs/*:refs/*", cwd=mirror
                )
            else:
                mirror.parent.mkdir(parents=True, exist_ok=True)
                tmp = mirror.with_suffix(".tmp")
                if tmp.exists():  # left by a clone that was killed
                    shutil.rmtree(tmp)
                # "--" so that a URL starting with "-" is never read as an option
                self._git("clone", "--mirror", "--quiet", "--", url, str(tmp))
                tmp.rename(mirror)  # a crash mid-clone leaves only the .tmp folder
        except _GitFailed as exc:
            if (
                "not found" in exc.stderr
                or "does not appear to be a git" in exc.stderr
                or ("does not exist" in exc.stderr)
            ):
                raise RepoNotFound(f"{repo.repo_id}: git remote not found ({exc.stderr})") from None
            raise SourceUnavailable(f"{repo.repo_id}: git fetch failed: {exc.stderr}") from None
        self._fetched.add(repo.repo_id)
        return mirror

    def _ready(self, repo: RepoRef) -> Path:
        mirror = self._mirror(repo)
        if repo.repo_id not in self._fetched or not (mirror / "HEAD").exists():
            return self._sync(repo)
        return mirror

    # -- RevisionSource ---------------------------------------------------------------------

    def list_commits(self, repo: RepoRef) -> list[CommitInfo]:
        mirror = self._sync(repo)  # a listing is the start of a poll: always fetch
        sha = self.resolve(repo, repo.branch)
        fmt = _SEP.join(["%H", "%P", "%cI", "%an <%ae>", "%B"]) + _END
        out = self._git("log", f"--format={fmt}", sha, "--", cwd=mirror)
        commits: list[CommitInfo] = []
        for record in out.decode("utf-8", "replace").split(_END):
            record = record.strip("\n")
            if not record:
                continue
            full, parents, date, author, body = record.split(_SEP, 4)
            title, _, message = body.partition("\n")
            commits.append(
                CommitInfo(
                    sha=CommitSha(full),
                    parents=tuple(CommitSha(p) for p in parents.split()),
                    date=datetime.fromisoformat(date).astimezone(UTC),
                    authors=(author,),
                    title=title.strip(),
                    message=message.strip("\n"),
                )
            )
        return commits

    def status(self, repo: RepoRef) -> RepoStatus:
        self._sync(repo)
        return RepoStatus(head=self.resolve(repo, repo.branch), repo_id=repo.repo_id)

    def head(self, repo: RepoRef) -> CommitSha:
        """The branch head from `git ls-remote`: one round trip, nothing fetched."""
        url = repo.url or ""
        if not url:
            raise RepoNotFound(f"{repo.repo_id}: a git source needs a URL or path")
        if repo.branch.startswith("-"):
            raise RevisionNotFound(f"{repo.repo_id}: invalid branch {repo.branch!r}")
        if Path(url).exists():
            url = str(Path(url).resolve())
        try:
            out = self._git("ls-remote", "--", url, repo.branch).decode("utf-8", "replace")
        except _GitFailed as exc:
            raise SourceUnavailable(f"{repo.repo_id}: git ls-remote failed: {exc.stderr}") from None
        refs: dict[str, str] = {}
        for line in out.splitlines():
            sha, _, name = line.partition("\t")
            refs[name.strip()] = sha.strip()
        # an annotated tag's commit is on its peeled line (^{}); a lightweight tag's on its own
        for name in ("heads/{}", "tags/{}^{{}}", "tags/{}"):
            found = refs.get("refs/" + name.format(repo.branch))
            if found:
                return CommitSha(found)
        raise RevisionNotFound(f"{repo.repo_id}: branch {repo.branch!r} not found upstream")

    def resolve(self, repo: RepoRef, rev: str) -> CommitSha:
        mirror = self._ready(repo)
        if rev.startswith("-"):
            raise RevisionNotFound(f"{repo.repo_id}: invalid revision {rev!r}")
        try:
            out = self._git("rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}", cwd=mirror)
        except _GitFailed:
            raise RevisionNotFound(f"{repo.repo_id}: revision {rev!r} not found") from None
        return CommitSha(out.decode().strip())

    def list_files(self, repo: RepoRef, sha: CommitSha) -> list[FileEntry]:
        mirror = self._ready(repo)
        try:
            out = self._git("ls-tree", "-r", "-l", "-z", "--full-tree", sha, cwd=mirror)
        except _GitFailed:
            raise RevisionNotFound(f"{repo.repo_id}: revision {sha} not found") from None
        rows: list[tuple[str, str, int]] = []
        for item in out.split(b"\0"):
            if not item:
                continue
            meta, raw_path = item.split(b"\t", 1)
            _mode, kind, raw_blob, raw_size = meta.split()
            if kind != b"blob":
                continue  # submodules have no bytes here
            rows.append(
                (raw_path.decode("utf-8", "surrogateescape"), raw_blob.decode(), int(raw_size))
            )
        small = [blob for _, blob, size in rows if size < LFS_POINTER_MAX]
        pointers = {blob: parse_lfs_pointer(d) for blob, d in self._cat(mirror, small).items()}
        entries = []
        for path, blob, size in rows:
            lfs = pointers.get(blob)
            entries.append(
                FileEntry(
                    path=path,
                    size=lfs[1] if lfs else size,
                    blob_id=blob,
                    lfs_sha256=lfs[0] if lfs else None,
                )
            )
        return entries

    def _cat(self, mirror: Path, blobs: list[str]) -> dict[str, bytes]:
        """Read many blobs with one `git cat-file --batch`."""
        if not blobs:
            return {}
        out = self._git("cat-file", "--batch", cwd=mirror, stdin="\n".join(blobs).encode() + b"\n")
        result: dict[str, bytes] = {}
        pos = 0
        for blob in blobs:
            header_end = out.index(b"\n", pos)
            _, _, size = out[pos:header_end].split()
            start = header_end + 1
            result[blob] = out[start : start + int(size)]
            pos = start + int(size) + 1
        return result

    def _blob(self, repo: RepoRef, sha: CommitSha, path: str) -> tuple[Path, str, int]:
        mirror = self._ready(repo)
        try:
            out = self._git("ls-tree", "-l", "-z", "--full-tree", sha, "--", path, cwd=mirror)
        except _GitFailed:
            raise RevisionNotFound(f"{repo.repo_id}: revision {sha} not found") from None
        if not out:
            raise EntryNotFound(f"{repo.repo_id}@{sha[:12]}: no file {path!r}")
        meta = out.split(b"\t", 1)[0].split()
        return mirror, meta[2].decode(), int(meta[3])

    def read_file(self, repo: RepoRef, sha: CommitSha, path: str, max_bytes: int) -> bytes:
        mirror, blob, size = self._blob(repo, sha, path)
        if size > max_bytes:
            raise ContentTooLarge(f"{path}: {size} bytes, over the cap of {max_bytes}")
        return self._git("cat-file", "blob", blob, cwd=mirror)

    def read_range(
        self, repo: RepoRef, sha: CommitSha, path: str, start: int, length: int
    ) -> bytes:
        mirror, blob, size = self._blob(repo, sha, path)
        if size < LFS_POINTER_MAX:
            data = self._git("cat-file", "blob", blob, cwd=mirror)
            if parse_lfs_pointer(data):
                raise ContentUnavailable(f"{path}: stored in git LFS; only the pointer is in git")
            return data[start : start + length]
        # git has no range read; stream the blob and stop once the range is in hand.
        env = {**os.environ, "LC_ALL": "C"}
        with subprocess.Popen(
            ["git", "-C", str(mirror), "cat-file", "blob", blob], stdout=subprocess.PIPE, env=env
        ) as proc:
            assert proc.stdout is not None
            data = proc.stdout.read(start + length)
            proc.kill()
        return data[start : start + length]


class _GitFailed(SourceError):
    def __init__(self, command: str, stderr: str) -> None:
        super().__init__(f"git {command} failed: {stderr}")
        self.stderr = stderr
