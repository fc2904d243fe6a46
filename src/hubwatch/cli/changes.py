"""CLI commands that say what changed: per stored revision, or between any two revisions."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Annotated, Any

import typer

from hubwatch.cli.base import (
    JsonOption,
    NewestFirstOption,
    RepoArg,
    SeverityOption,
    app,
    exit_on_error,
    loading,
    out,
    plain,
    print_json,
    settings,
    shown,
    stored,
)
from hubwatch.cli.render import change_detail, changes_grid, folding, severity_label
from hubwatch.models import Change, RepoEvent, RevisionChanges, Severity
from hubwatch.models.refs import LinkedChanges, LinkOrigin
from hubwatch.models.timestamps import to_minute


def _explain() -> None:
    """The severity policy, one row per (kind, condition)."""
    with loading():
        from hubwatch.diff import policy_table
    grid = folding("kind", "condition", "severity", "reason")
    for kind, condition, level, reason in policy_table():
        grid.add_row(kind, condition, severity_label(Severity(level)), reason)
    out.print(grid)


def _changes_json(
    repo_id: str,
    recorded: list[RevisionChanges],
    events: list[tuple[RepoEvent, Change]],
    detail: bool = False,
    linked: list[LinkedChanges] | None = None,
) -> dict[str, Any]:
    """The history as JSON. A change's detail (a unified diff, a rendered span) is left out
    unless `detail`: then each distinct text is kept once under `details`, and the change
    names it by id."""
    details: dict[str, str] = {}

    def change(c: Change) -> dict[str, Any]:
        out = {k: v for k, v in plain(c).items() if k != "detail"}
        if c.detail is None:
            return out
        if not detail:
            return out | {"detail_chars": len(c.detail)}
        ref = hashlib.sha256(c.detail.encode("utf-8", "surrogatepass")).hexdigest()[:16]
        details.setdefault(ref, c.detail)
        return out | {"detail": ref}

    body: dict[str, Any] = {
        "repo": repo_id,
        "revisions": [
            {
                "sha": rc.revision.sha,
                "date": rc.revision.date,
                "title": rc.revision.title,
                "base": rc.base,
                "changes": [change(c) for c in rc.changes],
            }
            for rc in recorded
        ],
        "events": [{"at": e.at, "sha": e.sha, "change": change(c)} for e, c in events],
        "linked": [
            {
                "origin": lc.origin.value,
                "source": lc.source,
                "label": lc.label,
                "head": lc.head,
                "base": lc.base,
                "observed_at": lc.observed_at,
                "changes": [change(c) for c in lc.changes],
            }
            for lc in linked or []
        ],
    }
    if detail:
        body["details"] = details
    return body


_RepoId = Annotated[
    str | None, typer.Argument(metavar="ORG/NAME", help="Repository id.", show_default=False)
]
_Since = Annotated[
    str | None, typer.Option("--since", metavar="REV", help="Only revisions after this one.")
]
_Detail = Annotated[
    bool,
    typer.Option(
        "--detail",
        help="Show each change's detail (unified diffs…) under it; with --json, each text "
        "once under `details`.",
    ),
]
_Explain = Annotated[
    bool, typer.Option("--explain", help="Print the severity policy (kind, condition) and exit.")
]


@app.command()
@exit_on_error()
def changes(
    repo_id: _RepoId = None,
    since: _Since = None,
    severity: SeverityOption = None,
    as_json: JsonOption = False,
    detail: _Detail = False,
    newest_first: NewestFirstOption = False,
    explain: _Explain = False,
) -> None:
    """Show what each stored revision changed, oldest first, with repo events."""
    if explain:
        _explain()
        return
    if repo_id is None:
        raise typer.BadParameter("ORG/NAME is needed (or --explain)", param_hint="ORG/NAME")
    with loading():
        from hubwatch.diff import event_change
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
        linked = [
            lc
            for lc in store.linked_changes(repo_id, min_severity=severity)
            if start is None or (lc.observed_at is not None and lc.observed_at >= start)
        ]
    if newest_first:
        recorded, events, linked = recorded[::-1], events[::-1], linked[::-1]
    if as_json:
        print_json(_changes_json(repo_id, recorded, events, detail, linked))
        return
    _print_all(recorded, events, linked, detail)


def _print_all(
    recorded: Sequence[RevisionChanges],
    events: Sequence[tuple[RepoEvent, Change]],
    linked: Sequence[LinkedChanges],
    detail: bool,
) -> None:
    """The revisions' changes, then the repo events, then the changes off the branch."""
    for rc in recorded:
        rev = rc.revision
        title = f"[bold]{rev.sha[:12]}[/] {to_minute(rev.date)} {shown(rev.title)}"
        out.print(title, soft_wrap=False, overflow="fold", highlight=False)
        _print_changes([(None, c) for c in rc.changes], detail)
    if events:
        out.print("[bold]repo events[/]")
        _print_changes([(to_minute(event.at), change) for event, change in events], detail)
    for lc in linked:
        out.print(_linked_title(lc), soft_wrap=False, overflow="fold", highlight=False)
        _print_changes([(None, c) for c in lc.changes], detail)
    if not recorded and not events and not linked:
        out.print("no recorded changes", highlight=False)


def _linked_title(lc: LinkedChanges) -> str:
    """The line over changes that are not the branch's history: `PR #12 1a2b3c4d5e6f would
    change, against main's 0f9e…`, or `dependency org/code 1a2b… changed`."""
    when = to_minute(lc.observed_at) if lc.observed_at else ""
    if lc.origin is LinkOrigin.PULL_REQUEST:
        against = f", against {lc.base[:12]}" if lc.base else ""
        return f"[bold]{lc.label} {lc.head[:12]}[/] {when} would change{against}:"
    return f"[bold]{shown(lc.label)} {lc.head[:12]}[/] {when} changed:"


def _print_changes(rows: list[tuple[str | None, Change]], detail: bool) -> None:
    """One revision's changes; with `detail`, each change's detail after them."""
    out.print(changes_grid(rows), highlight=False)
    if detail:
        for _, change in rows:
            if change.detail:
                out.print(change_detail(change), highlight=False, soft_wrap=False)


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
    with loading():
        from hubwatch.diff import load_differs
        from hubwatch.tracker.compare import diff_stored
    with stored(repo_id) as store:
        a, b = store.revision(repo_id, rev_a), store.revision(repo_id, rev_b)
        found = diff_stored(store, repo_id, a.sha, b.sha, load_differs(settings()))
    if severity is not None:
        found = [c for c in found if c.severity.rank >= severity.rank]
    if as_json:
        print_json({"repo": repo_id, "from": a.sha, "to": b.sha, "changes": found})
        return
    out.print(f"[bold]{shown(repo_id)}[/] {a.sha[:12]} → {b.sha[:12]}", soft_wrap=False)
    out.print(changes_grid((None, c) for c in found), highlight=False)
    if not found:
        out.print("  no changes", highlight=False)
