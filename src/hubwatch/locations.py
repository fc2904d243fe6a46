"""Where hubwatch keeps its data: the default data directory and database URL, readable without
pydantic (a plain environment costs `hubwatch list` no Settings import: issue 15)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

ENV_FILE = ".env"
"""The dotenv file Settings reads, relative to the working directory."""

_PLAIN = frozenset({"hubwatch_data_dir", "hubwatch_database_url"})
"""The settings `plain_database_url` reads itself: a path and a string, which nothing rejects."""


def default_data_dir() -> Path:
    """The platform's per-user data directory for hubwatch."""
    import platformdirs

    return Path(platformdirs.user_data_dir("hubwatch", appauthor=False))


def sqlite_url(data_dir: Path) -> str:
    """The SQLAlchemy URL of the SQLite database in `data_dir` (the default database)."""
    return f"sqlite:///{data_dir / 'hubwatch.db'}"


def plain_database_url(environ: Mapping[str, str] = os.environ) -> str | None:
    """The URL `Settings().resolved_database_url()` gives, where the environment sets no other
    hubwatch setting and there is no .env file; None elsewhere: Settings must read them, and
    reject a bad one, as for any command."""
    found: dict[str, str] = {}
    for key, value in environ.items():
        name = key.lower()  # NOTE: pydantic-settings matches names in any letter case
        if not name.startswith("hubwatch_"):
            continue  # HF_TOKEN, HF_ENDPOINT: strings, never rejected, not needed here
        if name not in _PLAIN or name in found:
            return None
        found[name] = value
    if os.path.lexists(ENV_FILE):
        return None
    if "hubwatch_database_url" in found:
        return found["hubwatch_database_url"] or None
    data_dir = found.get("hubwatch_data_dir")
    if data_dir == "":
        return None  # pydantic's reading of an empty path is its own
    return sqlite_url(Path(data_dir) if data_dir is not None else default_data_dir())
