"""What every CLI command shares: the typer app, consoles, exit codes, settings, JSON output."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, is_dataclass
from datetime import datetime
from enum import Enum
from typing import Annotated, Any, NoReturn

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape

from hubwatch import __version__
from hubwatch.errors import (
    AuthError,
    InvalidChangeKind,
    InvalidRepoId,
    NotTracked,
    RepoNotFound,
    RevisionNotFound,
    SourceUnavailable,
    UnknownRevision,
    UnknownSubscription,
    WebhookUrlRefused,
)
from hubwatch.logging import configure_logging
from hubwatch.models import Severity, validate_repo_id
from hubwatch.runtime import open_store
from hubwatch.settings import Settings
from hubwatch.store.base import Store

app = typer.Typer(
    help="Watch model repositories on the Hugging Face Hub (or any git remote) revision by "
    "revision.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
db_app = typer.Typer(help="Database schema commands.", no_args_is_help=True)
app.add_typer(db_app, name="db")

out = Console(soft_wrap=True)
err = Console(stderr=True, soft_wrap=True)

# Exit codes: one per kind of failure a script may want to tell apart.
EXIT_ERROR, EXIT_USAGE, EXIT_NOT_FOUND, EXIT_AUTH, EXIT_UNREACHABLE = 1, 2, 3, 4, 5
_EXIT_CODES: list[tuple[type[Exception], int]] = [
    (InvalidRepoId, EXIT_USAGE),
    (InvalidChangeKind, EXIT_USAGE),
    (WebhookUrlRefused, EXIT_USAGE),
    (NotTracked, EXIT_NOT_FOUND),
    (UnknownRevision, EXIT_NOT_FOUND),
    (RepoNotFound, EXIT_NOT_FOUND),
    (RevisionNotFound, EXIT_NOT_FOUND),
    (UnknownSubscription, EXIT_NOT_FOUND),
    (AuthError, EXIT_AUTH),
    (SourceUnavailable, EXIT_UNREACHABLE),
]

JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]
RepoArg = Annotated[str, typer.Argument(metavar="ORG/NAME", help="Repository id.")]
RevArg = Annotated[str, typer.Argument(metavar="REV", help="Full or abbreviated commit sha.")]
SeverityOption = Annotated[
    Severity | None,
    typer.Option("--severity", help="Only changes at this severity or above."),
]


def fail(exc: Exception) -> NoReturn:
    """Print one line and exit with the code for this kind of error."""
    code = next((c for kind, c in _EXIT_CODES if isinstance(exc, kind)), EXIT_ERROR)
    err.print(f"error: {escape(str(exc))}", highlight=False)
    raise typer.Exit(code)


def settings() -> Settings:
    try:
        loaded = Settings()
    except ValidationError as exc:
        first = exc.errors()[0]
        err.print(f"error: setting {'.'.join(map(str, first['loc']))}: {first['msg']}")
        raise typer.Exit(EXIT_USAGE) from None
    configure_logging(loaded.log_level, loaded.log_json)
    return loaded


def plain(value: Any) -> Any:
    """Dataclasses, enums and datetimes as JSON-able values."""
    if is_dataclass(value) and not isinstance(value, type):
        return plain(asdict(value))
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, Enum):
        return value.value
    return value


def print_json(value: Any) -> None:
    out.print_json(json.dumps(plain(value)), highlight=False)


@app.callback(invoke_without_command=True)
def _root(
    version: Annotated[bool, typer.Option("--version", help="Print the version.")] = False,
) -> None:
    if version:
        out.print(f"hubwatch {__version__}")
        raise typer.Exit()


@contextmanager
def stored(repo_id: str | None = None) -> Iterator[Store]:
    """The configured store, started for one command and closed after it; `repo_id` is checked
    first, so a bad id never opens the database."""
    if repo_id is not None:
        validate_repo_id(repo_id)
    store = open_store(settings())
    try:
        yield store
    finally:
        store.close()


def when(value: datetime | None) -> str:
    """A timestamp as the tables show it."""
    return value.strftime("%Y-%m-%d %H:%M") if value else ""
