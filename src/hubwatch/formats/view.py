"""A read-only view of one revision (files, contents, headers, card) that differs compare."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from hubwatch.caching import Memo, Slot
from hubwatch.errors import UnsafeContent
from hubwatch.formats.json import loads_bounded
from hubwatch.models import (
    ContentSha,
    Estimate,
    FileEntry,
    ReadResult,
    ReadStatus,
    Snapshot,
    StoredFile,
)
from hubwatch.models.gguf import GGUFHeader, GGUFModel, group_models, is_gguf

BlobLoader = Callable[[ContentSha], bytes]
"""Loads stored bytes by their sha256 (`Store.blob`)."""
TermsLoader = Callable[[str], bytes | None]
"""Loads the kept Xet terms of a file by its Xet hash (`Store.xet_terms`), None if not kept."""

_MISSING = object()


class RevisionView:
    """What a differ may read of one revision; every read is cached and never raises.

    Contents and headers that were not stored (over the cap, unavailable, failed) read as None.
    """

    __slots__ = (
        "_cache",
        "_contents",
        "_digests",
        "_headers",
        "_reconstructions",
        "_terms",
        "_load",
        "card",
        "estimate",
        "files",
        "memo",
        "sha",
    )

    def __init__(
        self,
        files: Iterable[FileEntry],
        contents: Mapping[str, ReadResult] | None = None,
        headers: Mapping[str, ReadResult] | None = None,
        card: Mapping[str, object] | None = None,
        load: BlobLoader | None = None,
        sha: str | None = None,
        estimate: Estimate | None = None,
        memo: Memo | None = None,
        reconstructions: Mapping[str, ReadResult] | None = None,
        digests: Mapping[str, ReadResult] | None = None,
        terms: TermsLoader | None = None,
    ) -> None:
        self.files: dict[str, FileEntry] = {entry.path: entry for entry in files}
        self._reconstructions = dict(reconstructions or {})
        self._digests = dict(digests or {})
        self._terms = terms
        self.estimate = estimate
        """The estimator's stored result for this revision; None without a config."""
        self.card: Mapping[str, object] = card or {}
        self.sha = sha
        self._contents = dict(contents or {})
        self._headers = dict(headers or {})
        self._load = load
        self._cache: dict[tuple[str, str], Any] = {}
        self.memo = memo if memo is not None else Memo()
        """What is derived from content, shared with the other views its maker made: a differ
        keeps there what it derives from the bytes (parsed JSON, a tokenizer taken apart)."""

    @classmethod
    def empty(cls, memo: Memo | None = None) -> RevisionView:
        """The revision before a root commit: no files at all."""
        return cls((), memo=memo)

    @classmethod
    def of_snapshot(
        cls, snapshot: Snapshot, load: BlobLoader | None = None, memo: Memo | None = None
    ) -> RevisionView:
        """A view of a snapshot about to be stored (bytes in hand, or already in the store)."""
        return cls(
            snapshot.files,
            snapshot.contents,
            snapshot.headers,
            snapshot.card,
            load,
            snapshot.commit.sha,
            snapshot.estimate,
            memo,
            snapshot.reconstructions,
            snapshot.digests,
        )

    @classmethod
    def of_stored(
        cls,
        files: Iterable[StoredFile],
        card: Mapping[str, object] | None,
        load: BlobLoader,
        sha: str | None = None,
        estimate: Estimate | None = None,
        memo: Memo | None = None,
        terms: TermsLoader | None = None,
    ) -> RevisionView:
        """A view of a stored revision, reading contents lazily through `load` (and the kept
        Xet terms of its weight files through `terms`)."""
        entries, contents, headers = [], {}, {}
        for f in files:
            entries.append(FileEntry(f.path, f.size, f.blob_id, f.lfs_sha256, xet_hash=f.xet_hash))
            if f.content_status is not None:
                contents[f.path] = ReadResult(
                    f.content_status, sha256=f.content_sha256, error=f.content_error
                )
            if f.header_status is not None:
                headers[f.path] = ReadResult(
                    f.header_status, sha256=f.header_sha256, error=f.header_error
                )
        return cls(entries, contents, headers, card, load, sha, estimate, memo, terms=terms)

    def as_stored(
        self, card: Mapping[str, object] | None, estimate: Estimate | None
    ) -> RevisionView:
        """This view of a snapshot as `of_stored` reads it back once stored: entries by path
        without their problem, and the `card` and `estimate` as read back. What was parsed so
        far is kept (the bytes are the same), so the next revision's diff does not parse it."""
        entries = sorted(self.files.values(), key=lambda entry: entry.path)
        view = RevisionView(
            (
                FileEntry(e.path, e.size, e.blob_id, e.lfs_sha256, xet_hash=e.xet_hash)
                for e in entries
            ),
            self._contents,
            self._headers,
            card,
            self._load,
            self.sha,
            estimate,
            self.memo,
            self._reconstructions,
            self._digests,
        )
        view._cache = self._cache
        return view

    # -- reads ------------------------------------------------------------------------------

    def status(self, path: str) -> ReadStatus | None:
        """What became of reading `path`'s content, when it was read at all."""
        result = self._contents.get(path)
        return result.status if result else None

    def read_error(self, path: str) -> str | None:
        """Why `path`'s content could not be read (or is not what its name promises), if so."""
        result = self._contents.get(path)
        return result.error if result else None

    def reconstruction(self, xet_hash: str) -> ReadResult | None:
        """The CAS server's reconstruction of a Xet file (its terms' JSON), when the tracker
        asked for it (a weight file that changed) or the store kept it; None otherwise."""
        found = self._reconstructions.get(xet_hash)
        if found is None and self._terms is not None and ("terms", xet_hash) not in self._cache:
            self._cache["terms", xet_hash] = None  # asked once per view, found or not
            try:
                kept = self._terms(xet_hash)
            except Exception:  # a store that cannot answer: no terms, not a failed diff
                kept = None
            if kept is not None:
                found = self._reconstructions[xet_hash] = ReadResult(ReadStatus.STORED, data=kept)
        return found

    def digests(self, blob_id: str) -> ReadResult | None:
        """The sha256 of each tensor of a weight file's git blob (`formats.tensorbytes`), when
        the tracker read it whole (a weight file without Xet that changed); None otherwise."""
        return self._digests.get(blob_id)

    def header_status(self, path: str) -> ReadStatus | None:
        result = self._headers.get(path)
        return result.status if result else None

    def raw(self, path: str) -> bytes | None:
        """The stored bytes of `path` (stored or invalid reads), or None."""
        return self._bytes("raw", self._contents.get(path), path)

    def content_sha(self, path: str) -> str | None:
        """The sha256 (hex) of `path`'s content when it was stored or read, else None: as the
        store recorded it, or hashed once per view; a key for what is derived from the bytes."""
        return self._sha("sha", self._contents.get(path), path)

    def header_sha(self, path: str) -> str | None:
        """The sha256 (hex) of `path`'s stored header, when it was read; see `content_sha`."""
        return self._sha("hsha", self._headers.get(path), path)

    def _sha(self, kind: str, result: ReadResult | None, path: str) -> str | None:
        if result is None or result.status not in (ReadStatus.STORED, ReadStatus.INVALID):
            return None
        if result.sha256 is not None:
            return result.sha256
        data = result.data
        if data is None:
            return None
        # by the bytes object: one blob under many paths (a snapshot reads it once) is hashed
        # once; the object lives as long as the view, which holds the read
        key = (kind, str(id(data)))
        if key not in self._cache:
            self._cache[key] = hashlib.sha256(data).hexdigest()
        sha: str | None = self._cache[key]
        return sha

    def text(self, path: str) -> str | None:
        """`path` decoded as UTF-8 (undecodable bytes replaced), or None."""
        key = ("text", _content_key(self.content_sha(path), path))  # once per content
        if key not in self._cache:
            raw = self.raw(path)
            self._cache[key] = None if raw is None else raw.decode("utf-8", "replace")
        text: str | None = self._cache[key]
        return text

    def json(self, path: str) -> Any:
        """`path` parsed as JSON, or None when absent, unread or not JSON."""
        return self._parsed("json", path, self.raw, self.content_sha)

    def header(self, path: str) -> dict[str, Any] | None:
        """The parsed safetensors header of `path`, or None when it was not read."""
        value = self._parsed(
            "header",
            path,
            lambda p: self._bytes("hraw", self._headers.get(p), p),
            self.header_sha,
        )
        return value if isinstance(value, dict) else None

    def gguf_header(self, path: str) -> GGUFHeader | None:
        """The GGUF header of `path` (`models.gguf`), or None when it was not read."""
        key = ("gguf", path)
        if key not in self._cache:
            self._cache[key] = GGUFHeader.from_json(self.header(path)) if is_gguf(path) else None
        header: GGUFHeader | None = self._cache[key]
        return header

    def gguf_models(self) -> dict[str, GGUFModel]:
        """Every GGUF model of the revision by name, split files joined (`models.gguf`)."""
        key = ("gguf_models", "")
        if key not in self._cache:
            paths = [path for path in self.files if is_gguf(path)]
            headers = {path: self.gguf_header(path) for path in paths}
            self._cache[key] = group_models(paths, headers)
        models: dict[str, GGUFModel] = self._cache[key]
        return models

    def _parsed(
        self,
        kind: str,
        path: str,
        raw_of: Callable[[str], bytes | None],
        sha_of: Callable[[str], str | None],
    ) -> Any:
        sha = sha_of(path)
        key = (kind, _content_key(sha, path))  # one parse per content, not per path
        cached = self._cache.get(key, _MISSING)
        if cached is not _MISSING:
            return cached
        raw = raw_of(path)
        value: Any = None
        if raw is not None:
            value = parse_json(raw) if sha is None else parse_json_once(raw, sha, self.memo)
        self._cache[key] = value
        return value

    def _bytes(self, kind: str, result: ReadResult | None, path: str) -> bytes | None:
        if result is None or result.status not in (ReadStatus.STORED, ReadStatus.INVALID):
            return None
        if result.data is not None:
            return result.data
        if result.sha256 is None or self._load is None:
            return None
        key = (kind, _content_key(result.sha256, path))  # one load per content, not per path
        if key not in self._cache:
            try:
                self._cache[key] = self._load(result.sha256)
            except Exception:  # a missing blob is an unreadable file, not a failed diff
                self._cache[key] = None
        data: bytes | None = self._cache[key]
        return data


def _content_key(sha: str | None, path: str) -> str:
    """What a view keeps something derived from `path`'s bytes under: their sha256 when known
    (one blob under many paths is decoded, parsed and loaded once), else the path. A NUL, which
    no stored path holds, keeps the two apart."""
    return "\0" + sha if sha is not None else path


def parse_json(raw: bytes) -> Any:
    """Parsed JSON, or None when it is not JSON or over a parsing limit (never raises)."""
    try:
        return loads_bounded(raw)
    except UnsafeContent:
        return None


def parse_json_once(raw: bytes, sha: str, memo: Memo) -> Any:
    """`parse_json(raw)`, shared by every view of the same content (`sha`: its sha256)."""
    try:
        return loads_shared(raw, sha, memo)
    except UnsafeContent:
        return None


PARSED: Slot[tuple[Any, str | None]] = Slot("json", 64, max_weight=16 * 1024 * 1024)
"""JSON by the sha256 of its bytes, parsed (or why it is not JSON), up to 16 MiB of it: in a
backfill each revision reads the config, index and tokenizer files of the one before, and a
snapshot checks the JSON it reads that the differs parse next. The values are shared: a differ
reads a view and never mutates what it reads."""


def loads_shared(raw: bytes, sha: str, memo: Memo) -> Any:
    """`loads_bounded(raw)` once per content in `memo` (`sha`: the sha256 of `raw`);
    UnsafeContent as it raises, with the same reason."""
    parsed = memo[PARSED]
    found = parsed.get(sha)
    if found is None:
        try:
            found = (loads_bounded(raw), None)
        except UnsafeContent as exc:
            found = (None, str(exc))
        parsed.put(sha, found, weight=len(raw))
    value, refused = found
    if refused is not None:
        raise UnsafeContent(refused)
    return value
