"""paused_gc(): the collector is paused only when no other thread is alive, and restored exactly."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import hubwatch
from hubwatch.gcpause import paused_gc

# The child imports the same hubwatch as this test, wherever it was installed from.
SRC = str(Path(hubwatch.__file__).resolve().parents[1])


def in_fresh_process(code: str) -> list[str]:
    """Lines printed by `code`, run in a new interpreter where the main thread is alone."""
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": SRC},
    )
    return done.stdout.split()


def test_collector_keeps_running_while_another_thread_is_alive() -> None:
    release = threading.Event()
    other = threading.Thread(target=release.wait, daemon=True)
    other.start()
    try:
        assert gc.isenabled()
        with paused_gc():
            assert gc.isenabled()
        assert gc.isenabled()
    finally:
        release.set()
        other.join()


def test_collector_is_paused_when_alone_and_enabled_after() -> None:
    lines = in_fresh_process(
        """
        import gc, threading
        from hubwatch.gcpause import paused_gc
        print(threading.active_count(), gc.isenabled())
        with paused_gc():
            print(gc.isenabled())
            with paused_gc():
                print(gc.isenabled())
            print(gc.isenabled())
        print(gc.isenabled())
        """
    )
    assert lines == ["1", "True", "False", "False", "False", "True"]


def test_an_already_disabled_collector_stays_disabled() -> None:
    lines = in_fresh_process(
        """
        import gc
        from hubwatch.gcpause import paused_gc
        gc.disable()
        with paused_gc():
            print(gc.isenabled())
        print(gc.isenabled())
        """
    )
    assert lines == ["False", "False"]
