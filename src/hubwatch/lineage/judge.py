"""Lineage at each new revision: a derivative matched against its declared base's history, and
a base's tracked derivatives re-judged when it changes. Store reads and writes here; the
matching itself is `assess.py`'s, the fingerprints `fingerprint.py`'s."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Protocol

import structlog

from hubwatch.caching import BoundedCache, Memo
from hubwatch.diff import apply_policy
from hubwatch.errors import NotTracked, UnknownRevision
from hubwatch.formats.card import declared_bases
from hubwatch.formats.view import RevisionView
from hubwatch.lineage.assess import (
    STALE,
    assess,
    caught_up_change,
    derivatives_stale_change,
    missed_of,
    stale_change,
)
from hubwatch.lineage.fingerprint import Fingerprint, fingerprint
from hubwatch.models import Change, CommitSha, Snapshot
from hubwatch.models.lineage import Lineage, LineageStatus
from hubwatch.models.timestamps import now
from hubwatch.store.browse import BrowseStore
from hubwatch.store.changes import ChangeStore
from hubwatch.store.lineage import LineageStore
from hubwatch.store.repos import RepoStore, is_tracked
from hubwatch.store.views import RevisionReads, stored_view


class LineageReads(RevisionReads, RepoStore, ChangeStore, LineageStore, BrowseStore, Protocol):
    """What judging lineage reads and writes: both repos' revisions, their changes and records."""


log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class LineageResult:
    """What the lineage step found for one new revision, before it is stored."""

    changes: tuple[Change, ...]
    """`lineage.*` changes to store with the revision (policy applied)."""
    records: tuple[Lineage, ...]
    """Lineage records to set once the revision is stored: its own, and its derivatives'."""


class LineageJudge:
    """Works out lineage for new revisions; fingerprints are kept by (repo, sha), so a base
    with many revisions is fingerprinted once per revision, not once per derivative."""

    def __init__(self, cache_size: int = 2048, memo: Memo | None = None) -> None:
        self._prints: BoundedCache[Fingerprint] = BoundedCache(cache_size)
        self._memo = memo if memo is not None else Memo()
        """Shared by the views it makes (the tracker's own, when it made this judge)."""

    def childless(self, store: LineageReads, repo_id: str) -> bool:
        """Whether no tracked derivative names `repo_id` as its base now."""
        return not store.derivatives_of(repo_id)

    def judge(
        self, store: LineageReads, repo_id: str, snapshot: Snapshot, childless: bool = False
    ) -> LineageResult:
        """The lineage changes and records `snapshot` (about to be stored) brings.

        `childless`: the caller knows no tracked derivative names the repo (`childless()` at
        the start of a backfill), so it is not judged as a base."""
        sha = snapshot.commit.sha
        declared = declared_bases(snapshot.card).bases
        if all(b == repo_id for b in declared) and (childless or self.childless(store, repo_id)):
            # neither a derivative nor a tracked derivative's base: most repos, and every
            # revision of a backfill, need no fingerprint (a tokenizer's ids walked)
            return LineageResult((), ())
        view = RevisionView.of_snapshot(snapshot, store.blob, self._memo)
        new = _New(repo_id, sha, snapshot.card, snapshot.changes, fingerprint(view))
        changes: list[Change] = []
        records: list[Lineage] = []
        own = self._as_derivative(store, new)
        if own is not None:
            record, said = own
            records.append(record)
            changes += said
        stale, updated = self._as_base(store, new)
        self._prints.put(_key(repo_id, sha), new.fingerprint)
        records += updated
        if stale:
            changes.append(derivatives_stale_change(repo_id, sha, stale))
        return LineageResult(tuple(apply_policy(changes)), tuple(records))

    def rejudge(self, store: LineageReads, repo_id: str) -> Lineage | None:
        """Judge a tracked derivative's newest stored revision again (its base was tracked
        since): set its record and replace that revision's `lineage.stale` change."""
        newest = next((r for r in reversed(store.history(repo_id)) if r.reachable), None)
        if newest is None:
            return None
        stored = store.revision_changes(repo_id, newest.sha).changes
        mine = self._print(store, repo_id, newest.sha)
        before = store.lineage_of(repo_id)
        own = self._as_derivative(store, _New(repo_id, newest.sha, newest.card, stored, mine))
        if own is None:
            return None
        record, changes = own
        store.set_lineage(record)
        if record.status is LineageStatus.STALE and not staler(record, before):
            return record  # nothing new: the revision keeps what it says
        stale = apply_policy(c for c in changes if c.kind == STALE)
        store.replace_changes(repo_id, newest.sha, STALE, stale)
        return record

    def _as_derivative(self, store: LineageReads, new: _New) -> tuple[Lineage, list[Change]] | None:
        repo_id = new.repo_id
        declared = declared_bases(new.card)
        bases = [b for b in declared.bases if b != repo_id]
        if declared.ignored:
            log.info("lineage_bases_ignored", repo=repo_id, reasons=list(declared.ignored))
        if not bases:
            return None
        base_id = next((b for b in bases if is_tracked(store, b)), bases[0])
        extra = {"declared": bases, "ignored": list(declared.ignored)} if len(bases) > 1 else {}
        blank = Lineage(
            repo_id,
            new.sha,
            base_id,
            declared.relation,
            LineageStatus.BASE_UNTRACKED,
            checked_at=now(),
            extra=extra,
        )
        record = self._assessed(store, blank, new.fingerprint, None)
        previous = store.lineage_of(repo_id)
        changes = []
        if record.status is LineageStatus.STALE and staler(record, previous):
            changes.append(stale_change(record))
        elif (
            record.status is LineageStatus.CURRENT
            and previous is not None
            and previous.status is LineageStatus.STALE
            and previous.base_repo_id == base_id
        ):
            changes.append(caught_up_change(previous, record))
        return record, changes

    def _as_base(self, store: LineageReads, new: _New) -> tuple[list[Lineage], list[Lineage]]:
        """The derivatives this new base revision makes stale (or staler), and every
        derivative record it changes."""
        stale: list[Lineage] = []
        updated: list[Lineage] = []
        sha = new.sha
        for previous in store.derivatives_of(new.repo_id):
            if previous.repo_id == new.repo_id:
                continue
            try:
                mine = self._print(store, previous.repo_id, previous.sha)
            except (NotTracked, UnknownRevision):  # untracked meanwhile: nothing to judge
                continue
            record = self._assessed(store, previous, mine, new)
            if _same(record, previous):
                continue
            updated.append(record)
            if record.status is LineageStatus.STALE and any(
                m.get("sha") == sha for m in record.missed
            ):
                stale.append(record)
        return stale, updated

    def _assessed(
        self, store: LineageReads, lineage: Lineage, mine: Fingerprint, new_base: _New | None
    ) -> Lineage:
        """`lineage` judged again with the derivative's fingerprint `mine`: against the base's
        stored history, plus `new_base` (a base revision about to be stored)."""
        base_id = lineage.base_repo_id
        new_sha = new_base.sha if new_base is not None else None
        try:
            history = [r.sha for r in store.history(base_id) if r.reachable]
        except NotTracked:
            return _with(lineage, LineageStatus.BASE_UNTRACKED, f"{base_id} is not tracked")
        if new_sha is not None and new_sha not in history:
            history.append(new_sha)
        if not history:
            return _with(lineage, LineageStatus.UNMATCHED, f"{base_id} has no stored revision")

        def print_of(sha: CommitSha) -> Fingerprint:
            if new_base is not None and sha == new_sha:
                return new_base.fingerprint
            return self._print(store, base_id, sha)

        found = assess(mine, history, print_of)
        missed: tuple[dict[str, object], ...] = ()
        if found.moved:
            changes: dict[CommitSha, Sequence[Change]] = {
                rc.revision.sha: rc.changes for rc in store.changes(base_id, since=found.base_sha)
            }
            if new_base is not None:
                changes[new_base.sha] = new_base.changes
            missed = missed_of(found.moved, changes)
        return replace(
            lineage,
            status=found.status,
            base_sha=found.base_sha,
            missed=missed,
            aspects=found.aspects,
            detail=found.detail,
            checked_at=now(),
        )

    def _print(self, store: LineageReads, repo_id: str, sha: CommitSha) -> Fingerprint:
        key = _key(repo_id, sha)
        found = self._prints.get(key)
        if found is None:
            found = fingerprint(stored_view(store, repo_id, sha, memo=self._memo))
            self._prints.put(key, found)
        return found


@dataclass(frozen=True, slots=True)
class _New:
    """The revision being judged (about to be stored, or the newest stored)."""

    repo_id: str
    sha: CommitSha
    card: Mapping[str, object] | None
    changes: Sequence[Change]
    """Its own changes (a base's missed changes are read from them)."""
    fingerprint: Fingerprint


def _key(repo_id: str, sha: str) -> str:
    return f"{repo_id}@{sha}"


def _with(lineage: Lineage, status: LineageStatus, detail: str) -> Lineage:
    return replace(
        lineage,
        status=status,
        base_sha=None,
        missed=(),
        aspects=(),
        detail=detail,
        checked_at=now(),
    )


def staler(record: Lineage, previous: Lineage | None) -> bool:
    """Whether stale `record` says what `previous` (the derivative's last record) did not: it
    became stale, its base or base revision changed, or it missed more. A revision that leaves
    the lineage as it was (a card edit) gets no `lineage.stale` of its own."""
    if previous is None or previous.status is not LineageStatus.STALE:
        return True
    if (previous.base_repo_id, previous.base_sha) != (record.base_repo_id, record.base_sha):
        return True
    return any(missed not in previous.missed for missed in record.missed)


def _same(a: Lineage, b: Lineage) -> bool:
    """Equal but for when they were worked out."""
    return dataclasses.replace(a, checked_at=None) == dataclasses.replace(b, checked_at=None)
