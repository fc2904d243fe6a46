"""Storing a backfill's revisions: PostgreSQL against SQLite, the store alone.

Question: what does writing a revision cost on PostgreSQL beyond what the same writes cost in
SQLite? `bench/backfill.py` answers for the whole backfill, where the differs' CPU (noisy on a
shared machine) hides the store's share. Here the snapshots `add_revision` received in a
backfill of bench/backfill.py's history (COMMITS revisions) are captured once, then written
again into a fresh store: SQLite (a file, the baseline) and the PostgreSQL database of `--db`,
alternating, best of ROUNDS each, wall and CPU (this process's: a server's CPU is not in it,
its time is in the wall column). The difference of wall and CPU is the time spent waiting on
the database. SQL statements per revision counted as bench/backfill.py counts them.

Run: python bench/store_writes.py [COMMITS] [ROUNDS] --db URL
`--db`: an empty PostgreSQL database you can spare: its public schema is dropped and made
afresh every round.
"""

from __future__ import annotations

import collections
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for tests.support and bench

from bench.backfill import fresh_database, history, load
from sqlalchemy import event
from sqlalchemy.engine import Engine

from hubwatch.logging import configure_logging
from hubwatch.models import RepoRef, Snapshot, SourceKind
from hubwatch.sources.git import GitSource
from hubwatch.store.sql import SqlStore
from hubwatch.tracker.poll import Tracker
from tests.support.gitrepo import make_repo

REPO = "bench/writes"
COUNTING = False
"""Whether statements are counted: only those of the timed writes."""


class CapturingStore(SqlStore):
    """A SqlStore that keeps each snapshot it is asked to store."""

    captured: list[Snapshot]

    def add_revision(self, repo_id: str, snapshot: Snapshot) -> bool:
        self.captured.append(snapshot)
        return super().add_revision(repo_id, snapshot)


def capture(commits: int, work: Path) -> list[Snapshot]:
    """The snapshots a backfill of `commits` revisions stores, in order."""
    make_repo(work / "upstream", history(commits), lfs_patterns=())
    store = CapturingStore(f"sqlite:///{work / 'capture.db'}")
    store.captured = []
    store.start()
    source = GitSource(work / "mirrors", timeout_s=600)
    result = Tracker(store, {SourceKind.GIT: source}).track(
        RepoRef(REPO, SourceKind.GIT, str(work / "upstream"))
    )
    source.close()
    store.close()
    assert result.error is None, result.error
    return store.captured


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def write_all(url: str, snapshots: list[Snapshot]) -> tuple[float, float]:
    """Seconds (wall, CPU) to store every snapshot into a fresh store at `url`."""
    if url.startswith("postgresql"):
        fresh_database(url)
    store = SqlStore(url)
    store.start()
    store.add_repo(RepoRef(REPO, SourceKind.GIT, "/nowhere"))
    global COUNTING
    start, cpu = time.perf_counter(), cpu_seconds()
    COUNTING = True
    for snapshot in snapshots:
        assert store.add_revision(REPO, snapshot)
    COUNTING = False
    took, cpu = time.perf_counter() - start, cpu_seconds() - cpu
    store.close()
    return took, cpu


def main() -> None:
    args = sys.argv[1:]
    at = args.index("--db")
    db = args[at + 1]
    del args[at : at + 2]
    commits = int(args[0]) if args else 240
    rounds = int(args[1]) if len(args) > 1 else 5
    configure_logging("WARNING")
    before = load()
    statements: collections.Counter[str] = collections.Counter()

    @event.listens_for(Engine, "before_cursor_execute")
    def _count(conn: Any, _cursor: Any, _statement: str, *_args: Any) -> None:
        if COUNTING:
            statements[conn.engine.dialect.name] += 1

    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        snapshots = capture(commits, tmp)
        best: dict[str, tuple[float, float]] = {}
        for n in range(rounds):
            for name, url in (("sqlite", f"sqlite:///{tmp / f'w{n}.db'}"), ("postgresql", db)):
                statements[name] = 0
                took, cpu = write_all(url, snapshots)
                old = best.get(name, (float("inf"), float("inf")))
                best[name] = (min(old[0], took), min(old[1], cpu))
    count = len(snapshots)
    print(f"{count} revisions of bench/backfill.py's history stored again, best of {rounds};")
    print(f"load average {before} before, {load()} after")
    print(f"{'case':28} {'wall s':>7} {'ms/rev':>7} {'ratio':>6} {'CPU s':>7} {'waited s':>9}")
    base = best["sqlite"][0]
    for name, label in (("postgresql", "add_revision, PostgreSQL"), ("sqlite", "baseline: SQLite")):
        took, cpu = best[name]
        ms = 1000 * took / count
        print(
            f"{label:28} {took:>7.3f} {ms:>7.2f} {took / base:>6.2f} {cpu:>7.3f} {took - cpu:>9.3f}"
        )
    for name in ("postgresql", "sqlite"):
        print(f"SQL statements, {name}: {statements[name] / count:.1f} per revision")


if __name__ == "__main__":
    main()
