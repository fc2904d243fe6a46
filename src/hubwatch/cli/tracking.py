"""CLI commands for tracking repos and reading their stored history."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from hubwatch.cli.base import (
    EXIT_ERROR,
    JsonOption,
    RepoArg,
    RevArg,
    app,
    db_app,
    err,
    exit_on_error,
    loading,
    out,
    print_json,
    settings,
    shown,
    stored,
)
from hubwatch.errors import InvalidRepoId
from hubwatch.models import (
    FOLLOW_HEAD,
    CommitInfo,
    RepoRef,
    RepoState,
    SourceKind,
    TrackedRepo,
    strip_credentials,
    validate_repo_id,
)
from hubwatch.models.timestamps import to_minute

if TYPE_CHECKING:
    from hubwatch.store.base import Store
    from hubwatch.tracker.poll import Tracker


@app.command()
@exit_on_error()
def track(
    repo_id: RepoArg,
    source: Annotated[SourceKind, typer.Option(help="Where to read the repo from.")] = (
        SourceKind.HUB
    ),
    url: Annotated[str | None, typer.Option(help="Git URL or path (with --source git).")] = None,
    branch: Annotated[
        str | None,
        typer.Option(
            help="Branch or tag whose history is tracked [default: main on the Hub; a git "
            "remote's default branch (its HEAD)]."
        ),
    ] = None,
    with_base: Annotated[
        bool,
        typer.Option(
            "--with-base", help="Also track the base model(s) its card declares, and theirs."
        ),
    ] = False,
    base_depth: Annotated[
        int,
        typer.Option(min=1, max=5, help="How many levels of bases --with-base follows."),
    ] = 2,
) -> None:
    """Track a repo and backfill its whole history, oldest revision first."""
    ref = _ref(repo_id, source, url, branch)
    progress = _progress()
    task = progress.add_task(f"backfilling {shown(repo_id)}", total=None)

    def advance(done: int, total: int, commit: CommitInfo) -> None:
        if not progress.live.is_started:  # no bar for failures before the first revision
            progress.start()
        progress.update(
            task,
            total=total,
            completed=done,
            description=f"{shown(repo_id)} {shown(commit.sha[:10])}",
        )

    cfg = settings()
    with loading():
        from hubwatch.runtime import runtime
    try:
        with runtime(cfg) as rt:
            result = rt.tracker.track(ref, advance)
            if with_base and not result.failure:
                _track_bases(rt.tracker, rt.store, result.repo_id, base_depth)
    finally:
        if progress.live.is_started:
            progress.stop()
    if result.failure:
        raise result.failure
    # result.repo_id: the Hub's canonical id, which may differ from the one typed (letter case)
    err.print(f"tracking {shown(result.repo_id)}: {len(result.new)} new revision(s) stored")


def _ref(repo_id: str, source: SourceKind, url: str | None, branch: str | None) -> RepoRef:
    """What `track` was asked to track. A git URL is checked when fetched (a host resolving
    into a private network is refused unless allowed; a local path is the CLI user's own)."""
    validate_repo_id(repo_id)
    if source is not SourceKind.GIT:
        return RepoRef(repo_id, source, None, branch or "main")
    if not url:
        raise InvalidRepoId("--source git needs --url URL (a git URL or a local path)")
    url = strip_credentials(url, settings().git_hosts())  # credentials live in the settings
    return RepoRef(repo_id, source, url, branch or FOLLOW_HEAD)


def _track_bases(tracker: Tracker, store: Store, repo_id: str, depth: int) -> None:
    """--with-base: the declared bases, tracked; what was refused, said."""
    with loading():
        from hubwatch.tracker.bases import track_bases
    walk = track_bases(tracker, store, repo_id, depth)
    for note in walk.notes:
        err.print(shown(note))
    for base in walk.tracked:
        lineage = store.lineage_of(repo_id)
        status = f" ({lineage.status.value})" if lineage and lineage.base_repo_id == base else ""
        err.print(f"tracking base {shown(base)}{status}")


@app.command()
@exit_on_error()
def untrack(repo_id: RepoArg) -> None:
    """Stop tracking a repo and delete its stored history."""
    with stored(repo_id) as store:
        store.remove_repo(repo_id)
    err.print(f"untracked {shown(repo_id)}")


@app.command("list")
@exit_on_error()
def list_repos(as_json: JsonOption = False) -> None:
    """List tracked repos with their state and number of stored revisions."""
    repos = _tracked_repos()
    if as_json:
        print_json(repos)
        return
    table = Table("repo", "source", "state", "revisions", "head", "last polled", "last error")
    for repo in repos:
        table.add_row(
            shown(repo.ref.repo_id),
            repo.ref.source.value,
            _state(repo),
            str(repo.revisions),
            (repo.head or "")[:12],
            to_minute(repo.last_polled_at),
            shown(repo.last_error or ""),
        )
    out.print(table)


def _tracked_repos() -> list[TrackedRepo]:
    """The tracked repos, read without SQLAlchemy, Alembic (and, in a plain environment,
    pydantic) from a database at the current schema (issue 15); through the full store, which
    creates or migrates it, from any other."""
    with loading():
        from hubwatch.locations import plain_database_url
        from hubwatch.store.dbapi import DbapiRepoListing
    url = plain_database_url()
    if url is None:
        url = settings().resolved_database_url()
    repos = DbapiRepoListing(url).list_repos()
    if repos is None:
        with stored() as store:
            repos = store.list_repos()
    return repos


def _state(repo: TrackedRepo) -> str:
    if repo.state is RepoState.DEGRADED:  # polls keep failing: make it stand out
        return f"[bold dark_orange]degraded[/] ({repo.failures} failed polls)"
    if repo.state is RepoState.AUTH_FAILED:  # nothing is wrong with the repo: the token is
        return "[bold red]auth_failed[/] (the Hub refused HF_TOKEN)"
    return repo.state.value


@app.command()
@exit_on_error()
def poll(
    once: Annotated[bool, typer.Option("--once", help="Poll every repo once, then exit.")] = False,
) -> None:
    """Poll the tracked repos for new revisions: once, or as a daemon every poll interval."""
    cfg = settings()
    with loading():
        from hubwatch.daemon import run_forever
        from hubwatch.runtime import runtime
    with runtime(cfg) as rt:
        if not once:
            run_forever(rt)
            return
        results = rt.tracker.poll_all()
    for result in results:
        line = f"{shown(result.repo_id)}: {len(result.new)} new"
        if result.unreachable:
            line += f", {len(result.unreachable)} no longer reachable"
        if result.error:
            line += f", error: {shown(result.error)}"
        err.print(line, highlight=False)
    if any(result.error for result in results):
        raise typer.Exit(EXIT_ERROR)


@app.command()
@exit_on_error()
def history(repo_id: RepoArg, as_json: JsonOption = False) -> None:
    """Show a repo's stored revisions, oldest first, with the files each one changed."""
    with stored(repo_id) as store:
        revisions = store.history(repo_id)
        events = store.events(repo_id)
    if as_json:
        print_json({"repo": repo_id, "revisions": revisions, "events": events})
        return
    table = _folding("sha", "date", "title", "changed files")
    for rev in revisions:
        title = shown(rev.title) + ("" if rev.reachable else r" \[unreachable]")
        changed = ", ".join(rev.changed[:_FILES_SHOWN])
        if len(rev.changed) > _FILES_SHOWN:
            changed += f" and {len(rev.changed) - _FILES_SHOWN} more"
        table.add_row(rev.sha[:12], to_minute(rev.date), title, shown(changed))
    out.print(table)
    for event in events:
        out.print(
            f"{to_minute(event.at)} {event.kind.value}: {shown(event.detail)}",
            highlight=False,
            soft_wrap=False,
            overflow="fold",
        )


_FILES_SHOWN = 6


def _folding(*headers: str) -> Table:
    """A table whose cells wrap (fold) to the terminal's width instead of being cut with "…"."""
    table = Table(*headers)
    for column in table.columns:
        column.overflow = "fold"
    return table


@app.command()
@exit_on_error()
def show(
    repo_id: RepoArg,
    rev: RevArg,
    as_json: JsonOption = False,
) -> None:
    """Show one stored revision: metadata, model card keys, and every file with its read status."""
    with stored(repo_id) as store:
        revision = store.revision(repo_id, rev)
        files = store.files(repo_id, revision.sha)
    if as_json:
        print_json({"revision": revision, "files": files})
        return
    lines = [
        f"[bold]{shown(repo_id)}[/] {revision.sha}",
        f"date:    {to_minute(revision.date)}\nauthors: {shown(', '.join(revision.authors))}",
        f"title:   {shown(revision.title)}",
    ]
    if revision.card:
        lines.append(f"card:    {shown(json.dumps(revision.card))}")
    for line in lines:
        out.print(line, soft_wrap=False, overflow="fold")
    table = _folding("path", "size", "changed", "content", "header", "note")
    changed = set(revision.changed)
    for f in files:
        note = f.content_error or f.header_error or ""
        table.add_row(
            shown(f.path),
            str(f.size),
            "yes" if f.path in changed else "",
            f.content_status.value if f.content_status else "",
            f.header_status.value if f.header_status else "",
            shown(note),
        )
    out.print(table)


@db_app.command("upgrade")
@exit_on_error()
def db_upgrade() -> None:
    """Apply pending migrations (also done automatically on every start)."""
    with stored():
        pass
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
