"""The revision a poll stored last, kept in memory: the next one's base and known reads."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable

from hubwatch.formats.view import RevisionView
from hubwatch.models import (
    CommitSha,
    ContentSha,
    Estimate,
    ReadResult,
    Snapshot,
    StoredFile,
)
from hubwatch.store.known import REUSABLE, KnownContent
from hubwatch.tracker.snapshot import SHARDS_MISSING


class LastStored:
    """The revision a poll stored last, as the store would read it back: the next revision's
    base in a backfill (each commit is stored right after its first parent), so its view is not
    read back from the store, and the JSON its differs parsed is not parsed again.

    Holds one revision; `view` and `files` answer None for any other sha (read it from the
    store then). Only a revision stored whole is held: not one the store refused in part.
    """

    __slots__ = ("_estimates", "_files", "_offered", "_sha", "_snapshot", "_view")

    def __init__(self) -> None:
        self._offered: RevisionView | None = None
        self._sha: CommitSha | None = None
        self._snapshot: Snapshot | None = None
        self._view: RevisionView | None = None
        self._files: list[StoredFile] | None = None
        # the estimate as read back from its JSON, for the last estimate object stored: most
        # revisions of a history share one (tracker/estimate.py caches them by their inputs)
        self._estimates: tuple[Estimate, Estimate] | None = None

    def offer(self, view: RevisionView) -> None:
        """The view the differs just read of the snapshot about to be stored."""
        self._offered = view

    def stored(self, snapshot: Snapshot, whole: bool) -> None:
        """`snapshot` is what was stored (`whole`: nothing of it was left out); hold it."""
        offered, self._offered = self._offered, None
        self._sha = self._snapshot = self._view = self._files = None
        if not whole or offered is None or offered.sha != snapshot.commit.sha:
            return
        if any(entry.problem is not None for entry in snapshot.files):
            return  # the store keeps no problem: its view would differ; rare, read it back
        try:
            card = json.loads(json.dumps(snapshot.card)) if snapshot.card is not None else None
            self._view = offered.as_stored(card, self._read_back(snapshot.estimate))
        except (TypeError, ValueError):  # not as the store has it: the next diff reads it back
            self.forget()
            return
        self._sha, self._snapshot = snapshot.commit.sha, snapshot

    def forget(self) -> None:
        """Hold nothing (the revision offered was not stored)."""
        self._offered = self._sha = self._snapshot = self._view = self._files = None

    def view(self, sha: CommitSha) -> RevisionView | None:
        return self._view if sha == self._sha else None

    def files(self, sha: CommitSha) -> list[StoredFile] | None:
        """The held revision's files as `Store.files` returns them, when `sha` is held."""
        if sha != self._sha or self._snapshot is None:
            return None
        if self._files is None:
            self._files = stored_files(self._snapshot)
        return self._files

    def known(self, store: KnownContent) -> KnownContent:
        """`store`'s known reads, those of the held revision answered from memory."""
        return HeldKnown(store, self.files(self._sha) if self._sha else None)

    def _read_back(self, estimate: Estimate | None) -> Estimate | None:
        """`estimate` as the store reads it back from its JSON column."""
        if estimate is None:
            return None
        if self._estimates is None or self._estimates[0] is not estimate:
            back = Estimate.from_json(json.loads(json.dumps(estimate.to_json())))
            self._estimates = (estimate, back)
        return self._estimates[1]


class HeldKnown(KnownContent):
    """Known reads, looked up first among the held revision's files, then in the store.

    The same answers as the store's: a stored revision recorded either the store's answer for
    a blob (reused) or the first read of it (read afresh, as nothing was recorded), except
    where it marked an index whose shards are missing; those are left to the store.
    """

    def __init__(self, store: KnownContent, files: Iterable[StoredFile] | None) -> None:
        self._store = store
        self._contents: dict[tuple[str, str], ReadResult] = {}
        self._headers: dict[str, ReadResult] = {}
        for f in files or ():
            if f.content_status in REUSABLE and SHARDS_MISSING not in (f.content_error or ""):
                read = ReadResult(f.content_status, sha256=f.content_sha256, error=f.content_error)
                self._contents[f.path, f.blob_id] = read
            if f.header_status in REUSABLE:
                read = ReadResult(f.header_status, sha256=f.header_sha256, error=f.header_error)
                self._headers.setdefault(f.lfs_sha256 or f.blob_id, read)

    def content(self, path: str, blob_id: str) -> ReadResult | None:
        return self._contents.get((path, blob_id)) or self._store.content(path, blob_id)

    def header(self, object_id: str) -> ReadResult | None:
        return self._headers.get(object_id) or self._store.header(object_id)

    def blob(self, sha256: ContentSha) -> bytes:
        return self._store.blob(sha256)

    def contents(self, wanted: Iterable[tuple[str, str]]) -> dict[tuple[str, str], ReadResult]:
        keys = set(wanted)
        found = {key: self._contents[key] for key in keys if key in self._contents}
        rest = keys - found.keys()
        return found | (self._store.contents(rest) if rest else {})

    def headers(self, object_ids: Iterable[str]) -> dict[str, ReadResult]:
        keys = set(object_ids)
        found = {key: self._headers[key] for key in keys if key in self._headers}
        rest = keys - found.keys()
        return found | (self._store.headers(rest) if rest else {})


def stored_files(snapshot: Snapshot) -> list[StoredFile]:
    """The snapshot's files as the store records them (`Store.files`: by path)."""
    files = []
    for entry in sorted(snapshot.files, key=lambda entry: entry.path):
        content, header = snapshot.contents.get(entry.path), snapshot.headers.get(entry.path)
        files.append(
            StoredFile(
                path=entry.path,
                size=entry.size,
                blob_id=entry.blob_id,
                lfs_sha256=entry.lfs_sha256,
                content_sha256=_sha256(content),
                content_status=content.status if content else None,
                content_error=content.error if content else None,
                header_sha256=_sha256(header),
                header_status=header.status if header else None,
                header_error=header.error if header else None,
                xet_hash=entry.xet_hash,
            )
        )
    return files


def _sha256(result: ReadResult | None) -> ContentSha | None:
    if result is None:
        return None
    if result.data is not None and result.sha256 is None:
        return ContentSha(hashlib.sha256(result.data).hexdigest())
    return result.sha256
