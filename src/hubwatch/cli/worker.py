"""CLI command for running a worker: change discovery and polls, shared with other workers."""

from __future__ import annotations

from typing import Annotated

import typer

from hubwatch.cli.base import app, exit_on_error, loading, settings


@app.command()
@exit_on_error()
def worker(
    metrics_port: Annotated[
        int | None,
        typer.Option(help="Serve Prometheus metrics on this port (/metrics).", min=1, max=65535),
    ] = None,
    worker_id: Annotated[
        str | None, typer.Option("--id", help="This worker's name in leases and logs.")
    ] = None,
) -> None:
    """Run a worker (no API) that finds changes and polls; several share one PostgreSQL."""
    cfg = settings()
    with loading():
        from hubwatch.daemon import run_forever
        from hubwatch.runtime import runtime
    with runtime(cfg) as rt:
        run_forever(rt, owner=worker_id, metrics_port=metrics_port)
