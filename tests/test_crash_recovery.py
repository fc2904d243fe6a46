"""SIGKILL the tracker in the middle of a backfill, restart it, and lose nothing."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import IO

import pytest

from hubwatch.store.sql import SqlStore
from tests.support.gitrepo import CommitSpec, make_repo

pytestmark = pytest.mark.slow
REPO_ID = "org/crashy"


Revision = tuple[str, str, tuple[str, ...], tuple[tuple[str, str | None], ...]]
"""A stored revision as compared: sha, date, changed files, every file with its content hash."""


def _history(url: str) -> list[Revision]:
    store = SqlStore(url)
    try:
        result = []
        for rev in store.history(REPO_ID):
            files = tuple((f.path, f.content_sha256) for f in store.files(REPO_ID, rev.sha))
            result.append((rev.sha, rev.date.isoformat(), rev.changed, files))
        return result
    finally:
        store.close()


def _count(url: str) -> int:
    store = SqlStore(url)
    try:
        return len(store.history(REPO_ID)) if store.list_repos() else 0
    except Exception:  # the schema may not exist yet while the child starts
        return 0
    finally:
        store.close()


def _start(
    url: str, data_dir: Path, upstream: Path, capture: bool = False, log: IO[bytes] | None = None
) -> subprocess.Popen[bytes]:
    """`hubwatch track` of `upstream` in a child; its stderr piped (`capture`), written to
    `log` (a file: a pipe nobody reads while the child runs could fill), or dropped."""
    env = {
        **os.environ,
        "HUBWATCH_DATABASE_URL": url,
        "HUBWATCH_DATA_DIR": str(data_dir),
        "HUBWATCH_LOG_LEVEL": "WARNING",
    }
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "hubwatch",
            "track",
            REPO_ID,
            "--source",
            "git",
            "--url",
            str(upstream),
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE if capture else (log or subprocess.DEVNULL),
    )


# Enough commits that six kills land before the backfill ends (a fast backfill writes several
# revisions between two of the test's looks at the store).
COMMITS = 100


@pytest.fixture(scope="module")
def upstream(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Revision]]:
    """The upstream repo and its history as one uninterrupted run records it: read-only, built
    once for both databases."""
    tmp = tmp_path_factory.mktemp("crashy")
    # Each commit changes a sizeable tokenizer file, so each revision is a real write.
    make_repo(
        tmp / "up",
        [
            CommitSpec(
                {
                    "tokenizer.json": (f'{{"v": {i}, "pad": "' + "x" * 200_000 + '"}').encode(),
                    "config.json": f'{{"n": {i}}}'.encode(),
                },
                message=f"commit {i}",
            )
            for i in range(COMMITS)
        ],
    )
    # The reference: one uninterrupted run into a fresh SQLite database.
    reference_url = f"sqlite:///{tmp / 'reference.db'}"
    ref = _start(reference_url, tmp / "ref-data", tmp / "up", capture=True)
    _, stderr = ref.communicate(timeout=120)
    assert ref.returncode == 0, stderr.decode()
    return tmp / "up", _history(reference_url)


def test_sigkill_during_backfill_loses_and_duplicates_nothing(
    db_url: str, tmp_path: Path, upstream: tuple[Path, list[Revision]]
) -> None:
    upstream_path, uninterrupted = upstream
    kills = 0
    # First a kill at a fixed delay (start-up, migrations, the mirror clone), then kills once
    # the store holds a few more revisions than before (the next write is then under way). A
    # run that ends by itself must have finished the backfill; on a fast, idle machine that can
    # happen before the sixth kill, so three are the least asked for.
    for round_ in range(6):
        before = _count(db_url)
        log = tmp_path / f"round-{round_}.log"
        with log.open("wb") as sink:
            proc = _start(db_url, tmp_path / "data", upstream_path, log=sink)
            if round_ == 0:
                time.sleep(0.3)
            else:
                deadline = time.monotonic() + 60
                while _count(db_url) < before + 4 and proc.poll() is None:
                    assert time.monotonic() < deadline, "backfill made no progress"
                    time.sleep(0.005)
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
                kills += 1
            proc.wait()
        if proc.returncode != -signal.SIGKILL:
            assert proc.returncode == 0, f"round {round_}: {log.read_text()}"
            assert _count(db_url) == COMMITS, f"round {round_} ended early: {log.read_text()}"
            break
    assert kills >= 3, f"the backfill finished after {kills} kills"

    final = _start(db_url, tmp_path / "data", upstream_path, capture=True)
    _, stderr = final.communicate(timeout=120)
    assert final.returncode == 0, stderr.decode()

    assert len(uninterrupted) == COMMITS
    assert _history(db_url) == uninterrupted
