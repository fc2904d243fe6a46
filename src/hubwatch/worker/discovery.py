"""Cheap change discovery: which tracked repos need a poll, without a request per idle repo.

The Hub lists models by last modification, newest first (`/api/models?sort=lastModified`), with
each one's head sha. One walk down that listing to where the previous walk stopped (the cursor,
kept in the store) names every repo modified since, however many repos are tracked: an idle
cycle costs one request. The first walk (no cursor yet) reads the listing until it has named
every tracked repo, and the sha it gives seeds each one: the first cycle needs no request per
repo either (`walk.py`). A repo the listing cannot vouch for gets its own cheap check when it
is due, a HEAD on the resolver (`X-Repo-Commit`, counted against the larger "resolvers" quota)
or `git ls-remote`:

- repos the public listing does not show (private ones), and those the walk did not reach (a
  walk that hit its bound, or a deep listing page that answered 504);
- repos of sources that have no listing (git remotes).

Repos never polled, or whose last poll failed, or that are deleted or disabled, get a full poll
when due. A listed repo still gets a full poll every `verify_s` (a day by default), at its own
phase of that period (`plan.verification_due`), since a listing does not show renames,
deletions or a repo turning private.

Changes go first. A repo the listing (or a Hub webhook) names as changed is woken at
`WakePriority.CHANGE`; verifications and first polls at `VERIFY` (`WATCHED` for a repo a
subscription names, or that `hubwatch pins check` found a pin of within `pinned_s`, 30 days
by default), and workers claim the most urgent first. How many verifications and HEAD
checks a cycle may start is its `Budget`, from the quota the Hub announces, less what the
changes need (`budget.py`); the rest stay due for the next cycle. Repo state is read a page at
a time: the cycle's memory does not grow with the number of tracked repos.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from urllib.parse import urlsplit

import structlog

from hubwatch import metrics
from hubwatch.errors import SourceError, SourceTimedOut
from hubwatch.models import READABLE_STATES, RepoRef, ScheduleEntry, SourceKind, WakePriority
from hubwatch.sources.base import ChangeFeed, RevisionSource
from hubwatch.store.scheduling import ScheduleStore
from hubwatch.worker.budget import FIRST_POLL_WEIGHT, Budget, plan_budget
from hubwatch.worker.plan import Plan, verification_due
from hubwatch.worker.walk import Walk, WalkSettings, walk

log = structlog.get_logger(__name__)

PAGE = 1_000
"""Tracked repos read from the store at a time in the cycle's pass."""


@dataclass
class DiscoveryResult:
    """What one discovery cycle learned and asked for."""

    woken: list[str] = field(default_factory=list)
    """Repos woken for a poll."""
    changes: int = 0
    """Of those, how many as changes (before any verification)."""
    listed: int = 0
    """Listing items read."""
    checked: int = 0
    """Per-repo cheap checks made (HEAD on the resolver, git ls-remote)."""
    vouched: int = 0
    """Repos the listing vouched for: known unchanged without a request of their own."""
    deferred: int = 0
    """Verifications and checks due but left for a later cycle: over this cycle's budget."""
    covered: dict[str, bool] = field(default_factory=dict)
    """Per listing: whether the walk reached the previous cursor."""
    unanswered: set[str] = field(default_factory=set)
    """Hosts (the Hub, a git host) that let a check time out: their other repos' checks wait for
    the next cycle, so that a black-holed host costs one timeout a cycle, not one per repo."""
    stopped: bool = False
    """Ended early, its worker stopping: the repos it did not reach wait for the next cycle."""


class Discovery:
    """One discovery cycle over every tracked repo (run by one worker at a time)."""

    def __init__(
        self,
        store: ScheduleStore,
        sources: Mapping[SourceKind, RevisionSource],
        *,
        interval_s: float,
        verify_s: float = 86_400.0,
        pinned_s: float = 30 * 86_400.0,
        jitter: float = 0.1,
        margin_s: float = 120.0,
        skew_s: float = 5.0,
        max_listed: int = 10_000,
        first_max_listed: int = 500_000,
        rng: random.Random | None = None,
    ) -> None:
        self._store = store
        self._sources = sources
        self._interval = interval_s
        self._verify = max(verify_s, interval_s)
        self._pinned = timedelta(seconds=pinned_s)
        self._jitter = jitter
        self._walk_settings = WalkSettings(
            margin=timedelta(seconds=margin_s),
            skew=timedelta(seconds=skew_s),
            max_listed=max_listed,
            first_max_listed=max(first_max_listed, max_listed),
            verify_s=self._verify,
        )
        self._rng = rng or random.Random()

    def next_due(self, now: datetime, *, repo_id: str, listed: bool = False) -> datetime:
        """When a repo checked now is due again: its phase of the verify period for a repo the
        listing shows, else the interval give or take the jitter."""
        if listed:
            return verification_due(repo_id, now, self._verify)
        spread = 1 + self._rng.uniform(-self._jitter, self._jitter)
        return now + timedelta(seconds=self._interval * spread)

    def run(
        self,
        heartbeat: Callable[[], None] | None = None,
        stopping: Callable[[], bool] | None = None,
    ) -> DiscoveryResult:
        """Wake every repo that needs a poll, changes first; check the ones the listings cannot
        vouch for, inside the cycle's budget.

        `heartbeat` is called now and then during long runs (to renew the job's lease);
        `stopping`, before each repo's pass: once true, the cycle ends there (a worker told to
        stop waits for its discovery, which may owe a `git ls-remote` to each repo).
        """
        now = datetime.now(UTC)
        result = DiscoveryResult()
        plan = Plan()
        walks: dict[SourceKind, Walk] = {}
        feeds = {k: s for k, s in self._sources.items() if isinstance(s, ChangeFeed)}
        for kind, feed in feeds.items():
            if not (tracked := self._store.tracked_count(kind)):
                continue
            settings = self._walk_settings
            found = walk(self._store, feed, kind, now, plan, settings, tracked, heartbeat)
            walks[kind] = found
            result.listed += found.listed
            result.vouched += found.vouched
            result.covered[feed.feed_name] = found.covered
        budget = self._budget(walks, plan.changes)
        after: str | None = None
        # With every walk complete, a repo the walks did not name matters only when due: the
        # pass reads those alone (about a 144th of the repos a cycle, at the defaults).
        due_by = now if all(w.covered for w in walks.values()) else None
        stopped = stopping or (lambda: False)
        while not result.stopped and (page := self._store.schedule_page(after, PAGE, due_by)):
            after = page[-1].ref.repo_id
            for entry in page:
                if stopped():
                    result.stopped = True
                    break
                self._pass(entry, walks.get(entry.ref.source), now, plan, budget, result)
            plan.flush(self._store)
            if heartbeat:
                heartbeat()
        result.woken = plan.woken
        result.changes = plan.changes
        result.deferred = budget.deferred
        structlog.contextvars.unbind_contextvars("hub_request_id")
        log.info(
            "discovery_finished",
            woken=len(result.woken),
            changes=result.changes,
            listed=result.listed,
            checked=result.checked,
            vouched=result.vouched,
            deferred=result.deferred,
            stopped=result.stopped,
        )
        return result

    # -- internals --------------------------------------------------------------------------

    def _budget(self, walks: Mapping[SourceKind, Walk], changes: int) -> Budget:
        """This cycle's budget, from the Hub's announced quotas (no limit where it announced
        none)."""
        hub = self._sources.get(SourceKind.HUB)
        if not isinstance(hub, ChangeFeed):
            return Budget()
        return plan_budget(
            hub.allowance("api"),
            hub.allowance("resolvers"),
            interval_s=self._interval,
            changes=changes,
            waiting=self._store.waiting_count(WakePriority.WATCHED),
            spent_api=sum(w.pages for w in walks.values()),
        )

    def _pass(
        self,
        entry: ScheduleEntry,
        walk: Walk | None,
        now: datetime,
        plan: Plan,
        budget: Budget,
        result: DiscoveryResult,
    ) -> None:
        """Decide for one repo the walk left alone: a poll, a check, or nothing now."""
        repo_id = entry.ref.repo_id
        if entry.woken or (walk is not None and repo_id in walk.named):
            return
        is_due = entry.due_at is None or entry.due_at <= now
        needs_poll = entry.head is None or entry.last_polled_at is None or entry.failed
        verify = WakePriority.WATCHED if self._watched(entry, now) else WakePriority.VERIFY
        if needs_poll or entry.state not in READABLE_STATES:
            weight = FIRST_POLL_WEIGHT if entry.head is None else 1
            if is_due and budget.take_verify(weight):
                plan.add_wake(repo_id, verify)
            return
        if walk is not None and walk.covered and entry.listed:
            if not is_due:
                result.vouched += 1
            elif budget.take_verify():
                plan.add_wake(repo_id, verify)  # the periodic full verification
            return
        in_doubt = walk is not None and not walk.covered and bool(entry.listed)
        if not (is_due or in_doubt):
            return
        decision = self._check(entry, budget, result)
        if decision == "deferred":
            if not is_due:
                plan.due[repo_id] = now  # unvouched now: verified when the budget allows
        elif decision == "fresh":
            plan.due[repo_id] = self.next_due(now, listed=bool(entry.listed), repo_id=repo_id)
        elif decision == "changed":
            plan.add_wake(repo_id, WakePriority.CHANGE)
        else:
            plan.add_wake(repo_id, verify)  # a failed check: a full poll records what is wrong

    def _watched(self, entry: ScheduleEntry, now: datetime) -> bool:
        """Whether a subscription names the repo, or a pin did within the pinned window."""
        pinned = entry.pinned_at
        return entry.watched or (pinned is not None and now - pinned < self._pinned)

    def _check(self, entry: ScheduleEntry, budget: Budget, result: DiscoveryResult) -> str:
        """A repo's own cheap check: "fresh", "changed", "failed", or "deferred" (not made:
        over budget, or its host let a check time out in this cycle)."""
        source = self._sources.get(entry.ref.source)
        host = _host(entry.ref)
        if source is None or host in result.unanswered:
            return "deferred"
        if entry.ref.source is SourceKind.HUB and not budget.take_head():
            return "deferred"
        result.checked += 1
        metrics.HEAD_CHECKS.inc()
        try:
            head = source.head(entry.ref)
        except SourceTimedOut as exc:
            result.unanswered.add(host)
            log.warning("host_unanswered", host=host, error=str(exc))
            return "failed"  # this one's poll records what is wrong; the others wait a cycle
        except SourceError as exc:
            log.info("head_check_failed", repo=entry.ref.repo_id, error=str(exc))
            return "failed"
        return "fresh" if head == entry.head else "changed"


def _host(ref: RepoRef) -> str:
    """Where a repo's checks go: the Hub, or its git URL's host (`local` for a path)."""
    if ref.source is not SourceKind.GIT:
        return ref.source.value
    url = ref.url or ""
    if "://" in url:
        host = urlsplit(url).hostname
    else:  # scp-like `user@host:path`, or a local path
        host = url.partition(":")[0].rpartition("@")[2] if ":" in url else None
    return f"git:{host or 'local'}"
