"""One walk down a source's change listing, judged a batch of items at a time.

The listing (the Hub's `/api/models?sort=lastModified`, newest first) carries each repo's head
sha. A walk reads it down to the stored cursor; the first walk (no cursor yet) reads until every
tracked repo of the source has been named, or the listing ends, or a bound: the listing's sha
seeds every named repo, so the first cycle needs no request per repo. Each batch of items is
looked up in the store (by id, and by the Hub's object id, which a rename keeps) and judged:
a head that moved is a change, woken at once; a head that did not is vouched for until its
verification. Repos the walk could not judge are left to the cycle's pass over every repo.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import structlog

from hubwatch.errors import SourceError
from hubwatch.models import READABLE_STATES, ScheduleEntry, SourceKind, WakePriority
from hubwatch.sources.base import ChangeFeed, Modified
from hubwatch.store.scheduling import ScheduleStore
from hubwatch.worker.plan import Plan, verification_due

log = structlog.get_logger(__name__)

BATCH = 1_000
"""Listing items judged together: one store lookup, one write."""
LISTING_PAGE = 1_000
"""The most items the Hub gives a listing page: how many requests a walk made."""


@dataclass
class Walk:
    """What a walk learned about one source's repos."""

    covered: bool = False
    """Whether the walk reached the previous cursor (or named every tracked repo): a listed
    repo it did not name is unchanged since."""
    named: set[str] = field(default_factory=set)
    """Tracked repos the walk judged; the cycle's pass leaves them alone."""
    seen: int = 0
    """Tracked repos the listing named (judged or not)."""
    vouched: int = 0
    """Tracked repos the listing showed unchanged."""
    listed: int = 0
    """Listing items read."""
    pages: int = 0
    """Listing requests made (pages of up to BATCH items)."""


@dataclass(frozen=True)
class WalkSettings:
    margin: timedelta
    """Overlap with the previous walk: the listing's clock and indexing may lag a little."""
    skew: timedelta
    """How far the source's clock may be behind ours when comparing with our last poll."""
    max_listed: int
    """Items a walk down to the cursor reads at most."""
    first_max_listed: int
    """Items the first walk reads at most."""
    verify_s: float


def walk(
    store: ScheduleStore,
    feed: ChangeFeed,
    kind: SourceKind,
    now: datetime,
    plan: Plan,
    settings: WalkSettings,
    tracked: int,
    heartbeat: Callable[[], None] | None = None,
) -> Walk:
    """Walk `feed` (`tracked` repos of it are tracked) down to its cursor, or seed it the first
    time, judging as it goes."""
    cursor = store.cursor(feed.feed_name)
    result = Walk()
    first = cursor is None
    floor = None if cursor is None else cursor - settings.margin
    limit = settings.max_listed
    if first:
        # Enough to name every tracked repo of a busy Hub; past it, HEADs (budgeted) do.
        limit = min(settings.first_max_listed, max(settings.max_listed, 20 * tracked))
    batch: dict[str, Modified] = {}
    newest: datetime | None = None
    try:
        for item in feed.recently_modified(limit=limit):
            result.listed += 1
            newest = max(newest, item.at) if newest else item.at
            if floor is not None and item.at <= floor:
                result.covered = True
                break
            batch.setdefault(item.repo_id, item)  # the first is the newest
            if len(batch) >= BATCH:
                _judge(store, batch, now, plan, result, settings)
                plan.flush(store)
                batch = {}
                if heartbeat:
                    heartbeat()
                if first and result.seen >= tracked:
                    result.covered = True
                    break
        else:
            result.covered = result.listed < limit  # the listing ended above the floor
    except SourceError as exc:
        # The Hub's deep /api/models pages can answer 504. Items come a whole page at a
        # time, so those read are complete pages: the cursor still moves to the newest,
        # and the repos the walk did not reach are checked in this cycle's pass.
        log.warning("listing_failed", feed=feed.feed_name, error=str(exc))
        result.covered = False
    _judge(store, batch, now, plan, result, settings)
    plan.flush(store)
    result.pages = max(1, -(-result.listed // LISTING_PAGE))
    # NOTE: the cursor only moves forward; a walk that stopped short still moves it, because
    # every repo it did not reach is checked in this cycle's pass.
    value = max(filter(None, (cursor, newest)), default=None) or now
    store.set_cursor(feed.feed_name, value)
    return result


def _judge(
    store: ScheduleStore,
    batch: dict[str, Modified],
    now: datetime,
    plan: Plan,
    walk: Walk,
    settings: WalkSettings,
) -> None:
    """Judge the tracked repos a batch of listing items names."""
    if not batch:
        return
    objects = {i.object_id: i for i in batch.values() if i.object_id}
    for entry in store.schedule_for(batch, objects):
        item = batch.get(entry.ref.repo_id)
        if item is None:
            # A repo renamed upstream is listed under its new id only: found by its object id,
            # woken so that its poll follows the rename in this cycle.
            moved = objects[entry.object_id] if entry.object_id else None
            if moved is None or moved.repo_id in walk.named or entry.woken:
                continue
            log.info("repo_moved_in_listing", repo=entry.ref.repo_id, listed_as=moved.repo_id)
            plan.add_wake(entry.ref.repo_id, WakePriority.CHANGE)
            walk.named.add(entry.ref.repo_id)
            continue
        walk.seen += 1
        private = item.status is not None and item.status.private
        if entry.listed is not True and not private:
            plan.listed.append(entry.ref.repo_id)
        _judge_one(entry, item, now, plan, walk, settings)


def _judge_one(
    entry: ScheduleEntry,
    item: Modified,
    now: datetime,
    plan: Plan,
    walk: Walk,
    settings: WalkSettings,
) -> None:
    repo_id = entry.ref.repo_id
    if entry.head is None or entry.last_polled_at is None:
        return  # never polled: its first poll is a verification, budgeted in the pass
    if item.status is not None:
        changed = item.status.head != entry.head  # the listing says where the head is
    else:
        changed = item.at > entry.last_polled_at - settings.skew
    if changed:
        # A repo already waiting (for its verification, say) is woken again only where the
        # listing names its new head: it then waits as a change.
        if not entry.woken or item.status is not None:
            usable = entry.state in READABLE_STATES and not entry.failed
            plan.add_wake(repo_id, WakePriority.CHANGE, item.status if usable else None)
        walk.named.add(repo_id)
        return
    if entry.failed or entry.state not in READABLE_STATES:
        return  # the pass polls it when due: the listing cannot say what went wrong
    if item.status is not None and item.status.private:
        return  # listed to its owner only: the public listing's bookkeeping does not hold
    # Unchanged, and the listing shows it: vouched for until its verification.
    if entry.due_at is None or entry.due_at <= now or entry.listed is not True:
        plan.due[repo_id] = verification_due(repo_id, now, settings.verify_s)
    walk.named.add(repo_id)
    walk.vouched += 1
