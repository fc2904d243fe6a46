"""Which repos a codebase's pins name, recorded in the store: discovery verifies the repos
pinned lately before the others (issue 35)."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

import structlog

from hubwatch.pins.check import PinReport
from hubwatch.store.repos import RepoPins

log = structlog.get_logger(__name__)


def pinned_repos(reports: Iterable[PinReport]) -> list[str]:
    """The tracked names of the repos the checked pins name (a renamed repo's new one), by id."""
    return sorted({r.moved_to or r.pin.repo for r in reports if r.pin.repo is not None})


def record_pins(
    store: RepoPins, reports: Iterable[PinReport], at: datetime, *, read_only: str | None = None
) -> None:
    """Mark each tracked repo the pins name as pinned at `at`. Never raises: the check's verdict
    does not depend on it, so a store that takes no writes (`read_only`: why), or any error, is
    a log line and the check goes on."""
    repo_ids = pinned_repos(reports)
    if not repo_ids:
        return
    if read_only is not None:
        log.info("pins_not_recorded", repos=len(repo_ids), reason=read_only)
        return
    try:
        marked = store.mark_pinned(repo_ids, at)
    # NOTE: broad on purpose: the record only orders verifications; whatever the store raises
    # (a read-only file, a lost server, a driver's own error) must not change the gate's exit.
    except Exception as exc:
        error = " ".join(str(exc).split()) or type(exc).__name__
        log.warning("pins_not_recorded", repos=len(repo_ids), error=error)
        return
    log.info("pins_recorded", repos=len(repo_ids), marked=marked)
