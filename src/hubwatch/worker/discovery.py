"""Cheap change discovery: which tracked repos need a poll, without a request per idle repo.

The Hub lists models by last modification, newest first (`/api/models?sort=lastModified`). One
walk down that listing to where the previous walk stopped (the cursor, kept in the store) names
every repo modified since, however many repos are tracked: an idle cycle costs one request. A
repo the listing cannot vouch for gets its own cheap check when it is due, a HEAD on the
resolver (`X-Repo-Commit`, counted against the larger "resolvers" quota) or `git ls-remote`:

- every repo, in the first cycle (no cursor yet), and after a walk that hit its page limit
  before reaching the cursor (a long outage);
- repos the public listing does not show (private ones), and those not yet known to be listed;
- repos of sources that have no listing (git remotes).

Repos never polled, or whose last poll failed, or that are deleted or disabled, get a full poll
when due. A listed repo still gets a full poll every `verify_s` (a day by default), since a
listing does not show renames, deletions or a repo turning private. A repo that needs a poll is
woken in the store, with the head and gating the listing gave (so its poll skips its own
model_info request); workers claim and poll woken repos.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from urllib.parse import urlsplit

import structlog

from hubwatch import metrics
from hubwatch.errors import SourceError, SourceTimedOut
from hubwatch.models import READABLE_STATES, RepoRef, RepoStatus, ScheduleEntry, SourceKind
from hubwatch.sources.base import ChangeFeed, Modified, RevisionSource
from hubwatch.store.scheduling import ScheduleStore

log = structlog.get_logger(__name__)

_PAGE = 1000
"""Repos read at a time: a discovery cycle's memory is bounded by a page, not the repos."""


@dataclass
class DiscoveryResult:
    """What one discovery cycle learned and asked for."""

    woken: list[str] = field(default_factory=list)
    """Repos woken for a poll."""
    listed: int = 0
    """Listing items read."""
    checked: int = 0
    """Per-repo cheap checks made (HEAD on the resolver, git ls-remote)."""
    vouched: int = 0
    """Repos the listing vouched for: known unchanged without a request of their own."""
    covered: dict[str, bool] = field(default_factory=dict)
    """Per listing: whether the walk reached the previous cursor."""
    unanswered: set[str] = field(default_factory=set)
    """Hosts (the Hub, a git host) that let a check time out: their other repos' checks wait for
    the next cycle, so that a black-holed host costs one timeout a cycle, not one per repo."""


@dataclass(frozen=True)
class _Walk:
    covered: bool
    named: dict[str, Modified]
    moved: set[str] = field(default_factory=set)
    """Tracked repos the listing names by another id, found by their object id: renamed."""


class Discovery:
    """One discovery cycle over every tracked repo (run by one worker at a time)."""

    def __init__(
        self,
        store: ScheduleStore,
        sources: Mapping[SourceKind, RevisionSource],
        *,
        interval_s: float,
        verify_s: float = 86_400.0,
        jitter: float = 0.1,
        margin_s: float = 120.0,
        skew_s: float = 5.0,
        max_listed: int = 10_000,
        rng: random.Random | None = None,
    ) -> None:
        self._store = store
        self._sources = sources
        self._interval = interval_s
        self._verify = max(verify_s, interval_s)
        self._jitter = jitter
        self._margin = timedelta(seconds=margin_s)
        """Overlap with the previous walk: the listing's clock and indexing may lag a little."""
        self._skew = timedelta(seconds=skew_s)
        """How far the source's clock may be behind ours when comparing with our last poll."""
        self._max_listed = max_listed
        self._rng = rng or random.Random()

    def next_due(self, now: datetime, *, listed: bool = False) -> datetime:
        """When a repo checked now is due again: the interval (the verify interval for a repo
        the listing shows), give or take the jitter."""
        spread = 1 + self._rng.uniform(-self._jitter, self._jitter)
        return now + timedelta(seconds=(self._verify if listed else self._interval) * spread)

    def run(self, heartbeat: Callable[[], None] | None = None) -> DiscoveryResult:
        """Wake every repo that needs a poll; check the ones the listings cannot vouch for.

        `heartbeat` is called now and then during long runs (to renew the job's lease).
        The repos are read a page at a time, twice (their ids for the listings' walks, then
        each decided): memory bounded by a page and the ids, however many are tracked.
        """
        now = datetime.now(UTC)
        result = DiscoveryResult()
        feeds = {k: s for k, s in self._sources.items() if isinstance(s, ChangeFeed)}
        walks = {
            kind: self._walk(feeds[kind], wanted, by_object, result)
            for kind, (wanted, by_object) in self._tracked(feeds).items()
        }
        wake: list[str] = []
        hints: dict[str, RepoStatus] = {}
        seen = 0
        for page in self._pages():
            due: dict[str, datetime] = {}
            listed: list[str] = []
            for entry in page:
                seen += 1
                if heartbeat and seen % 200 == 0:
                    heartbeat()
                walk = walks.get(entry.ref.source)
                decision = self._decide(entry, walk, now, result)
                if decision in ("wake", "hinted"):
                    wake.append(entry.ref.repo_id)
                if decision == "hinted" and walk is not None:
                    status = walk.named[entry.ref.repo_id].status
                    assert status is not None
                    hints[entry.ref.repo_id] = status
                elif decision == "fresh":
                    due[entry.ref.repo_id] = self.next_due(now, listed=bool(walk and entry.listed))
                if walk and entry.ref.repo_id in walk.named and entry.listed is not True:
                    listed.append(entry.ref.repo_id)
            if listed:
                self._store.set_listed(listed, True)
            self._store.set_due(due)
        if wake:
            self._store.wake(wake, datetime.now(UTC), hints)
        result.woken = wake
        metrics.DISCOVERY_WOKEN.inc(len(wake))
        structlog.contextvars.unbind_contextvars("hub_request_id")
        log.info(
            "discovery_finished",
            woken=len(wake),
            listed=result.listed,
            checked=result.checked,
            vouched=result.vouched,
        )
        return result

    def _pages(self) -> Iterator[list[ScheduleEntry]]:
        """The tracked repos with their schedules, by id, a page at a time."""
        after: str | None = None
        while page := self._store.schedule_page(after, _PAGE):
            yield page
            if len(page) < _PAGE:
                return
            after = page[-1].ref.repo_id

    def _tracked(
        self, kinds: Mapping[SourceKind, object]
    ) -> dict[SourceKind, tuple[set[str], dict[str, str]]]:
        """For each of `kinds` that has tracked repos: their ids, and their ids by object id."""
        found: dict[SourceKind, tuple[set[str], dict[str, str]]] = {}
        for page in self._pages():
            for entry in page:
                if entry.ref.source in kinds:
                    wanted, by_object = found.setdefault(entry.ref.source, (set(), {}))
                    wanted.add(entry.ref.repo_id)
                    if entry.object_id:
                        by_object[entry.object_id] = entry.ref.repo_id
        return found

    # -- internals --------------------------------------------------------------------------

    def _walk(
        self,
        feed: ChangeFeed,
        wanted: set[str],
        by_object: Mapping[str, str],
        result: DiscoveryResult,
    ) -> _Walk:
        """Read the listing down to the cursor; which of the `wanted` repos it names, and when.

        A repo renamed upstream is listed under its new id only: it is found by its object id
        (which a rename keeps, `by_object`) and woken, so that its poll follows the rename in
        this cycle.
        """
        moved: set[str] = set()
        cursor = self._store.cursor(feed.feed_name)
        named: dict[str, Modified] = {}
        newest: datetime | None = None
        covered = False
        try:
            if cursor is None:
                # First cycle: no cursor to walk down to. Take the newest time as the cursor;
                # every repo gets its own check this once.
                for item in feed.recently_modified(limit=1):
                    result.listed += 1
                    newest = item.at
            else:
                floor = cursor - self._margin
                count = 0
                for item in feed.recently_modified(limit=self._max_listed):
                    count += 1
                    newest = max(newest, item.at) if newest else item.at
                    if item.at <= floor:
                        covered = True
                        break
                    if item.repo_id in wanted and item.repo_id not in named:
                        named[item.repo_id] = item  # the first is the newest
                    elif item.repo_id not in wanted and (
                        old := by_object.get(item.object_id or "")
                    ):
                        named.setdefault(old, item)
                        moved.add(old)
                result.listed += count
                covered = covered or count < self._max_listed  # the listing ended above the floor
        except SourceError as exc:
            # The Hub's deep /api/models pages can answer 504. Items come a whole page at a
            # time, so those read are complete pages: the cursor still moves to the newest,
            # and the repos the walk did not reach are checked on their own in this cycle.
            log.warning("listing_failed", feed=feed.feed_name, error=str(exc))
            if newest is not None:
                self._store.set_cursor(feed.feed_name, max(filter(None, (cursor, newest))))
            result.covered[feed.feed_name] = False
            return _Walk(False, named, moved)
        # NOTE: the cursor only moves forward; a walk that stopped at its page limit still moves
        # it, because every repo it did not reach is checked on its own in this cycle.
        value = max(filter(None, (cursor, newest)), default=None) or datetime.now(UTC)
        self._store.set_cursor(feed.feed_name, value)
        result.covered[feed.feed_name] = covered
        return _Walk(covered, named, moved)

    def _decide(
        self, entry: ScheduleEntry, walk: _Walk | None, now: datetime, result: DiscoveryResult
    ) -> str:
        """What to do with one repo now.

        "wake" (a full poll), "hinted" (a poll that starts from the listing's status), "fresh"
        (checked just now: unchanged) or "skip" (nothing to do now).
        """
        if entry.woken:
            return "skip"
        repo_id = entry.ref.repo_id
        is_due = entry.due_at is None or entry.due_at <= now
        needs_poll = entry.head is None or entry.last_polled_at is None or entry.failed
        if walk is not None and repo_id in walk.moved:
            log.info("repo_moved_in_listing", repo=repo_id, listed_as=walk.named[repo_id].repo_id)
            return "wake"  # a full poll follows the rename; the listing's status is the new id's
        if walk is not None and repo_id in walk.named:
            item = walk.named[repo_id]
            if item.status is not None:
                recent = item.status.head != entry.head  # the listing says where the head is
            else:
                last = entry.last_polled_at
                recent = last is None or item.at > last - self._skew
            if recent or needs_poll:
                usable = item.status is not None and entry.state in READABLE_STATES
                return "hinted" if usable and not needs_poll else "wake"
        if needs_poll or entry.state not in READABLE_STATES:
            return "wake" if is_due else "skip"
        if walk is not None and walk.covered and entry.listed:
            if is_due:
                return "wake"  # the periodic full verification (renames, deletions, privacy)
            result.vouched += 1
            return "skip"
        if not (is_due or (walk is not None and not walk.covered)):
            return "skip"
        source = self._sources.get(entry.ref.source)
        host = _host(entry.ref)
        if source is None or host in result.unanswered:
            return "skip"
        result.checked += 1
        metrics.HEAD_CHECKS.inc()
        try:
            head = source.head(entry.ref)
        except SourceTimedOut as exc:
            result.unanswered.add(host)
            log.warning("host_unanswered", host=host, error=str(exc))
            return "wake"  # this one's poll records what is wrong; the others wait a cycle
        except SourceError as exc:
            log.info("head_check_failed", repo=repo_id, error=str(exc))
            return "wake"  # a full poll records what is wrong
        return "fresh" if head == entry.head else "wake"


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
