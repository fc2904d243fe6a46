"""Pages in a real browser: a store served by uvicorn on 127.0.0.1, Debian's chromium driven by
Playwright (never a downloaded browser)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import uvicorn

from hubwatch.api import create_app
from hubwatch.models import RepoRef, SourceKind
from hubwatch.settings import Settings
from hubwatch.store.sql import SqlStore
from tests.support.require import REQUIRE_BROWSER, require
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


@contextmanager
def served(store: SqlStore) -> Iterator[str]:
    """The API and pages over `store` on a free port of 127.0.0.1: its base URL."""
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
