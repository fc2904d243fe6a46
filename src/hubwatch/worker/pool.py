"""The polls one worker runs at once: a thread each, their leases kept, a stuck one abandoned.

A poll that stores no revision for `stall_s` is abandoned: it is told to stop at its next revision
(it may be inside one request or one git command, each bounded by its own timeout), its repo is
handed to `on_abandon` (which records the failure and gives the lease back), and its slot goes to
the next repo. Its thread ends on its own; until then it counts against the spare threads (as many
as the slots), so that abandoned polls cannot pile up without bound.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import structlog

from hubwatch.errors import StoreUnavailable
from hubwatch.tracker.poll import PollResult

log = structlog.get_logger(__name__)

WATCH_S = 0.5
"""How often the watcher checks the running polls (leases, stalls)."""


@dataclass
class RunningPoll:
    """One poll in its thread, as the watcher sees it."""

    repo_id: str
    progressed: float
    """When it started or last stored a revision (monotonic)."""
    renewed: float
    """When its lease was last renewed (monotonic)."""
    done: int = 0
    total: int = 0
    stop: threading.Event = field(default_factory=threading.Event)
    """Set when it must end at its next revision: abandoned, or its lease lost."""
    abandoned: bool = False
    finished: bool = False

    def advanced(self, done: int, total: int) -> None:
        """Called at each stored revision: the watchdog starts counting again."""
        self.progressed = time.monotonic()
        self.done, self.total = done, total


class PollPool:
    """Up to `size` polls at a time, each in a daemon thread, watched by one watcher thread."""

    def __init__(
        self,
        size: int,
        *,
        stall_s: float,
        renew_s: float,
        renew: Callable[[str], bool],
        on_abandon: Callable[[RunningPoll], PollResult],
    ) -> None:
        self.size = size
        self._stall_s = stall_s
        self._renew_s = renew_s
        self._renew = renew
        self._on_abandon = on_abandon
        self._running: dict[str, RunningPoll] = {}
        self._abandoned: dict[str, RunningPoll] = {}
        self._results: queue.Queue[PollResult | None] = queue.Queue()
        self._lock = threading.Lock()
        self._watcher: threading.Thread | None = None

    @property
    def running(self) -> int:
        with self._lock:
            return len(self._running)

    def free(self) -> int:
        """How many more polls may start now: free slots, fewer while abandoned ones linger."""
        with self._lock:
            lingering = len(self._abandoned)
            return max(0, min(self.size - len(self._running), 2 * self.size - lingering))

    def lingering(self, repo_id: str) -> bool:
        """Whether an abandoned poll of `repo_id` is still running."""
        with self._lock:
            return repo_id in self._abandoned

    def start(self, repo_id: str, run: Callable[[RunningPoll], PollResult | None]) -> None:
        """Run `run(poll)` in a thread of its own; its result is collected by `wait`."""
        now = time.monotonic()
        poll = RunningPoll(repo_id, progressed=now, renewed=now)

        def body() -> None:
            result = None
            try:
                result = run(poll)
            except StoreUnavailable:
                pass  # the store logs the outage once; the lease lapses and the repo comes back
            except Exception:  # a thread's death must not go unlogged, nor end the worker
                log.exception("poll_thread_failed", repo=repo_id)
            finally:
                with self._lock:
                    self._running.pop(repo_id, None)
                    self._abandoned.pop(repo_id, None)
                if not poll.abandoned:
                    self._results.put(result)

        with self._lock:
            self._running[repo_id] = poll
            if self._watcher is None:
                self._watcher = threading.Thread(target=self._watch, name="watchdog", daemon=True)
                self._watcher.start()
        threading.Thread(target=body, name=f"poll {repo_id}", daemon=True).start()

    def settle(self, poll: RunningPoll) -> bool:
        """Mark `poll` finished unless it was abandoned meanwhile; False: it was (its repo is
        no longer this poll's to record or release)."""
        with self._lock:
            poll.finished = not poll.abandoned
            return poll.finished

    def wait(self, timeout_s: float) -> list[PollResult]:
        """The results of the polls that ended, waiting up to `timeout_s` for the first."""
        found: list[PollResult | None] = []
        try:
            found.append(self._results.get(timeout=timeout_s))
            while True:
                found.append(self._results.get_nowait())
        except queue.Empty:
            pass
        return [result for result in found if result is not None]

    def _watch(self) -> None:
        while True:
            time.sleep(WATCH_S)
            with self._lock:
                if not self._running:
                    self._watcher = None
                    return
                polls = list(self._running.values())
            for poll in polls:
                try:
                    self._check(poll)
                except Exception as exc:  # the store failing, say: the watcher goes on
                    log.warning("watchdog_failed", repo=poll.repo_id, error=str(exc))

    def _check(self, poll: RunningPoll) -> None:
        now = time.monotonic()
        if now - poll.progressed > self._stall_s:
            with self._lock:
                if poll.finished or poll.abandoned:
                    return
                poll.abandoned = True
                poll.stop.set()
                self._running.pop(poll.repo_id, None)
                self._abandoned[poll.repo_id] = poll
            self._results.put(self._on_abandon(poll))
        elif now - poll.renewed > self._renew_s:
            poll.renewed = now
            if not self._renew(poll.repo_id):
                log.warning("lease_lost", repo=poll.repo_id)
                poll.stop.set()
