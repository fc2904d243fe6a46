"""`hubwatch demo`: a real model history shipped in the package, tracked and served offline.

Issue 32: without the Hub (a proxy, a firewall, no network) a newcomer could not see hubwatch
at all. The demo tracks the granite mirror (`demo_data/README.md` says where it comes from)
from a local copy, as any git remote is tracked, and serves it; nothing is asked of the Hub or
OSV.dev.
"""

from __future__ import annotations

import shutil
import socket
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from hubwatch.cli.base import app, err, exit_on_error, loading, out, settings, shown
from hubwatch.cli.tracking import severities, stored_line
from hubwatch.models import FOLLOW_HEAD, RepoRef, SourceKind

if TYPE_CHECKING:
    from hubwatch.settings import Settings

DEMO_REPO = "ibm-granite/granite-3.1-1b-a400m-instruct"
BUNDLE = Path(__file__).resolve().parent / "demo_data" / "granite-3.1-1b-a400m-instruct.bundle"
"""The real 9-commit history of DEMO_REPO as a git bundle (a bundle is a git remote)."""


@app.command()
@exit_on_error()
def demo(
    data_dir: Annotated[
        Path | None,
        typer.Option(
            help="Keep the demo's database here (and use it again) [default: a temporary "
            "directory, removed when the demo stops]."
        ),
    ] = None,
    host: Annotated[str, typer.Option(help="Listen address.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=0, max=65535, help="Listen port; 0: a free one.")] = 0,
) -> None:
    """Track a real model history shipped with hubwatch, without the Hub, and serve it."""
    cfg = settings()
    with loading():
        from hubwatch.runtime import runtime
        from hubwatch.server import serve as run
    with _place(data_dir) as where:
        demo_cfg = demo_settings(cfg, where, host, port or free_port(host))
        err.print(f"demo data in {shown(where)}" + ("" if data_dir else " (removed at the end)"))
        err.print(_advisories_note(demo_cfg), highlight=False)
        with runtime(demo_cfg) as rt:
            result = rt.tracker.track(_source(where))
            if result.failure:
                raise result.failure
            found = severities(rt.store, result.repo_id, result.new)
            held = rt.store.get_repo(result.repo_id).revisions
            err.print(stored_line(result.repo_id, len(result.new), held, found), highlight=False)

            def ready(url: str) -> None:
                out.print(f"{url}/repos/{DEMO_REPO}", highlight=False, soft_wrap=True)
                err.print("serving the demo; Ctrl-C stops it", highlight=False)

            run(rt, demo_cfg.api_host, demo_cfg.api_port, ready)


@contextmanager
def _place(data_dir: Path | None) -> Iterator[Path]:
    """The demo's data dir: the one given (created, kept), or a temporary one (removed)."""
    if data_dir is not None:
        data_dir.mkdir(parents=True, exist_ok=True)
        yield data_dir.resolve()
        return
    with tempfile.TemporaryDirectory(prefix="hubwatch-demo-") as made:
        yield Path(made)


def _source(where: Path) -> RepoRef:
    """The demo repo, tracked from a copy of the shipped bundle inside the data dir (so a kept
    data dir does not depend on where the package is installed)."""
    copy = where / "demo-source" / BUNDLE.name
    if not copy.exists():
        copy.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(BUNDLE, copy)
    return RepoRef(DEMO_REPO, SourceKind.GIT, str(copy), FOLLOW_HEAD)


def demo_settings(cfg: Settings, where: Path, host: str, port: int) -> Settings:
    """The user's settings, but with the demo's own SQLite database and mirrors under `where`,
    listening on `host:port`, and advisories only from a local OSV database (never OSV.dev)."""
    with loading():
        from hubwatch.settings import AdvisoryServiceKind
    local = cfg.osv_database_dir
    has_local = (local / "PyPI" / "all.zip").is_file()
    return cfg.model_copy(
        update={
            "data_dir": where,
            "database_url": None,
            "api_host": host,
            "api_port": port,
            "public_url": None,
            "osv_dir": local if has_local else None,
            "advisory_service": (
                AdvisoryServiceKind.OFFLINE if has_local else AdvisoryServiceKind.OFF
            ),
        }
    )


def _advisories_note(cfg: Settings) -> str:
    if cfg.osv_dir is not None:
        return f"advisories: from the local OSV database in {shown(cfg.osv_dir)}"
    return (
        "advisories: not checked (no local OSV database, and the demo never asks OSV.dev; "
        "`hubwatch osv sync` downloads it)"
    )


def free_port(host: str) -> int:
    """A port free on `host` now (the server binds it right after)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        port: int = probe.getsockname()[1]
        return port
