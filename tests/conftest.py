"""Shared fixtures: stores on SQLite and PostgreSQL, the real data folder, the granite mirror."""

from __future__ import annotations

import logging
import os
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import structlog
from hypothesis import settings

from hubwatch.store.sql import SqlStore
from tests.support.pgcluster import DEBIAN_BIN_GLOB, PostgresCluster, server_binaries
from tests.support.require import REQUIRE_POSTGRES, require

# NOTE: Hypothesis fails an example slower than 200 ms by default: a timing assertion, which a
# loaded CI machine breaks (seen: a card-parsing property on 2 busy cores). No test asserts time.
settings.register_profile("hubwatch", deadline=None)
settings.load_profile("hubwatch")

# The real fixtures (Hub mirrors, Hub traces, OSV records, published configs), copied from
# ../shared with their provenance notes so that a clone runs every test (tests/data/PROVENANCE.md).
DATA = Path(__file__).resolve().parent / "data"
GRANITE_BUNDLE = DATA / "hub-mirrors" / "granite-3.1-1b-a400m-instruct.bundle"
PG_ENV = "HUBWATCH_TEST_DATABASE_URL"


@pytest.fixture(autouse=True)
def _restore_logging() -> Iterator[None]:
    """CLI tests configure logging for the process; put it back so later tests start clean."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    structlog.reset_defaults()
    root.handlers, root.level = handlers, level


@pytest.fixture(autouse=True)
def _default_hub_client() -> Iterator[None]:
    """A HubSource installs its paced client in huggingface_hub's one global session factory."""
    yield
    import huggingface_hub
    from huggingface_hub.utils._http import default_client_factory

    huggingface_hub.set_client_factory(default_client_factory)


@pytest.fixture(scope="session")
def postgres_base_url() -> Iterator[str]:
    """The PostgreSQL URL to test against: HUBWATCH_TEST_DATABASE_URL, else a throwaway cluster.

    The cluster (initdb + pg_ctl in a temp dir, on a free port) lives for the session and is
    removed after it. Skipped, with the reason, only where no server binaries are installed.
    """
    url = os.environ.get(PG_ENV)
    if url:
        yield url
        return
    bin_dir = server_binaries()
    if bin_dir is None:
        require(
            REQUIRE_POSTGRES,
            f"PostgreSQL tests need initdb and pg_ctl (on PATH or in {DEBIAN_BIN_GLOB}; Debian: "
            f"apt install postgresql) or {PG_ENV}=postgresql+psycopg://user@host/db",
        )
    assert bin_dir is not None
    cluster = PostgresCluster.start(bin_dir)
    try:
        yield cluster.url
    finally:
        cluster.stop()


def _pg_admin(url: str, sql: str) -> None:
    import psycopg

    plain = url.replace("postgresql+psycopg://", "postgresql://", 1)
    try:
        with psycopg.connect(plain, autocommit=True, connect_timeout=5) as conn:
            conn.execute(sql)
    except psycopg.OperationalError as exc:
        require(REQUIRE_POSTGRES, f"PostgreSQL at {PG_ENV} is not reachable: {exc}")


@pytest.fixture
def pg_url(postgres_base_url: str) -> Iterator[str]:
    """A URL to a fresh, empty schema in the test PostgreSQL database, dropped afterwards."""
    base = postgres_base_url
    schema = f"hw_{uuid.uuid4().hex[:12]}"
    _pg_admin(base, f'CREATE SCHEMA "{schema}"')
    sep = "&" if "?" in base else "?"
    yield f"{base}{sep}options=-csearch_path%3D{schema}"
    _pg_admin(base, f'DROP SCHEMA "{schema}" CASCADE')


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'hubwatch.db'}"


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Each test using this runs once on SQLite and once on PostgreSQL."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'hubwatch.db'}"
    return str(request.getfixturevalue("pg_url"))


@pytest.fixture
def store(db_url: str) -> Iterator[SqlStore]:
    store = SqlStore(db_url)
    store.start()
    yield store
    store.close()


@pytest.fixture(scope="session")
def granite_git(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The real 9-commit granite history, cloned from the vendored bundle."""
    target = tmp_path_factory.mktemp("mirrors") / "granite"
    subprocess.run(["git", "clone", "--quiet", str(GRANITE_BUNDLE), str(target)], check=True)
    return target
