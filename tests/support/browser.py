"""The pages served for a real browser: a store with every kind of page filled, uvicorn on a
free port, and the checks each page must pass in Chromium (overflow, console, axe-core); Debian's
chromium driven by Playwright, never a downloaded browser."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import uvicorn

from hubwatch.api import create_app
from hubwatch.models import CommitSha, RepoRef, SourceKind
from hubwatch.models.lineage import Lineage, LineageStatus, Relation
from hubwatch.settings import Settings
from hubwatch.store.sql import SqlStore
from tests.support.require import REQUIRE_BROWSER, require
from tests.support.served import OTHER, REPO, STOP, fill
from tests.support.trend_history import fill_growing
from tests.test_tracking_git import make_tracker

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
GRANITE = "ibm-granite/granite-3.1-1b-a400m-instruct"


def chromium_or_skip() -> Path:
    """Debian's chromium, or a skip (a failure where CI requires the browser)."""
    if not CHROMIUM.exists():
        require(REQUIRE_BROWSER, f"needs Debian's chromium at {CHROMIUM} (apt install chromium)")
    return CHROMIUM


def granite_store(db: Path, clone: Path, mirrors: Path) -> SqlStore:
    """A started SQLite store at `db` tracking the granite history cloned at `clone`."""
    store = SqlStore(f"sqlite:///{db}")
    store.start()
    make_tracker(store, mirrors).track(RepoRef(GRANITE, SourceKind.GIT, str(clone)))
    return store


BLOCKING_IMPACTS = frozenset({"serious", "critical"})
"""The axe-core impacts that fail a page."""


def fill_every_page(store: SqlStore) -> dict[str, CommitSha]:
    """The pages' data: fill() (org/model, other/thing), org/growing for the charts, and
    other/thing as a stale fine-tune of org/model (a lineage section). Returns the shas the
    page list's URLs name: `revision` (org/model's newest), `base` and `head` (its oldest and
    newest, for a comparison)."""
    shas = fill(store)
    fill_growing(store)
    (derived,) = [r.sha for r in store.history(OTHER.repo_id)]
    store.set_lineage(
        Lineage(
            OTHER.repo_id,
            derived,
            REPO.repo_id,
            Relation.FINETUNE,
            LineageStatus.STALE,
            base_sha=shas[0],
            missed=(
                {
                    "sha": shas[1],
                    "kind": STOP.kind,
                    "severity": STOP.severity.value,
                    "summary": STOP.summary,
                    "path": STOP.path,
                },
            ),
            aspects=("generation",),
            checked_at=datetime(2024, 2, 1, tzinfo=UTC),
            detail="generation differs from the base's newest revision",
        )
    )
    polled = datetime(2024, 2, 1, 12, 30, tzinfo=UTC)
    for repo in store.list_repos():  # a polled repo's row is the index's widest
        head = store.history(repo.ref.repo_id)[-1].sha
        store.update_repo(repo.ref.repo_id, head=head, polled_at=polled)
    return {"revision": shas[2], "base": shas[0], "head": shas[2]}


@contextmanager
def serving(store: SqlStore) -> Iterator[str]:
    """The app over `store` on uvicorn on a free port; its base URL."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    config = uvicorn.Config(
        create_app(store, Settings()), host="127.0.0.1", port=port, log_config=None
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def overflow(page: Any) -> int:
    """How many CSS pixels the page is wider than its viewport (0: no horizontal scroll)."""
    width: int = page.evaluate(
        "Math.max(document.documentElement.scrollWidth, document.body.scrollWidth)"
        " - document.documentElement.clientWidth"
    )
    return width


def blocking_violations(page: Any) -> list[str]:
    """axe-core's serious and critical violations on the page, one line each (rule, impact,
    help, the first offending elements). axe-core comes with axe-playwright-python; it is
    evaluated through the DevTools protocol, which the pages' CSP (no script) does not stop."""
    from axe_playwright_python.sync_playwright import Axe

    results = Axe().run(page).response
    found = []
    for violation in results["violations"]:
        if violation.get("impact") in BLOCKING_IMPACTS:
            targets = [", ".join(node["target"]) for node in violation["nodes"][:3]]
            found.append(
                f"{violation['id']} ({violation['impact']}): {violation['help']} at {targets}"
            )
    return found
