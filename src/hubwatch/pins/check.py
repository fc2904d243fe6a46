"""What each pin misses: the changes upstream since it, by severity, and the advisories."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Protocol

from hubwatch.errors import EXIT_ADVISORIES_UNKNOWN, EXIT_ERROR, HubwatchError
from hubwatch.models import (
    AdvisoryMatch,
    AdvisoryReport,
    AdvisoryStatus,
    Change,
    CommitSha,
    RepoRef,
    RevisionChanges,
    Severity,
    SourceKind,
    StoredRevision,
)
from hubwatch.models.refs import LinkedChanges, LinkOrigin
from hubwatch.pins.findings import AdvisoryState, ProjectAudit, Waiver, advisory_state
from hubwatch.pins.ignores import Ignore
from hubwatch.pins.model import Pin, RefKind
from hubwatch.pins.reach import identity_changes, same_files, tracked_name
from hubwatch.store.advisories import AdvisoryStore
from hubwatch.store.browse import BrowseStore
from hubwatch.store.changes import ChangeStore
from hubwatch.store.links import LinkStore
from hubwatch.store.repos import RepoStore, RevisionStore

Ensure = Callable[[RepoRef], None]
"""Tracks (and backfills) a repo, raising a HubwatchError when it cannot be read."""
Recheck = Callable[[str, CommitSha], object]
"""Checks one stored revision's advisories again (AdvisoryAttacher.attach)."""


class PinStore(
    RepoStore, RevisionStore, ChangeStore, AdvisoryStore, BrowseStore, LinkStore, Protocol
):
    """What a check reads: each pinned repo, its revisions, their changes and advisories, and
    the changes of the repos whose code it loads."""


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
    """The sha was never seen in the repo's history (a typo)."""
    UNREACHABLE = "unreachable"
    """The pinned revision was in the history and is no longer (a super-squash, a force push,
    another repo under the name): downloading it fails. `suggested` is the surviving revision
    with the same files, when there is one."""
    FAILED = "failed"
    """The repo could not be read (or is not tracked, where nothing may track it)."""


# What a status counts as when no change says more: floating pins change behaviour unseen.
_STATUS_SEVERITY = {
    PinStatus.FLOATING: Severity.BEHAVIOR,
    PinStatus.UNRESOLVED: Severity.INFO,
    PinStatus.UNREACHABLE: Severity.BREAKING,
}
_MOVED_SEVERITY = Severity.BEHAVIOR
"""A pin naming a repo by a name it left: it works while the Hub redirects the old name, and
loads whatever repo is created under that name next."""
_UNCHECKABLE = (PinStatus.UNKNOWN, PinStatus.UNREACHABLE, PinStatus.FAILED)


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
    pinned: StoredRevision | None = None
    """The pinned revision, when it is stored."""
    advisories_enabled: bool = True
    waivers: tuple[Waiver, ...] = ()
    """The ignore entries that accepted some of what is found here."""
    waived_changes: frozenset[tuple[str, str]] = frozenset()
    """(revision sha, change kind) of the accepted changes."""
    waived_advisories: frozenset[str] = frozenset()
    """Ids of the accepted advisories of the pinned revision."""
    waived_status: bool = False
    """Whether the pin itself is accepted as it stands (floating, behind)."""
    dependencies: tuple[LinkedChanges, ...] = ()
    """The newest change of each repo whose code the model loads: a pin of the model does not
    hold that code (`code_revision=` does), so it is what a load gets now."""
    moved_to: str | None = None
    """The repo's name now, where the pin names it by one it left in a rename."""
    identity: tuple[Change, ...] = ()
    """`repo.identity_changed` events of the repo of an unreachable pin: another repo answers
    under the name, and the pinned revision was the old one's (security)."""
    suggested: StoredRevision | None = None
    """For an unreachable pin: the surviving revision nearest to it with identical files."""

    @property
    def notes(self) -> list[str]:
        """What the pin's name and revision came to, one line each (renames, identity, reach)."""
        found = []
        if self.moved_to:
            found.append(f"{self.pin.repo} was renamed to {self.moved_to}: pin that name")
        found += [c.summary for c in self.identity]
        if self.status is PinStatus.UNREACHABLE:
            pinned = (self.sha or "")[:12]
            found.append(
                f"{pinned} is no longer in the history; {self.suggested.sha[:12]} has the same "
                "files"
                if self.suggested
                else f"{pinned} is no longer in the history, and no revision left has its files"
            )
        return found

    @property
    def own_advisories(self) -> AdvisoryReport | None:
        """The advisories of the revision in use: the pinned one, or the newest if floating."""
        return self.newest_advisories if self.status is PinStatus.FLOATING else self.advisories

    @property
    def advisory_state(self) -> AdvisoryState | None:
        """Whether the revision in use's advisories are known; None: no revision to check."""
        if self.status is PinStatus.UNRESOLVED or self.status in _UNCHECKABLE:
            return None
        return advisory_state(self.own_advisories, self.advisories_enabled)

    def counted(self, rc: RevisionChanges) -> list[Change]:
        """The changes of one revision that no ignore entry accepted."""
        return [c for c in rc.changes if (rc.revision.sha, c.kind) not in self.waived_changes]

    @property
    def matches(self) -> tuple[AdvisoryMatch, ...]:
        """The revision in use's advisories (what it brings) that no ignore entry accepted."""
        own = self.own_advisories
        found = own.matches if own is not None else ()
        return tuple(m for m in found if m.advisory_id not in self.waived_advisories)

    @property
    def severity(self) -> Severity | None:
        """The worst of its counted changes, advisories (security) and status."""
        found = [c.severity for rc in self.changes for c in self.counted(rc)]
        found += [
            c.severity
            for lc in self.dependencies
            for c in lc.changes
            if (lc.head, c.kind) not in self.waived_changes
        ]
        found += [c.severity for c in self.identity]
        if self.moved_to:
            found.append(_MOVED_SEVERITY)
        if self.matches:
            found.append(Severity.SECURITY)
        if self.status in _STATUS_SEVERITY and not self.waived_status:
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
    project: ProjectAudit | None = None
    """The advisories of the codebase's own declared versions; None: not checked (the API)."""
    config: str | None = None
    """The project settings file read (its ignore list); None: none."""
    expired: tuple[Ignore, ...] = ()
    """Ignore entries past their `expires` date: they no longer count."""
    unused: tuple[Ignore, ...] = ()
    """Ignore entries that accepted nothing (the finding is gone: remove them)."""

    @property
    def advisory_state(self) -> AdvisoryState:
        """UNKNOWN when any advisory data could not be read; OFF when none was consulted."""
        states = [p.advisory_state for p in self.pins]
        states.append(self.project.state if self.project is not None else None)
        known = [s for s in states if s is not None]
        if AdvisoryState.UNKNOWN in known:
            return AdvisoryState.UNKNOWN
        if AdvisoryState.OK in known:
            return AdvisoryState.OK
        off = AdvisoryState.OFF in known or any(not p.advisories_enabled for p in self.pins)
        return AdvisoryState.OFF if off else AdvisoryState.OK  # OK: nothing needed checking

    def unknown_reasons(self) -> list[str]:
        """Why the advisory data is unknown, once per reason."""
        found: list[str] = []
        if self.project is not None and self.project.state is AdvisoryState.UNKNOWN:
            found.append(self.project.error or "the advisory data could not be read")
        for p in self.pins:
            own = p.own_advisories
            if p.advisory_state is AdvisoryState.UNKNOWN:
                why = (own.error if own else None) or "not checked yet; run `hubwatch osv sync`"
                found.append(why)
        return list(dict.fromkeys(found))

    def fails(self, threshold: Severity) -> bool:
        """Whether a pin is at `threshold` or worse, or could not be checked at all, or an
        advisory applies to the project's own versions (security)."""
        own = self.project is not None and bool(self.project.counted)
        return (own and Severity.SECURITY.rank >= threshold.rank) or any(
            p.status in _UNCHECKABLE
            or (p.severity is not None and p.severity.rank >= threshold.rank)
            for p in self.pins
        )

    def exit_code(self, threshold: Severity) -> int:
        """EXIT_ADVISORIES_UNKNOWN (7) when advisory data is unknown (the verdict is partial),
        else EXIT_ERROR (1) when it fails at `threshold`, else 0."""
        if self.advisory_state is AdvisoryState.UNKNOWN:
            return EXIT_ADVISORIES_UNKNOWN
        return EXIT_ERROR if self.fails(threshold) else 0


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


def check(
    store: PinStore,
    pins: Sequence[Pin],
    ensure: Ensure | None = None,
    *,
    advisories: bool = True,
    recheck: Recheck | None = None,
) -> Report:
    """Check every pin against the store; `ensure` tracks each repo first (None: only what is
    already tracked is known, the others are FAILED). `advisories`: False where they are off;
    `recheck` checks again the advisories of a revision in use whose last check failed (the
    data may be there now).

    A tracked repo that `ensure` cannot refresh is still checked against what is stored, with
    the error on each of its pins; an untracked one is FAILED.
    """
    failures: dict[str, str] = {}
    stale: dict[str, str] = {}
    for repo_id, ref in repo_refs(pins).items():
        try:
            if ensure is not None:
                ensure(ref)  # may follow a rename: the repo is tracked under its new name then
        except HubwatchError as exc:
            stale[repo_id] = f"could not refresh: {exc}"
    moved = {p.repo: to for p in pins if p.repo and (to := tracked_name(store, p.repo))}
    for old, new in moved.items():
        if old in stale:
            stale[new] = stale.pop(old)
    originals = list(pins)
    pins = [dataclasses.replace(p, repo=moved[p.repo]) if p.repo in moved else p for p in pins]
    for repo_id in {p.repo for p in pins if p.repo is not None}:
        try:
            store.get_repo(repo_id)
        except HubwatchError as exc:
            failures[repo_id] = stale.pop(repo_id, str(exc))
    if recheck is not None and advisories:
        _recheck(store, [p for p in pins if p.repo not in failures], recheck)
    reports = (
        dataclasses.replace(r, dependencies=_dependencies(store, r))
        for r in (check_pin(store, pin, failures) for pin in pins)
    )
    return Report(
        tuple(
            dataclasses.replace(
                r,
                pin=original,
                error=stale[r.pin.repo] if r.pin.repo in stale and r.error is None else r.error,
                advisories_enabled=advisories,
                moved_to=r.pin.repo if original.repo in moved else None,
            )
            for r, original in zip(reports, originals, strict=True)
        )
    )


def _dependencies(store: PinStore, report: PinReport) -> tuple[LinkedChanges, ...]:
    """The newest dependency change of each repo the pinned model loads code from now."""
    if report.pin.repo is None or report.status in (PinStatus.UNRESOLVED, PinStatus.FAILED):
        return ()
    loads = {link.target for link in store.links_of(report.pin.repo)}
    newest: dict[str, LinkedChanges] = {}
    for lc in store.linked_changes(report.pin.repo):
        if lc.origin is LinkOrigin.DEPENDENCY and lc.source in loads:
            newest[lc.source] = lc  # oldest first: the last one stays
    return tuple(newest[target] for target in sorted(newest))


def _recheck(store: PinStore, pins: Sequence[Pin], recheck: Recheck) -> None:
    wanted: set[tuple[str, CommitSha]] = set()
    for pin in pins:
        if pin.repo is None or pin.kind is RefKind.UNRESOLVED:
            continue
        newest = store.latest_revision(pin.repo)
        if newest is not None:
            wanted.add((pin.repo, newest.sha))
        if pin.kind is RefKind.SHA and pin.ref is not None:
            try:
                wanted.add((pin.repo, store.revision(pin.repo, pin.ref).sha))
            except HubwatchError:
                continue  # reported as UNKNOWN by the check
    for repo, sha in sorted(wanted):
        if store.advisory_report(repo, sha).status is not AdvisoryStatus.OK:
            recheck(repo, sha)


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
        pinned = store.revision(pin.repo, pin.ref)
    except HubwatchError as exc:
        return PinReport(pin, PinStatus.UNKNOWN, newest=newest, error=str(exc))
    sha = pinned.sha
    if not pinned.reachable:
        return _unreachable(store, pin, pinned, newest)
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
        pinned=pinned,
    )


def _unreachable(
    store: PinStore, pin: Pin, pinned: StoredRevision, newest: StoredRevision | None
) -> PinReport:
    """A pin whose revision left the history: unreachable, with the revision to pin instead
    when one with the same files survives, and the identity changes that explain it."""
    repo = pinned.repo_id
    return PinReport(
        pin,
        PinStatus.UNREACHABLE,
        pinned.sha,
        newest,
        advisories=store.advisory_report(repo, pinned.sha),
        pinned=pinned,
        identity=identity_changes(store, repo),
        suggested=same_files(store, repo, pinned, store.history(repo)),
    )
