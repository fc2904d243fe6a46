"""GitSource: a RevisionSource over the `git` command, for any git URL or local path."""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from hubwatch.errors import (
    ContentTooLarge,
    ContentUnavailable,
    EntryNotFound,
    GitUrlRefused,
    RepoNotFound,
    RevisionNotFound,
    SourceUnavailable,
)
from hubwatch.models import FOLLOW_HEAD, CommitInfo, CommitSha, FileEntry, RepoRef, RepoStatus
from hubwatch.sources.base import RevisionSource
from hubwatch.sources.gitbatch import CatFileBatch
from hubwatch.sources.gitcmd import (
    GitFailed,
    GitRunner,
    damaged,
    git_env,
    missing_object,
    remote_error,
)
from hubwatch.sources.gitparse import LFS_POINTER_MAX, parse_commit, parse_lfs_pointer
from hubwatch.sources.gittree import Listing, list_tree
from hubwatch.sources.giturls import GitUrlPolicy

__all__ = ["LFS_POINTER_MAX", "GitSource", "parse_lfs_pointer"]

_LISTINGS_KEPT = 8
"""Trees kept listed (the last of each repo read), so a snapshot's reads find blobs by id."""
_READ_WHOLE_MAX = 8 * 1024 * 1024
"""Blobs up to this size are range-read whole through the snapshot's `cat-file --batch`;
larger ones (weights kept in git, not LFS) are streamed and cut off after the range."""
LS_REMOTE_S = 60.0
"""At most this for one `git ls-remote` (one round trip; a clone or fetch may take
HUBWATCH_GIT_TIMEOUT_S): a black-holed git host costs discovery a minute, not ten."""
_FRESH_S = 30.0
"""How long a sync by `status()` spares the next `list_commits()` (or, after a clone, the
next `status()`) another fetch: both belong to the same poll."""


class GitSource(RevisionSource):
    """Reads repos through a local bare mirror kept in `mirrors_dir`, refreshed on each listing.

    Commits are read as raw objects and trees as NUL-separated listings, and files by blob id:
    no byte of a message, author or file name is ever split on or read as a pathspec.
    """

    holds_weights = True  # a weight file kept in git (not LFS) is a blob in the mirror

    def __init__(
        self,
        mirrors_dir: Path,
        timeout_s: float = 600.0,
        credentials: Mapping[str, str] | None = None,
        urls: GitUrlPolicy | None = None,
    ) -> None:
        """`credentials`: `{host: "user:token"}` sent to that host over https only. `urls`:
        which URLs may be fetched, checked before each clone, fetch and `ls-remote` (default:
        local paths, and hosts resolving to globally routable addresses only)."""
        self._urls = urls or GitUrlPolicy()
        self._mirrors = mirrors_dir
        self._timeout = timeout_s
        self._git = GitRunner(timeout_s, credentials)
        self._fetched: set[str] = set()
        self._listings: dict[str, Listing] = {}  # repo id -> the last tree listed
        # (repo id, thread) -> the reader of the snapshot that thread is taking
        self._readers: dict[tuple[str, int], CatFileBatch] = {}
        self._fresh: dict[str, tuple[str, float]] = {}  # repo id -> (what a sync spares, when)
        self._lock = threading.Lock()

    # -- plumbing ---------------------------------------------------------------------------

    def _mirror(self, repo: RepoRef) -> Path:
        digest = hashlib.sha256(f"{repo.repo_id}\0{repo.url}".encode()).hexdigest()[:16]
        return self._mirrors / f"{repo.repo_id.replace('/', '--')}-{digest}.git"

    def _sync(self, repo: RepoRef) -> Path:
        """Clone or fetch the mirror; `git clone --mirror` makes branch names match upstream."""
        mirror = self._mirror(repo)
        url, options = self._remote(repo)
        try:
            if (mirror / "HEAD").exists():
                self._git(
                    *("fetch", "--prune", "--force", "--quiet", "origin", "+refs/*:refs/*"),
                    cwd=mirror,
                    options=options,
                )
                if repo.branch == FOLLOW_HEAD:
                    self._follow_head(mirror, options)
            else:
                self._clone(url, mirror, options)
        except GitFailed as exc:
            raise remote_error(repo, exc) from None
        self._fetched.add(repo.repo_id)
        with self._lock:
            self._listings.pop(repo.repo_id, None)
        return mirror

    def _spared(self, repo: RepoRef, *by: str) -> bool:
        """Whether `status()` synced the mirror (a "clone" or a fetch: "status") so lately that
        this next step of the same poll need not fetch again. A sync spares one step only."""
        with self._lock:
            what, at = self._fresh.pop(repo.repo_id, ("", 0.0))
        recent = time.monotonic() - at < _FRESH_S
        return what in by and recent and (self._mirror(repo) / "HEAD").exists()

    def _follow_head(self, mirror: Path, options: list[str]) -> None:
        """Point the mirror's HEAD where the remote's points now: a clone sets it, a fetch
        leaves it, and a repo tracked without a branch follows the remote's default one."""
        out = self._git(
            *("ls-remote", "--symref", "origin", "HEAD"),
            cwd=mirror,
            options=options,
            timeout_s=LS_REMOTE_S,
        )
        for line in out.decode("utf-8", "replace").splitlines():
            target, _, name = line.removeprefix("ref: ").partition("\t")
            if line.startswith("ref: ") and name == "HEAD" and target.startswith("refs/heads/"):
                self._git("symbolic-ref", "HEAD", target, cwd=mirror)
                return

    def _remote(self, repo: RepoRef) -> tuple[str, list[str]]:
        """The URL git is given for `repo` (a local path made absolute) and the options that
        hold it to the addresses checked; GitUrlRefused where it may not be fetched."""
        url = repo.url or ""
        if not url:
            raise RepoNotFound(f"{repo.repo_id}: a git source needs a URL or path")
        if Path(url).exists():
            url = str(Path(url).resolve())
        try:
            return url, self._urls.check(url).git_options()
        except GitUrlRefused as exc:
            raise GitUrlRefused(f"{repo.repo_id}: {exc}") from None

    def _clone(self, url: str, mirror: Path, options: list[str]) -> None:
        """Clone into a folder beside the mirror and rename it on success: no half-made mirror."""
        mirror.parent.mkdir(parents=True, exist_ok=True)
        self._remove_stale_clones(mirror)
        tmp = Path(tempfile.mkdtemp(prefix=f"{mirror.name}.clone-", dir=mirror.parent))
        try:
            # "--" so that a URL starting with "-" is never read as an option
            clone = ("clone", "--mirror", "--quiet", "--", url, str(tmp / "mirror.git"))
            self._git(*clone, options=options)
            if mirror.exists() and not (mirror / "HEAD").exists():
                shutil.rmtree(mirror)  # an unfinished mirror left by an older hubwatch
            (tmp / "mirror.git").rename(mirror)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def _remove_stale_clones(self, mirror: Path) -> None:
        """Folders of clones that were killed: older than any clone can run, so none is live."""
        cutoff = time.time() - 2 * self._timeout
        for stale in mirror.parent.glob(f"{_glob_escape(mirror.name)}.clone-*"):
            if stale.stat().st_mtime < cutoff:
                shutil.rmtree(stale, ignore_errors=True)

    def _ready(self, repo: RepoRef) -> Path:
        mirror = self._mirror(repo)
        if repo.repo_id not in self._fetched or not (mirror / "HEAD").exists():
            return self._sync(repo)
        return mirror

    # -- RevisionSource ---------------------------------------------------------------------

    def list_commits(self, repo: RepoRef) -> list[CommitInfo]:
        # a listing is the start of a poll: it fetches, unless the poll's status() just did
        spared = self._spared(repo, "clone", "status")
        mirror = self._mirror(repo) if spared else self._sync(repo)
        sha = self.resolve(repo, repo.branch)
        try:
            # object ids only, one a line: nothing a commit holds can forge a record
            shas = self._git("rev-list", sha, "--", cwd=mirror).decode("ascii").split()
        except GitFailed as exc:
            raise damaged(repo, exc.stderr) from None
        commits = []
        for obj in self._git.batch(mirror, shas):
            if obj.kind != "commit":
                raise damaged(repo, f"commit {missing_object(obj.name)}")
            commits.append(parse_commit(obj.name, obj.data))
        return commits

    def status(self, repo: RepoRef) -> RepoStatus:
        # `track()` asks twice (before and after adding the repo): its clone serves both
        cloned = False
        if not self._spared(repo, "clone"):
            cloned = not (self._mirror(repo) / "HEAD").exists()
            self._sync(repo)
        status = RepoStatus(head=self.resolve(repo, repo.branch), repo_id=repo.repo_id)
        with self._lock:
            self._fresh[repo.repo_id] = ("clone" if cloned else "status", time.monotonic())
        return status

    def head(self, repo: RepoRef) -> CommitSha:
        """The branch head from `git ls-remote`: one round trip, nothing fetched."""
        if repo.branch.startswith("-"):
            raise RevisionNotFound(f"{repo.repo_id}: invalid branch {repo.branch!r}")
        url, options = self._remote(repo)
        try:
            raw = self._git(
                "ls-remote", "--", url, repo.branch, options=options, timeout_s=LS_REMOTE_S
            )
        except GitFailed as exc:
            raise SourceUnavailable(f"{repo.repo_id}: git ls-remote failed: {exc.stderr}") from None
        refs: dict[str, str] = {}
        for line in raw.decode("utf-8", "replace").splitlines():
            sha, _, name = line.partition("\t")
            refs[name.strip()] = sha.strip()
        if repo.branch == FOLLOW_HEAD and refs.get("HEAD"):
            return CommitSha(refs["HEAD"])  # the remote's default branch, wherever it is
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
        except GitFailed:
            self._check_ref_target(repo, mirror, rev)
            raise RevisionNotFound(f"{repo.repo_id}: revision {rev!r} not found") from None
        return CommitSha(out.decode().strip())

    def _check_ref_target(self, repo: RepoRef, mirror: Path, rev: str) -> None:
        """RepositoryDamaged if `rev` is a ref (a branch, a tag) to an object the mirror lacks."""
        try:
            ref = self._git(
                "rev-parse", "--verify", "--quiet", "--symbolic-full-name", rev, cwd=mirror
            ).strip()
            if not ref.startswith(b"refs/"):
                return  # a sha nobody has is not found, not damage
            oid = self._git("rev-parse", "--verify", "--quiet", ref.decode(), cwd=mirror).strip()
        except GitFailed:
            return
        (obj,) = self._git.batch(mirror, [oid.decode()], check=True)
        if obj.kind is None:
            raise damaged(repo, f"{rev[:80]} points to {missing_object(obj.name)}")

    @contextmanager
    def reading(self, repo: RepoRef, sha: CommitSha) -> Iterator[None]:
        """The listing and every read of this block (this thread's) share one `git cat-file
        --batch`, started on the first read and ended with the block."""
        reader = CatFileBatch(self._mirror(repo), self._timeout)
        key = (repo.repo_id, threading.get_ident())
        with self._lock:
            mine = self._readers.setdefault(key, reader) is reader  # an outer block's, if any
        try:
            yield
        finally:
            if mine:
                with self._lock:
                    del self._readers[key]
                reader.close()

    def _reader(self, repo: RepoRef) -> CatFileBatch | None:
        return self._readers.get((repo.repo_id, threading.get_ident()))

    def list_files(self, repo: RepoRef, sha: CommitSha) -> list[FileEntry]:
        return list(self._listing(repo, sha).entries)

    def _listing(self, repo: RepoRef, sha: CommitSha) -> Listing:
        listing = self._listings.get(repo.repo_id)
        if listing is None or listing.sha != sha:
            listing = list_tree(self._git, repo, self._ready(repo), sha, self._reader(repo))
            with self._lock:  # one source may serve several polling threads
                self._listings.pop(repo.repo_id, None)
                self._listings[repo.repo_id] = listing
                while len(self._listings) > _LISTINGS_KEPT:
                    self._listings.pop(next(iter(self._listings)))
        return listing

    def _blob(self, repo: RepoRef, sha: CommitSha, path: str) -> tuple[Path, FileEntry, int]:
        """The file's entry and git blob size, from the tree listing: paths never reach git."""
        found = self._listing(repo, sha).blobs.get(path)
        if found is None:
            raise EntryNotFound(f"{repo.repo_id}@{sha[:12]}: no file {path!r}")
        entry, size = found
        if entry.problem is not None:
            raise ContentUnavailable(entry.problem)
        return self._mirror(repo), entry, size

    def _cat_blob(self, repo: RepoRef, mirror: Path, blob: str) -> bytes:
        reader = self._reader(repo)
        if reader is not None:
            found = reader.read(blob)
            if found.kind != "blob":
                raise ContentUnavailable(missing_object(blob))
            return found.data
        try:
            return self._git("cat-file", "blob", blob, cwd=mirror)
        except GitFailed:
            raise ContentUnavailable(missing_object(blob)) from None

    def read_file(self, repo: RepoRef, sha: CommitSha, path: str, max_bytes: int) -> bytes:
        mirror, entry, size = self._blob(repo, sha, path)
        if entry.lfs_sha256 is not None:
            # The pointer is not the file: a tokenizer.json in LFS read as its pointer would be
            # recorded as invalid JSON.
            raise ContentUnavailable(f"{path}: stored in git LFS; only the pointer is in git")
        if size > max_bytes:
            raise ContentTooLarge(f"{path}: {size} bytes, over the cap of {max_bytes}")
        return self._cat_blob(repo, mirror, entry.blob_id)

    def read_range(
        self, repo: RepoRef, sha: CommitSha, path: str, start: int, length: int
    ) -> bytes:
        mirror, entry, size = self._blob(repo, sha, path)
        if entry.lfs_sha256 is not None:
            raise ContentUnavailable(f"{path}: stored in git LFS; only the pointer is in git")
        if size < LFS_POINTER_MAX or (size <= _READ_WHOLE_MAX and self._reader(repo)):
            return self._cat_blob(repo, mirror, entry.blob_id)[start : start + length]
        # git has no range read; stream the blob and stop once the range is in hand.
        with subprocess.Popen(
            ["git", "-C", str(mirror), "cat-file", "blob", entry.blob_id],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=git_env(),
        ) as proc:
            assert proc.stdout is not None
            data = proc.stdout.read(start + length)
            proc.kill()
        return data[start : start + length]


def _glob_escape(name: str) -> str:
    """`name` matched literally by Path.glob."""
    return re.sub(r"([*?\[])", r"[\1]", name)
