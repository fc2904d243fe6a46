"""`hubwatch list`: read without SQLAlchemy from a database at head, through the store otherwise."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from hubwatch.cli import app
from hubwatch.cli.base import plain
from hubwatch.store.dbapi import SCHEMA_HEAD
from hubwatch.store.sql import SqlStore, make_engine
from hubwatch.store.sql.migrate import current, upgrade
from tests.test_store_dbapi import populate

FULL = ("sqlalchemy", "sqlmodel", "alembic")

# Runs `hubwatch list --json` as the console does, then names the full store's modules it loaded.
PROBE = """
import json, sys
full = json.loads(sys.argv[1])
sys.argv = ["hubwatch", "list", "--json"]
from hubwatch.cli import main
try:
    main()
except SystemExit:
    pass
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in full)))
"""


def list_json(tmp_path: Path, url: str) -> tuple[object, list[str]]:
    """`list --json` in a fresh process on `url`: the listing, and the full store's modules."""
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith("HUBWATCH_")}
    env["HUBWATCH_DATABASE_URL"] = url
    done = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(FULL)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,  # no .env file
        check=True,
    )
    *listing, modules = done.stdout.strip().splitlines()
    return json.loads("\n".join(listing)), json.loads(modules)


def test_json_at_head_is_the_stores_without_importing_it(
    store: SqlStore, db_url: str, tmp_path: Path
) -> None:
    populate(store)
    listing, modules = list_json(tmp_path, db_url)
    assert modules == []
    assert listing == plain(store.list_repos())


def test_missing_database_is_created_as_before(tmp_path: Path) -> None:
    path = tmp_path / "new" / "hubwatch.db"
    result = CliRunner().invoke(
        app, ["list", "--json"], env={"HUBWATCH_DATA_DIR": str(path.parent)}
    )
    assert result.exit_code == 0 and result.stdout.strip() == "[]"
    engine = make_engine(f"sqlite:///{path}")
    assert current(engine) == SCHEMA_HEAD
    engine.dispose()


def test_schema_behind_head_is_migrated_then_listed(db_url: str, tmp_path: Path) -> None:
    engine = make_engine(db_url)
    upgrade(engine, "0010")
    listing, modules = list_json(tmp_path, db_url)
    assert listing == [] and "alembic" in modules
    assert current(engine) == SCHEMA_HEAD
    engine.dispose()


def test_table_reads_the_same_repos(store: SqlStore, db_url: str) -> None:
    populate(store)
    result = CliRunner().invoke(app, ["list"], env={"HUBWATCH_DATABASE_URL": db_url})
    assert result.exit_code == 0
    assert "org/gamma" in result.stdout and "degraded" in result.stdout
