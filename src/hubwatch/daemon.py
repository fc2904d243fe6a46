"""The worker daemon: APScheduler wiring only; the jobs call the tracker, advisories and store.

Jobs of one worker process:

- `discovery`, every `work_tick_s`: change discovery when it is due and no other worker runs
  it (`hubwatch.worker.work.Worker.discover`);
- `work`, every `work_tick_s`: poll the woken repos under a lease, `poll_concurrency` at a time,
  each in its own thread, a stuck one abandoned after `poll_timeout_s` (`Worker.work`);
- `advisories`, every `advisory_refresh_s`: refresh the advisory data and re-check every
  revision, run by one worker of many at a time;
- any `extra_jobs` a caller passes: the hook point for webhook delivery (the notify work) and
  anything else periodic. Each names whether one worker of many runs it at a time.

SIGTERM or SIGINT stops the worker gracefully: the revisions being stored are finished, the rest
of those repos is released to other workers, and the process exits.
"""

from __future__ import annotations

import functools
import signal
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from types import FrameType

import structlog
from apscheduler.schedulers.background import BackgroundScheduler

from hubwatch import metrics
from hubwatch.errors import StoreUnavailable
from hubwatch.runtime import Runtime, refresh_advisories
from hubwatch.settings import AdvisoryServiceKind
from hubwatch.store.scheduling import ScheduleStore
from hubwatch.worker.discovery import Discovery
from hubwatch.worker.work import Worker, worker_slot

log = structlog.get_logger(__name__)

STOP_POLL_S = 0.2
"""How often the main thread looks for a stop signal: the most it adds to a stop."""


@dataclass(frozen=True)
class PeriodicJob:
    """A job a worker runs every `every_s` seconds."""

    name: str
    run: Callable[[], object]
    every_s: float
    exclusive: bool = True
    """Run by one worker of many at a time (through a job lease in the store)."""


def make_worker(rt: Runtime, owner: str | None = None) -> Worker:
    """A Worker over the runtime's store and tracker, with discovery set from its settings."""
    cfg = rt.settings
    discovery = Discovery(
        rt.store,
        rt.sources,
        interval_s=cfg.poll_interval_s,
        verify_s=cfg.verify_interval_s,
        pinned_s=cfg.pinned_window_days * 86_400.0,
        jitter=cfg.poll_jitter,
    )
    return Worker(
        rt.store,
        rt.tracker,
        discovery,
        interval_s=cfg.poll_interval_s,
        lease_s=cfg.lease_s,
        owner=owner,
        concurrency=cfg.poll_concurrency,
        stall_s=cfg.poll_timeout_s,
        tick_s=cfg.work_tick_s,  # polls still running go on while discovery runs again
    )


def default_jobs(rt: Runtime) -> list[PeriodicJob]:
    """The periodic jobs every worker runs besides polling: the advisory refresh."""
    jobs = []
    if (
        rt.settings.advisory_refresh_s > 0
        and rt.settings.advisory_service is not AdvisoryServiceKind.OFF
    ):
        jobs.append(
            PeriodicJob(
                "advisories",
                lambda: refresh_advisories(rt.settings, rt.store),
                rt.settings.advisory_refresh_s,
            )
        )
    return jobs


def run_forever(
    rt: Runtime,
    *,
    owner: str | None = None,
    extra_jobs: Sequence[PeriodicJob] = (),
    metrics_port: int | None = None,
) -> None:
    """Run a worker until SIGINT or SIGTERM; WorkerConflict if SQLite already has one.

    `owner`: the worker's id (else HUBWATCH_WORKER_ID, else the host's name): a worker
    restarted under its id takes back at once the repos it held when it died.
    """
    cfg = rt.settings
    with worker_slot(rt.store, owner or cfg.worker_id) as name:
        worker = make_worker(rt, name)
        scheduler = _scheduler(rt, worker, extra_jobs)
        signals = StopSignals()
        if metrics_port is not None:
            metrics.serve(metrics_port)
        scheduler.start()
        log.info(
            "daemon_started",
            worker=worker.owner,
            interval_s=cfg.poll_interval_s,
            metrics_port=metrics_port,
        )
        received = signals.wait()
        log.info("daemon_stopping", signal=received.name)
        worker.stopping.set()  # the current revisions finish; the rest is released
        scheduler.shutdown(wait=True)  # the jobs running now end
        worker.wind_down()  # the polls still running stop at their next revision
        log.info("daemon_stopped", worker=worker.owner)


class StopSignals:
    """SIGTERM and SIGINT, noted by a handler that does nothing else; `wait` for one.

    A handler runs in the main thread between any two of its bytecodes, so inside whatever lock
    that thread holds then: the log handler's (the scheduler logs a skipped run from there), the
    thread pool's, an Event's. One that logs, sets an Event or waits for the jobs can deadlock
    with the threads that need that lock (a worker that never exits), or find the scheduler not
    started yet (exit 1). So the handler only appends to a list, and the main thread acts.
    """

    def __init__(self) -> None:
        self.received: list[signal.Signals] = []
        signal.signal(signal.SIGTERM, self._note)
        signal.signal(signal.SIGINT, self._note)

    def _note(self, signum: int, _frame: FrameType | None) -> None:
        self.received.append(signal.Signals(signum))  # takes no lock

    def wait(self) -> signal.Signals:
        """The first stop signal, once one came (looked for every `STOP_POLL_S`)."""
        while not self.received:
            time.sleep(STOP_POLL_S)
        return self.received[0]


def _scheduler(rt: Runtime, worker: Worker, extra: Sequence[PeriodicJob]) -> BackgroundScheduler:
    """The worker's jobs: discovery, the polls, and the periodic ones."""
    cfg = rt.settings
    scheduler = BackgroundScheduler(timezone=UTC)
    every = min(cfg.work_tick_s, cfg.poll_interval_s)
    # Two jobs, so that a slow discovery (a listing from a black-holed Hub) never holds up the
    # polls of repos already woken; each delays its own next run when slow, never overlaps it.
    for name, run in (("discovery", worker.discover), ("work", worker.work)):
        scheduler.add_job(
            _quiet_outage(run),
            "interval",
            seconds=every,
            next_run_time=datetime.now(UTC),
            max_instances=1,
            coalesce=True,
            id=name,
        )
    for job in [*default_jobs(rt), *extra]:
        scheduler.add_job(
            _quiet_outage(_guarded(job, rt.store, worker)),
            "interval",
            seconds=job.every_s,
            next_run_time=datetime.now(UTC),
            max_instances=1,
            coalesce=True,
            jitter=min(30.0, job.every_s / 10),
            id=job.name,
        )
    return scheduler


def _guarded(job: PeriodicJob, store: ScheduleStore, worker: Worker) -> Callable[[], None]:
    """The job, run only when its lease is won (if exclusive); a failure is logged, not fatal."""

    def run() -> None:
        now = datetime.now(UTC)
        if worker.stopping.is_set():
            return
        if job.exclusive and not store.claim_job(job.name, worker.owner, now, job.every_s):
            return
        try:
            job.run()
            log.debug("job_finished", job=job.name)  # every tick: not worth a line (issue 32)
        except StoreUnavailable:
            raise  # not a failure of the job: the store logs the outage once (_quiet_outage)
        except Exception:  # a periodic job must never end the worker
            log.exception("job_failed", job=job.name)
        finally:
            if job.exclusive:
                store.finish_job(job.name, worker.owner, now + timedelta(seconds=job.every_s))

    return run


def _quiet_outage(run: Callable[[], object]) -> Callable[[], None]:
    """`run`, ended quietly by a database outage: the store logs one line when it starts and
    one when it ends (`store/outage.py`), not a traceback per run; the next run tries again."""

    @functools.wraps(run)
    def quiet() -> None:
        try:
            run()
        except StoreUnavailable:
            pass

    return quiet
