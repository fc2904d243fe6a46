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


def invoke(url: str, *args: str) -> str:
    result = CliRunner().invoke(app, ["list", *args], env={"HUBWATCH_DATABASE_URL": url})
    assert result.exit_code == 0, result.output
    return result.stdout


def test_json_is_written_as_print_json_writes_the_whole_list(store: SqlStore, db_url: str) -> None:
    populate(store)
    text = invoke(db_url, "--json")
    assert json.loads(text) == plain(store.list_repos())
    # the streamed array is byte for byte the indented one a single json.dumps gives
    assert text == json.dumps(plain(store.list_repos()), indent=2, ensure_ascii=False) + "\n"


def test_limit_and_offset_page_the_json(store: SqlStore, db_url: str) -> None:
    populate(store)
    everything = [repo["ref"]["repo_id"] for repo in plain(store.list_repos())]
    page = json.loads(invoke(db_url, "--json", "--offset", "1", "--limit", "2"))
    assert [repo["ref"]["repo_id"] for repo in page] == everything[1:3]
    assert json.loads(invoke(db_url, "--json", "--offset", "99")) == []
    assert json.loads(invoke(db_url, "--json", "--limit", "0")) == []


def test_jsonl_is_one_repo_a_line(store: SqlStore, db_url: str) -> None:
    populate(store)
    lines = invoke(db_url, "--jsonl", "--offset", "2").splitlines()
    assert [json.loads(line) for line in lines] == plain(store.list_repos())[2:]


def test_limit_and_offset_page_the_table(store: SqlStore, db_url: str) -> None:
    populate(store)
    everything = [repo.ref.repo_id for repo in store.list_repos()]
    shown = invoke(db_url, "--limit", "1", "--offset", "3")
    assert [repo for repo in everything if repo in shown.split()] == [everything[3]]


def test_json_and_jsonl_together_are_refused(sqlite_url: str) -> None:
    result = CliRunner().invoke(
        app, ["list", "--json", "--jsonl"], env={"HUBWATCH_DATABASE_URL": sqlite_url}
    )
    assert result.exit_code == 2 and "choose one" in result.output
