"""CLI commands that serve: `hubwatch serve` (API + scheduler) and `hubwatch badge`."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from hubwatch.cli.base import (
    EXIT_NOT_FOUND,
    JsonOption,
    RepoArg,
    app,
    exit_on_error,
    loading,
    out,
    settings,
    shown,
    stored,
)


@app.command()
@exit_on_error()
def serve(
    host: Annotated[str | None, typer.Option(help="Listen address [HUBWATCH_API_HOST].")] = None,
    port: Annotated[int | None, typer.Option(help="Listen port [HUBWATCH_API_PORT].")] = None,
) -> None:
    """Serve the API, pages, feeds and badges, poll every poll interval, deliver webhooks."""
    cfg = settings()
    with loading():
        from hubwatch.runtime import runtime
        from hubwatch.server import serve as run
    # on a full disk or a read-only database it serves reads, and says why, instead of failing
    with runtime(cfg, or_read_only=True) as rt:
        run(rt, host or cfg.api_host, cfg.api_port if port is None else port)


@app.command()
@exit_on_error()
def badge(
    repo_id: RepoArg,
    kind: Annotated[
        str,
        typer.Option(
            help="latest, status, changes, advisories, params, memory, breaking or stale."
        ),
    ] = "latest",
    pinned: Annotated[
        str | None, typer.Option(metavar="REV", help="For --kind changes: your pinned sha.")
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Print a repo's badge (the shields.io endpoint JSON with --json)."""
    with loading():
        from hubwatch.api import badge as make_badge
    with stored() as store:  # the id is not checked first: a bad one is an error badge
        made = make_badge(store, repo_id, kind, pinned)
    if as_json:
        out.print(json.dumps(made.model_dump(exclude_none=True)), markup=False, highlight=False)
    else:
        out.print(f"{shown(made.label)}: {shown(made.message)}", highlight=False)
    if made.isError:
        raise typer.Exit(EXIT_NOT_FOUND)
