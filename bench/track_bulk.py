"""Registering many repos: `hubwatch track --from FILE` against one `add_repo` at a time.

Question: how long does registering REPOS repos take, on SQLite and on PostgreSQL, and what does
each repo cost in the database? The bulk path is the real command line, in a child process
(`python -m hubwatch track --from FILE`, start-up included) into a fresh database; run again on
the same file, it shows what a repeat costs (every repo already tracked). The baseline, in the
same run and on the same database kind: `SqlStore.add_repo` once per repo for SAMPLE repos (what
registering repo by repo costs the store alone, no poll and no process start), extrapolated to
REPOS. Database bytes per repo: the growth of the database file (SQLite, with its WAL) or of the
schema's relations (PostgreSQL) over a freshly migrated empty store, divided by REPOS.

Run: python bench/track_bulk.py [REPOS] [SAMPLE]
PostgreSQL: HUBWATCH_TEST_DATABASE_URL (default postgresql+psycopg://postgres@127.0.0.1:5432/test),
a throwaway schema made and dropped in it; skipped, and said so, when it cannot be reached.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hubwatch.models import RepoRef
from hubwatch.store.sql import SqlStore

DEFAULT_PG = "postgresql+psycopg://postgres@127.0.0.1:5432/test"


def ids(count: int, prefix: str) -> list[str]:
    """Repo ids shaped like the Hub's: a thousand owners, names of a typical length."""
    return [f"{prefix}-org{n % 1000}/model-{n:06d}-instruct" for n in range(count)]


def cli(env: dict[str, str], *args: str) -> float:
    """Seconds `hubwatch ARGS` took, in a child process; it must succeed."""
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "hubwatch", *args], env=env, capture_output=True, text=True
    )
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"hubwatch {' '.join(args)} failed ({done.returncode}): {done.stderr}")
    return seconds


def one_at_a_time(url: str, sample: list[str]) -> float:
    """Seconds `add_repo` took for every id of `sample`, one call each (store started first)."""
    store = SqlStore(url)
    store.start()
    try:
        start = time.perf_counter()
        for repo_id in sample:
            store.add_repo(RepoRef(repo_id))
        return time.perf_counter() - start
    finally:
        store.close()


def sqlite_bytes(data: Path) -> int:
    return sum(path.stat().st_size for path in data.glob("hubwatch.db*"))


@contextmanager
def pg_schema(base: str) -> Iterator[tuple[str, Callable[[], int]]]:
    """A URL into a fresh schema of `base`, and what its relations hold in bytes; dropped after."""
    schema = f"bench_{uuid.uuid4().hex[:10]}"
    plain = base.replace("postgresql+psycopg://", "postgresql://", 1)
    with psycopg.connect(plain, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')

    def size() -> int:
        with psycopg.connect(plain, autocommit=True) as conn:
            row = conn.execute(
                "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
                "JOIN pg_namespace n ON n.oid = c.relnamespace "
                "WHERE n.nspname = %s AND c.relkind IN ('r', 'm')",
                (schema,),
            ).fetchone()
        return int(row[0]) if row else 0

    try:
        yield f"{base}{'&' if '?' in base else '?'}options=-csearch_path%3D{schema}", size
    finally:
        with psycopg.connect(plain, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA "{schema}" CASCADE')


def measure(
    label: str,
    env: dict[str, str],
    listing: Path,
    repos: int,
    baseline: float,
    size: Callable[[], int],
) -> str:
    """One database kind: migrate, size the empty store, register, register again."""
    cli(env, "db", "upgrade")
    empty = size()
    bulk = cli(env, "track", "--from", str(listing))
    grown = size() - empty
    again = cli(env, "track", "--from", str(listing))
    ratio = baseline / bulk
    return (
        f"{label:<10} {bulk:>8.1f} s {again:>8.1f} s {baseline:>10.1f} s {ratio:>7.1f}x "
        f"{grown / repos:>9.0f}"
    )


def main(repos: int, sample_size: int) -> None:
    base = os.environ.get("HUBWATCH_TEST_DATABASE_URL", DEFAULT_PG)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        listing = root / "repos.txt"
        listing.write_text("".join(f"{repo_id}\n" for repo_id in ids(repos, "bulk")))
        sample = ids(sample_size, "one")
        plain = {k: v for k, v in os.environ.items() if not k.startswith(("HUBWATCH_", "HF_"))}
        env = {**plain, "HUBWATCH_LOG_LEVEL": "ERROR", "HF_ENDPOINT": "http://127.0.0.1:9"}

        data = root / "sqlite"
        sqlite_env = {**env, "HUBWATCH_DATA_DIR": str(data)}
        seconds = one_at_a_time(f"sqlite:///{root / 'one.db'}", sample)
        baseline = seconds * repos / sample_size
        rows.append(
            measure("SQLite", sqlite_env, listing, repos, baseline, lambda: sqlite_bytes(data))
        )
        print(rows[-1], file=sys.stderr)

        try:
            with pg_schema(base) as (url, _):
                seconds = one_at_a_time(url, sample)
            with pg_schema(base) as (url, size):
                pg_env = {
                    **env,
                    "HUBWATCH_DATA_DIR": str(root / "pg"),
                    "HUBWATCH_DATABASE_URL": url,
                }
                baseline = seconds * repos / sample_size
                rows.append(measure("PostgreSQL", pg_env, listing, repos, baseline, size))
        except psycopg.OperationalError as exc:
            rows.append(f"PostgreSQL skipped: {str(exc).strip().splitlines()[0]}")
    print(
        f"{repos:,} repo ids in one file; baseline: add_repo one at a time for {sample_size:,}, "
        f"extrapolated; {os.cpu_count()} CPUs"
    )
    heads = ("--from", "again", "one by one", "ratio", "B/repo")
    print(
        f"{'database':<10} "
        + " ".join(f"{h:>{w}}" for h, w in zip(heads, (10, 10, 12, 8, 9), strict=True))
    )
    for row in rows:
        print(row)


if __name__ == "__main__":
    args = [int(a) for a in sys.argv[1:]]
    main(*(args + [100_000, 2_000][len(args) :]))
