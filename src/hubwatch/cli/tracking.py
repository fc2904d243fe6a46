"""CLI commands that track repos, poll them, list them and stop tracking them."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import TYPE_CHECKING, Annotated

import typer
from rich.measure import Measurement

from hubwatch.cli.base import (
    EXIT_ERROR,
    JsonOption,
    RepoArg,
    app,
    db_app,
    err,
    exit_on_error,
    loading,
    out,
    print_json_array,
    print_json_lines,
    settings,
    shown,
    stored,
)
from hubwatch.cli.bulk import AuthorOption, FromOption, repo_ref, track_many, wants_many
from hubwatch.cli.render import folding, progress_bar
from hubwatch.errors import NotTracked
from hubwatch.models import (
    CommitInfo,
    CommitSha,
    RepoRef,
    RepoState,
    Severity,
    SourceKind,
    TrackedRepo,
    validate_repo_id,
)
from hubwatch.models.refs import RefWatch
from hubwatch.models.timestamps import to_minute
from hubwatch.store.repos import PAGE, repo_pages

if TYPE_CHECKING:
    from hubwatch.store.base import Store
    from hubwatch.tracker.poll import Tracker


_Source = Annotated[SourceKind, typer.Option(help="Where to read the repo from.")]
_Url = Annotated[str | None, typer.Option(help="Git URL or path (with --source git).")]
_Branch = Annotated[
    str | None,
    typer.Option(
        help="Branch or tag whose history is tracked (default: main on the Hub; a git "
        "remote's default branch, its HEAD)."
    ),
]
_WithBase = Annotated[
    bool,
    typer.Option("--with-base", help="Also track the base model(s) its card declares, and theirs."),
]
_BaseDepth = Annotated[
    int, typer.Option(min=1, max=5, help="How many levels of bases --with-base follows.")
]
_Repo = Annotated[
    str | None,
    typer.Argument(
        metavar="ORG/NAME", help="Repository id (or give --from or --author).", show_default=False
    ),
]
_Refs = Annotated[
    RefWatch | None,
    typer.Option(
        help="Which refs to diff against the branch each poll: prs (each open pull "
        "request's head, when it moves) or none. Default: as stored (none at first)."
    ),
]


@app.command()
@exit_on_error()
def track(
    repo_id: _Repo = None,
    from_file: FromOption = None,
    author: AuthorOption = None,
    source: _Source = SourceKind.HUB,
    url: _Url = None,
    branch: _Branch = None,
    with_base: _WithBase = False,
    base_depth: _BaseDepth = 2,
    refs: _Refs = None,
) -> None:
    """Track a repo and backfill its whole history, oldest revision first.

    Repos whose code it loads (auto_map targets in other repos, kernel repos) are tracked too,
    as its dependencies.

    --from FILE and --author NAME register many repos at once, none polled here: each one's
    history is read by its first poll, in the daemon."""
    if wants_many(repo_id, from_file, author, source, url, with_base, refs):
        track_many(from_file, author, source, branch)
        return
    assert repo_id is not None
    ref = _ref(repo_id, source, url, branch)
    progress = progress_bar(terminal_only=False)
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
            result = rt.tracker.track(ref, advance, refs)
            if with_base and not result.failure:
                _track_bases(rt.tracker, rt.store, result.repo_id, base_depth)
            if not result.failure:
                for link in rt.store.links_of(result.repo_id):
                    err.print(f"tracking dependency {shown(link.target)} ({link.kind.value})")
                found = severities(rt.store, result.repo_id, result.new)
                held = rt.store.get_repo(result.repo_id).revisions
    finally:
        if progress.live.is_started:
            progress.stop()
    if result.failure:
        raise result.failure
    # result.repo_id: the Hub's canonical id, which may differ from the one typed (letter case)
    err.print(track_summary(result.repo_id, len(result.new), held, found), highlight=False)


_ORDER = (Severity.BREAKING, Severity.SECURITY, Severity.BEHAVIOR, Severity.INFO)


def severities(store: Store, repo_id: str, new: list[CommitSha]) -> Counter[Severity]:
    """How many changes of each severity the revisions just stored brought."""
    counts: Counter[Severity] = Counter()
    if new:
        wanted = set(new)
        for recorded in store.changes(repo_id):
            if recorded.revision.sha in wanted:
                counts.update(change.severity for change in recorded.changes)
    return counts


def _counted(found: Counter[Severity]) -> str:
    """ "2 breaking, 5 info": the severities found, most severe first; "" for none."""
    return ", ".join(f"{found[s]} {s.value}" for s in _ORDER if found[s])


def stored_line(repo_id: str, new: int, held: int, found: Counter[Severity]) -> str:
    """What a backfill stored and found: "org/m: 9 revisions stored: 4 behavior, 17 info"."""
    repo = shown(repo_id)
    if not new:
        return f"{repo}: no new revisions ({held} stored)"
    head = f"{repo}: {new} revision{'' if new == 1 else 's'} stored"
    counted = _counted(found)
    return head + (f": {counted} changes" if counted else ", no changes found")


def track_summary(repo_id: str, new: int, held: int, found: Counter[Severity]) -> str:
    """`track`'s last line: what it stored and found, and the command to run next."""
    repo = shown(repo_id)
    head = stored_line(repo_id, new, held, found)
    # --severity S shows S and above: the lowest of the two that need a look
    worst = next((s for s in (Severity.SECURITY, Severity.BREAKING) if found[s]), None)
    if worst is not None:
        step = f"`hubwatch changes {repo} --severity {worst.value}`"
    else:
        step = f"`hubwatch history {repo}` or `hubwatch serve`"
    return f"{head} — next: {step}"


def _ref(repo_id: str, source: SourceKind, url: str | None, branch: str | None) -> RepoRef:
    """What `track` was asked to track. A git URL is checked when fetched (a host resolving
    into a private network is refused unless allowed; a local path is the CLI user's own)."""
    validate_repo_id(repo_id)
    hosts = settings().git_hosts() if source is SourceKind.GIT else ()
    return repo_ref(repo_id, source, url, branch, hosts)


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
        try:
            store.remove_repo(repo_id)
        except NotTracked:
            raise NotTracked(
                f"{repo_id} is not tracked: nothing to untrack (`hubwatch list` shows what is)"
            ) from None
    err.print(f"untracked {shown(repo_id)}")


_Jsonl = Annotated[
    bool, typer.Option("--jsonl", help="Print one JSON object a line instead of a table.")
]
_Limit = Annotated[
    int | None, typer.Option(min=0, help="List at most this many repos (default: all).")
]
_Offset = Annotated[int, typer.Option(min=0, help="Skip this many repos first (by id).")]


@app.command("list")
@exit_on_error()
def list_repos(
    as_json: JsonOption = False,
    jsonl: _Jsonl = False,
    limit: _Limit = None,
    offset: _Offset = 0,
) -> None:
    """List tracked repos with their state and number of stored revisions.

    By id, printed as they are read, a thousand at a time, however many are tracked; past a
    thousand, one repo per record instead of a table."""
    if as_json and jsonl:
        raise typer.BadParameter("--json and --jsonl: choose one")
    pages = _tracked_pages(offset, limit)
    if as_json:
        print_json_array(pages)
        return
    if jsonl:
        print_json_lines(pages)
        return
    first = next(pages, [])
    rows = _rows(first)
    if len(first) < PAGE:  # the whole listing: a table, if it fits uncut
        table = folding(*_LIST_HEADERS)
        for row in rows:
            table.add_row(*row)
        if Measurement.get(out, out.options.update_width(_UNBOUNDED), table).maximum <= out.width:
            out.print(table)
            return
    # NOTE: too narrow for the table uncut (ids of 40 characters are common), or too long to
    # measure a table of before printing it: one repo per record, its id whole on a line of
    # its own, the rest folded under it (issue 32)
    _print_records(rows)
    for page in pages:
        _print_records(_rows(page))


_UNBOUNDED = 100_000
"""A width no table reaches: measured against it, a table gives the width it needs uncut."""
_LIST_HEADERS = ("repo", "source", "state", "revisions", "head", "last polled", "last error")
_Row = tuple[str, str, str, str, str, str, str]


def _rows(repos: list[TrackedRepo]) -> list[_Row]:
    return [
        (
            shown(repo.ref.repo_id),
            repo.ref.source.value,
            _state(repo),
            str(repo.revisions),
            (repo.head or "")[:12],
            to_minute(repo.last_polled_at),
            shown(repo.last_error or ""),
        )
        for repo in repos
    ]


def _print_records(rows: list[_Row]) -> None:
    for repo_id, source, state, revisions, head, polled, error in rows:
        out.print(f"[bold]{repo_id}[/]", soft_wrap=True, highlight=False)
        said = f"  {source}, {state}, {revisions} revisions, head {head or '-'}"
        out.print(
            said + f", polled {polled or 'never'}",
            soft_wrap=False,
            overflow="fold",
            highlight=False,
        )
        if error:
            out.print(f"  last error: {error}", soft_wrap=False, overflow="fold", highlight=False)


def _tracked_pages(offset: int, limit: int | None) -> Iterator[list[TrackedRepo]]:
    """The tracked repos a page at a time, read without SQLAlchemy, Alembic (and, in a plain
    environment, pydantic) from a database at the current schema (issue 15); through the full
    store, which creates or migrates it, from any other."""
    with loading():
        from hubwatch.locations import plain_database_url
        from hubwatch.store.dbapi import DbapiRepoListing
    url = plain_database_url()
    if url is None:
        url = settings().resolved_database_url()
    pages = DbapiRepoListing(url).pages(offset=offset, limit=limit, size=PAGE)
    if pages is not None:
        yield from pages
        return
    with stored() as store:
        yield from repo_pages(store, offset=offset, limit=limit, page=PAGE)


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
        found = {r.repo_id: severities(rt.store, r.repo_id, r.new) for r in results if r.new}
    for result in results:
        line = f"{shown(result.repo_id)}: {len(result.new)} new"
        if counted := _counted(found.get(result.repo_id, Counter())):
            line += f" ({counted} changes)"
        if result.unreachable:
            line += f", {len(result.unreachable)} no longer reachable"
        if result.error:
            line += f", error: {shown(result.error)}"
        err.print(line, highlight=False)
    if any(result.error for result in results):
        raise typer.Exit(EXIT_ERROR)


@db_app.command("upgrade")
@exit_on_error()
def db_upgrade() -> None:
    """Apply pending migrations (also done automatically on every start)."""
    with stored():
        pass
    err.print("database is up to date")
