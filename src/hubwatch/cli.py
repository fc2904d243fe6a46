"""The `hubwatch` command line: parse, call, render; nothing else."""

from __future__ import annotations

import json
import sys
from dataclasses import asdict, is_dataclass
from datetime import datetime
from enum import Enum
from typing import Annotated, Any, NoReturn

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from hubwatch import __version__
from hubwatch.errors import (
    AuthError,
    HubwatchError,
    InvalidRepoId,
    NotTracked,
    RepoNotFound,
    RevisionNotFound,
    SourceUnavailable,
    UnknownRevision,
)
from hubwatch.logging import configure_logging
from hubwatch.models import CommitInfo, RepoRef, SourceKind, validate_repo_id
from hubwatch.runtime import open_store, runtime
from hubwatch.settings import Settings

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
    (NotTracked, EXIT_NOT_FOUND),
    (UnknownRevision, EXIT_NOT_FOUND),
    (RepoNotFound, EXIT_NOT_FOUND),
    (RevisionNotFound, EXIT_NOT_FOUND),
    (AuthError, EXIT_AUTH),
    (SourceUnavailable, EXIT_UNREACHABLE),
]

JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]
RepoArg = Annotated[str, typer.Argument(metavar="ORG/NAME", help="Repository id.")]


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


@app.command()
def track(
    repo_id: RepoArg,
    source: Annotated[SourceKind, typer.Option(help="Where to read the repo from.")] = (
        SourceKind.HUB
    ),
    url: Annotated[str | None, typer.Option(help="Git URL or path (with --source git).")] = None,
    branch: Annotated[str, typer.Option(help="Branch or tag whose history is tracked.")] = "main",
) -> None:
    """Track a repo and backfill its whole history, oldest revision first."""
    try:
        validate_repo_id(repo_id)
        if source is SourceKind.GIT and not url:
            raise InvalidRepoId("--source git needs --url URL (a git URL or a local path)")
        ref = RepoRef(repo_id, source, url if source is SourceKind.GIT else None, branch)
        progress = _progress()
        task = progress.add_task(f"backfilling {escape(repo_id)}", total=None)

        def advance(done: int, total: int, commit: CommitInfo) -> None:
            if not progress.live.is_started:  # no bar for failures before the first revision
                progress.start()
            progress.update(
                task,
                total=total,
                completed=done,
                description=f"{escape(repo_id)} {commit.sha[:10]}",
            )

        try:
            with runtime(settings()) as rt:
                result = rt.tracker.track(ref, advance)
        finally:
            if progress.live.is_started:
                progress.stop()
    except HubwatchError as exc:
        fail(exc)
    if result.failure:
        fail(result.failure)
    err.print(f"tracking {escape(repo_id)}: {len(result.new)} new revision(s) stored")


@app.command()
def untrack(repo_id: RepoArg) -> None:
    """Stop tracking a repo and delete its stored history."""
    try:
        validate_repo_id(repo_id)
        store = open_store(settings())
        try:
            store.remove_repo(repo_id)
        finally:
            store.close()
    except HubwatchError as exc:
        fail(exc)
    err.print(f"untracked {escape(repo_id)}")


@app.command("list")
def list_repos(as_json: JsonOption = False) -> None:
    """List tracked repos with their state and number of stored revisions."""
    try:
        store = open_store(settings())
        try:
            repos = store.list_repos()
        finally:
            store.close()
    except HubwatchError as exc:
        fail(exc)
    if as_json:
        print_json(repos)
        return
    table = Table("repo", "source", "state", "revisions", "head", "last polled", "last error")
    for repo in repos:
        table.add_row(
            escape(repo.ref.repo_id),
            repo.ref.source.value,
            repo.state.value,
            str(repo.revisions),
            (repo.head or "")[:12],
            _when(repo.last_polled_at),
            escape(repo.last_error or ""),
        )
    out.print(table)


@app.command()
def poll(
    once: Annotated[bool, typer.Option("--once", help="Poll every repo once, then exit.")] = False,
) -> None:
    """Poll the tracked repos for new revisions: once, or as a daemon every poll interval."""
    from hubwatch.daemon import run_forever

    try:
        cfg = settings()
        with runtime(cfg) as rt:
            if not once:
                run_forever(rt.tracker, cfg.poll_interval_s)
                return
            results = rt.tracker.poll_all()
    except HubwatchError as exc:
        fail(exc)
    for result in results:
        line = f"{escape(result.repo_id)}: {len(result.new)} new"
        if result.unreachable:
            line += f", {len(result.unreachable)} no longer reachable"
        if result.error:
            line += f", error: {escape(result.error)}"
        err.print(line, highlight=False)
    if any(result.error for result in results):
        raise typer.Exit(EXIT_ERROR)


@app.command()
def history(repo_id: RepoArg, as_json: JsonOption = False) -> None:
    """Show a repo's stored revisions, oldest first, with the files each one changed."""
    try:
        validate_repo_id(repo_id)
        store = open_store(settings())
        try:
            revisions = store.history(repo_id)
            events = store.events(repo_id)
        finally:
            store.close()
    except HubwatchError as exc:
        fail(exc)
    if as_json:
        print_json({"repo": repo_id, "revisions": revisions, "events": events})
        return
    table = Table("sha", "date", "title", "changed files")
    for rev in revisions:
        title = escape(rev.title[:60]) + ("" if rev.reachable else " [unreachable]")
        changed = ", ".join(rev.changed[:6]) + (" …" if len(rev.changed) > 6 else "")
        table.add_row(rev.sha[:12], _when(rev.date), title, escape(changed))
    out.print(table)
    for event in events:
        out.print(f"{_when(event.at)} {event.kind.value}: {escape(event.detail)}")


@app.command()
def show(
    repo_id: RepoArg,
    rev: Annotated[str, typer.Argument(metavar="REV", help="Full or abbreviated commit sha.")],
    as_json: JsonOption = False,
) -> None:
    """Show one stored revision: metadata, model card keys, and every file with its read status."""
    try:
        validate_repo_id(repo_id)
        store = open_store(settings())
        try:
            revision = store.revision(repo_id, rev)
            files = store.files(repo_id, revision.sha)
        finally:
            store.close()
    except HubwatchError as exc:
        fail(exc)
    if as_json:
        print_json({"revision": revision, "files": files})
        return
    out.print(f"[bold]{escape(repo_id)}[/] {revision.sha}")
    out.print(f"date:    {_when(revision.date)}\nauthors: {escape(', '.join(revision.authors))}")
    out.print(f"title:   {escape(revision.title)}")
    if revision.card:
        out.print(f"card:    {escape(json.dumps(revision.card))}")
    table = Table("path", "size", "changed", "content", "header", "note")
    changed = set(revision.changed)
    for f in files:
        note = f.content_error or f.header_error or ""
        table.add_row(
            escape(f.path),
            str(f.size),
            "yes" if f.path in changed else "",
            f.content_status.value if f.content_status else "",
            f.header_status.value if f.header_status else "",
            escape(note[:80]),
        )
    out.print(table)


@db_app.command("upgrade")
def db_upgrade() -> None:
    """Apply pending migrations (also done automatically on every start)."""
    try:
        open_store(settings()).close()
    except HubwatchError as exc:
        fail(exc)
    err.print("database is up to date")


def _progress() -> Progress:
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        transient=False,
    )


def _when(value: datetime | None) -> str:
    return value.strftime("%Y-%m-%d %H:%M") if value else ""


def main() -> None:
    """Console-script entry point."""
    try:
        app(prog_name="hubwatch")
    except KeyboardInterrupt:
        sys.exit(130)
