"""CLI commands that say what changed: per stored revision, or between any two revisions."""

from __future__ import annotations

from typing import Annotated

import typer

from hubwatch.cli.base import (
    JsonOption,
    RepoArg,
    SeverityOption,
    app,
    exit_on_error,
    out,
    print_json,
    settings,
    shown,
    stored,
)
from hubwatch.diff.events import event_change
from hubwatch.diff.plugins import load_differs
from hubwatch.models import Change, Severity
from hubwatch.models.timestamps import to_minute
from hubwatch.tracker.compare import diff_stored

_STYLE = {
    Severity.BREAKING: "bold red",
    Severity.SECURITY: "bold magenta",
    Severity.BEHAVIOR: "yellow",
    Severity.INFO: "dim",
}


def _line(change: Change) -> str:
    severity = change.severity
    return (
        f"  [{_STYLE[severity]}]{severity.value:<8}[/] {shown(change.kind):<28} "
        f"{shown(change.summary)}"
    )


@app.command()
@exit_on_error()
def changes(
    repo_id: RepoArg,
    since: Annotated[
        str | None,
        typer.Option("--since", metavar="REV", help="Only revisions after this one."),
    ] = None,
    severity: SeverityOption = None,
    as_json: JsonOption = False,
) -> None:
    """Show what each stored revision changed, oldest first, with repo events."""
    with stored(repo_id) as store:
        recorded = store.changes(repo_id, since=since, min_severity=severity)
        start = store.revision(repo_id, since).date if since else None
        events = [
            (event, change)
            for event in store.events(repo_id)
            if (change := event_change(event)) is not None
            and (severity is None or change.severity.rank >= severity.rank)
            and (start is None or (event.at is not None and event.at >= start))
        ]
    if as_json:
        print_json(
            {
                "repo": repo_id,
                "revisions": [
                    {
                        "sha": rc.revision.sha,
                        "date": rc.revision.date,
                        "title": rc.revision.title,
                        "base": rc.base,
                        "changes": rc.changes,
                    }
                    for rc in recorded
                ],
                "events": [{"at": e.at, "sha": e.sha, "change": c} for e, c in events],
            }
        )
        return
    for rc in recorded:
        rev = rc.revision
        out.print(f"[bold]{rev.sha[:12]}[/] {to_minute(rev.date)} {shown(rev.title, 70)}")
        for change in rc.changes:
            out.print(_line(change), highlight=False)
    if events:
        out.print("[bold]repo events[/]")
        for event, change in events:
            out.print(f"  {to_minute(event.at)}" + _line(change), highlight=False)
    if not recorded and not events:
        out.print("no recorded changes", highlight=False)


@app.command()
@exit_on_error()
def diff(
    repo_id: RepoArg,
    rev_a: Annotated[str, typer.Argument(metavar="REV_A", help="The older revision.")],
    rev_b: Annotated[str, typer.Argument(metavar="REV_B", help="The newer revision.")],
    severity: SeverityOption = None,
    as_json: JsonOption = False,
) -> None:
    """Compare any two stored revisions (not only neighbours) and show what changed."""
    with stored(repo_id) as store:
        a, b = store.revision(repo_id, rev_a), store.revision(repo_id, rev_b)
        found = diff_stored(store, repo_id, a.sha, b.sha, load_differs(settings()))
    if severity is not None:
        found = [c for c in found if c.severity.rank >= severity.rank]
    if as_json:
        print_json({"repo": repo_id, "from": a.sha, "to": b.sha, "changes": found})
        return
    out.print(f"[bold]{shown(repo_id)}[/] {a.sha[:12]} → {b.sha[:12]}")
    for change in found:
        out.print(_line(change), highlight=False)
    if not found:
        out.print("  no changes", highlight=False)
