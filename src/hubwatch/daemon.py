"""The poll loop: APScheduler wiring only; each run polls every tracked repo once."""

from __future__ import annotations

import signal
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from types import FrameType

import structlog
from apscheduler.schedulers.blocking import BlockingScheduler

from hubwatch.tracker.poll import Tracker

log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class ExtraJob:
    """Another periodic job run beside the poll (webhook delivery)."""

    id: str
    run: Callable[[], None]
    interval_s: float


def run_forever(tracker: Tracker, interval_s: float, extra_jobs: Sequence[ExtraJob] = ()) -> None:
    """Poll all repos now and then every `interval_s` seconds until SIGINT or SIGTERM."""
    scheduler = BlockingScheduler(timezone=UTC)
    for job in extra_jobs:
        scheduler.add_job(
            job.run, "interval", seconds=job.interval_s, max_instances=1, coalesce=True, id=job.id
        )

    def poll_cycle() -> None:
        results = tracker.poll_all()
        log.info(
            "poll_cycle_finished",
            repos=len(results),
            new_revisions=sum(len(r.new) for r in results),
            failed=sum(1 for r in results if r.error),
        )

    scheduler.add_job(
        poll_cycle,
        "interval",
        seconds=interval_s,
        next_run_time=datetime.now(UTC),
        max_instances=1,  # a slow cycle delays the next one instead of overlapping it
        coalesce=True,
        jitter=min(30.0, interval_s / 10),
        id="poll",
    )

    def stop(signum: int, _frame: FrameType | None) -> None:
        log.info("daemon_stopping", signal=signal.Signals(signum).name)
        scheduler.shutdown(wait=True)  # the current repo's transaction finishes first

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    log.info("daemon_started", interval_s=interval_s)
    scheduler.start()
