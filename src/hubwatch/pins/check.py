"""What each pin misses: the changes upstream since it, by severity, and the advisories."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Protocol

from hubwatch.errors import HubwatchError
from hubwatch.models import (
    AdvisoryReport,
    CommitSha,
    RepoRef,
    RevisionChanges,
    Severity,
    SourceKind,
    StoredRevision,
)
from hubwatch.pins.model import Pin, RefKind
from hubwatch.store.advisories import AdvisoryStore
from hubwatch.store.browse import BrowseStore
from hubwatch.store.changes import ChangeStore
from hubwatch.store.repos import RepoStore, RevisionStore


class PinStore(RepoStore, RevisionStore, ChangeStore, AdvisoryStore, BrowseStore, Protocol):
    """What checking pins reads: each pinned repo, its revisions, changes and advisories."""


Ensure = Callable[[RepoRef], None]
"""Tracks (and backfills) a repo, raising a HubwatchError when it cannot be read."""


class PinStatus(StrEnum):
    """Where a pin stands against the stored history of its repo."""

    CURRENT = "current"
    """Pinned to the newest revision."""
    BEHIND = "behind"
    """Pinned to an older revision: `changes` says what came after it."""
    FLOATING = "floating"
    """A branch, a tag or no revision: it moves without the code changing."""
    UNRESOLVED = "unresolved"
    """An expression the scan could not evaluate."""
    UNKNOWN = "unknown"
    """The sha is not in the repo's history (a typo, or history rewritten)."""
    FAILED = "failed"
    """The repo could not be read (or is not tracked, where nothing may track it)."""


# What a status counts as when no change says more: floating pins change behaviour unseen.
_STATUS_SEVERITY = {PinStatus.FLOATING: Severity.BEHAVIOR, PinStatus.UNRESOLVED: Severity.INFO}


@dataclass(frozen=True, slots=True)
class PinReport:
    """One pin, checked."""

    pin: Pin
    status: PinStatus
    sha: CommitSha | None = None
    """The pinned revision's full sha."""
    newest: StoredRevision | None = None
    changes: tuple[RevisionChanges, ...] = ()
    """Every revision after the pin up to the newest, oldest first, with its changes."""
    advisories: AdvisoryReport | None = None
    """The pinned revision's advisories."""
    newest_advisories: AdvisoryReport | None = None
    error: str | None = None

    @property
    def severity(self) -> Severity | None:
        """The worst of its changes, its advisories (security) and its status."""
        found = [c.severity for rc in self.changes for c in rc.changes]
        if self.advisories is not None and self.advisories.matches:
            found.append(Severity.SECURITY)
        if self.status in _STATUS_SEVERITY:
            found.append(_STATUS_SEVERITY[self.status])
        return max(found, key=lambda s: s.rank, default=None)

    @property
    def bump_to(self) -> CommitSha | None:
        """The newest sha when the pin is behind it."""
        return self.newest.sha if self.status is PinStatus.BEHIND and self.newest else None


@dataclass(frozen=True, slots=True)
class Report:
    """Every pin, checked, in scan order."""

    pins: tuple[PinReport, ...] = field(default_factory=tuple)

    def fails(self, threshold: Severity) -> bool:
        """Whether a pin is at `threshold` or worse, or could not be checked at all."""
        return any(
            p.status in (PinStatus.UNKNOWN, PinStatus.FAILED)
            or (p.severity is not None and p.severity.rank >= threshold.rank)
            for p in self.pins
        )


def repo_refs(pins: Iterable[Pin]) -> dict[str, RepoRef]:
    """Where to read each pinned repo: a lockfile's git URL where one is given, else the Hub."""
    refs: dict[str, RepoRef] = {}
    for pin in pins:
        if pin.repo is None:
            continue
        if pin.url is not None:
            refs[pin.repo] = RepoRef(pin.repo, SourceKind.GIT, pin.url)
        else:
            refs.setdefault(pin.repo, RepoRef(pin.repo))
    return refs


def check(store: PinStore, pins: Sequence[Pin], ensure: Ensure | None = None) -> Report:
    """Check every pin against the store; `ensure` tracks each repo first (None: only what is
    already tracked is known, the others are FAILED).

    A tracked repo that `ensure` cannot refresh is still checked against what is stored, with
    the error on each of its pins; an untracked one is FAILED.
    """
    failures: dict[str, str] = {}
    stale: dict[str, str] = {}
    for repo_id, ref in repo_refs(pins).items():
        try:
            if ensure is not None:
                ensure(ref)
        except HubwatchError as exc:
            stale[repo_id] = f"could not refresh: {exc}"
        try:
            store.get_repo(repo_id)
        except HubwatchError as exc:
            failures[repo_id] = stale.pop(repo_id, str(exc))
    reports = (check_pin(store, pin, failures) for pin in pins)
    return Report(
        tuple(
            dataclasses.replace(r, error=stale[r.pin.repo])
            if r.pin.repo in stale and r.error is None
            else r
            for r in reports
        )
    )


def check_pin(store: PinStore, pin: Pin, failures: dict[str, str] | None = None) -> PinReport:
    """One pin against the store; `failures` are the repos that could not be read, and why."""
    if pin.repo is None or pin.kind is RefKind.UNRESOLVED:
        return PinReport(pin, PinStatus.UNRESOLVED)
    if failures and pin.repo in failures:
        return PinReport(pin, PinStatus.FAILED, error=failures[pin.repo])
    newest = store.latest_revision(pin.repo)
    newest_advisories = store.advisory_report(pin.repo, newest.sha) if newest else None
    if pin.kind is not RefKind.SHA or pin.ref is None:
        return PinReport(
            pin, PinStatus.FLOATING, newest=newest, newest_advisories=newest_advisories
        )
    try:
        sha = store.revision(pin.repo, pin.ref).sha
    except HubwatchError as exc:
        return PinReport(pin, PinStatus.UNKNOWN, newest=newest, error=str(exc))
    after = tuple(store.changes(pin.repo, since=sha))
    current = newest is None or newest.sha == sha
    return PinReport(
        pin,
        PinStatus.CURRENT if current else PinStatus.BEHIND,
        sha,
        newest,
        () if current else after,
        store.advisory_report(pin.repo, sha),
        newest_advisories,
    )
