"""Running the Alembic migrations that ship inside the package."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import text
from sqlalchemy.engine import Engine
from sqlalchemy.exc import SQLAlchemyError

if TYPE_CHECKING:
    from alembic.config import Config

MIGRATIONS = Path(__file__).parent / "migrations"

_REVISION = re.compile(r"^revision\b[^=]*=\s*[\"']([^\"']+)[\"']", re.MULTILINE)
_DOWN = re.compile(r"^down_revision\b[^=]*=(.*)$", re.MULTILINE)


def alembic_config(engine: Engine) -> Config:
    """An Alembic config bound to `engine`, without an alembic.ini on disk."""
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes["engine"] = engine
    return config


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Bring the schema to `revision` (the newest by default); safe to run on every start.

    A database already at the one head is left alone without loading Alembic, which costs a
    store-reading command (`hubwatch list`) more than its query (issue 15).
    """
    if revision == "head" and (head := shipped_head()) is not None and current(engine) == head:
        return
    from alembic import command

    command.upgrade(alembic_config(engine), revision)


def shipped_head() -> str | None:
    """The newest migration shipped, read from the scripts' text; None unless exactly one."""
    revisions: set[str] = set()
    parents: set[str] = set()
    for script in (MIGRATIONS / "versions").glob("*.py"):
        source = script.read_text(encoding="utf-8")
        if (found := _REVISION.search(source)) is None:
            return None  # not a script this reader understands: let Alembic decide
        revisions.add(found.group(1))
        if (down := _DOWN.search(source)) is not None:
            parents.update(re.findall(r"[\"']([^\"']+)[\"']", down.group(1)))
    heads = revisions - parents
    return heads.pop() if len(heads) == 1 else None


def current(engine: Engine) -> str | None:
    """The schema revision the database is at, or None for an empty database."""
    try:
        with engine.connect() as connection:
            rows = connection.execute(text("SELECT version_num FROM alembic_version")).all()
    except SQLAlchemyError:
        return None  # no version table yet
    return rows[0][0] if len(rows) == 1 else None
