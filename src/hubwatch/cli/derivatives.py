"""CLI command that lists a base model's derivatives (Hub listing + stored lineage)."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from hubwatch.cli.base import (
    JsonOption,
    RepoArg,
    app,
    exit_on_error,
    loading,
    out,
    print_json,
    settings,
    shown,
    stored,
)
from hubwatch.cli.render import folding
from hubwatch.models import Severity, validate_repo_id
from hubwatch.models.derivatives import DerivativeStatus, join_derivatives
from hubwatch.models.lineage import Derivative, LineageStatus, Relation
from hubwatch.models.timestamps import to_minute

_STATUS_STYLE = {
    LineageStatus.CURRENT: "green",
    LineageStatus.STALE: "bold red",
    LineageStatus.UNMATCHED: "yellow",
    LineageStatus.BASE_UNTRACKED: "dim",
}
_SEVERITY_STYLE = {
    Severity.BREAKING: "bold red",
    Severity.SECURITY: "bold magenta",
    Severity.BEHAVIOR: "yellow",
    Severity.INFO: "dim",
}


@app.command()
@exit_on_error()
def derivatives(
    repo_id: RepoArg,
    relation: Annotated[
        Relation | None,
        typer.Option("--relation", help="Only derivatives so related to the base."),
    ] = None,
    as_json: JsonOption = False,
    tracked_only: Annotated[
        bool,
        typer.Option("--tracked-only", help="Only tracked derivatives, from the store alone."),
    ] = False,
    limit: Annotated[
        int, typer.Option("--limit", min=1, max=10_000, help="Most derivatives asked of the Hub.")
    ] = 1000,
) -> None:
    """List a base model's derivatives on the Hub, with the staleness of those tracked.

    Derivatives are the models whose card names ORG/NAME as `base_model` (quantizations,
    fine-tunes, adapters, merges); for a tracked one, its status (current, stale, unmatched,
    base_untracked), the base revision it was built from, and the base changes it missed."""
    validate_repo_id(repo_id)
    with stored(repo_id) as store:
        lineages = store.derivatives_of(repo_id)
        tracked = [repo.ref.repo_id for repo in store.list_repos()]
    if relation is not None:
        lineages = [lineage for lineage in lineages if lineage.relation is relation]
    listed: list[Derivative] = []
    if not tracked_only:  # the store alone answers it, offline too
        with loading():
            from hubwatch.runtime import hub_listing
        listing = hub_listing(settings())
        try:
            listed = listing.derivatives(repo_id, relation, limit=limit)
        finally:
            listing.close()
    rows = join_derivatives(listed, lineages, tracked, tracked_only=tracked_only)
    if as_json:
        print_json(rows)
        return
    if not rows:
        out.print(f"no derivatives of {shown(repo_id)} found", highlight=False)
        return
    out.print(_table(rows))


def _table(rows: list[DerivativeStatus]) -> Table:
    table = folding(
        "derivative",
        "relation",
        "status",
        "base revision",
        "missed",
        "modified",
        whole=("derivative",),
    )
    for row in rows:
        table.add_row(
            shown(row.repo_id),
            row.relation.value,
            _status(row),
            (row.base_sha or "")[:12],
            _missed(row),
            to_minute(row.last_modified),
        )
    return table


def _status(row: DerivativeStatus) -> str:
    if row.status is not None:
        text = row.status.value + ("" if row.listed else " (not listed)")
        return f"[{_STATUS_STYLE[row.status]}]{text}[/]"
    return "tracked, not checked yet" if row.tracked else "[dim]not tracked[/]"


def _missed(row: DerivativeStatus) -> str:
    if row.worst is None:
        return str(row.missed) if row.status is not None else ""
    return f"{row.missed} ([{_SEVERITY_STYLE[row.worst]}]{row.worst.value}[/])"
