"""CLI commands for advisories: refresh the OSV data, show a revision's advisories, export ours."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from hubwatch.cli.base import (
    JsonOption,
    RepoArg,
    RevArg,
    app,
    err,
    exit_on_error,
    loading,
    out,
    print_json,
    settings,
    shown,
    stored,
)
from hubwatch.errors import EXIT_ADVISORIES_UNKNOWN
from hubwatch.models import AdvisoryReport, AdvisoryStatus
from hubwatch.models.timestamps import to_minute

osv_app = typer.Typer(
    help="Known advisories (OSV) of each revision, and our changes as OSV records.",
    no_args_is_help=True,
)
app.add_typer(osv_app, name="osv")


@osv_app.command("sync")
@exit_on_error()
def sync(
    download: Annotated[
        bool, typer.Option(help="Download the OSV database first (offline service only).")
    ] = True,
) -> None:
    """Refresh the local OSV database, then re-check every stored revision against it.

    Exits 7 when the advisory data could not be read for some revision (missing, empty,
    damaged or stale database; OSV.dev failing): those keep their earlier matches.
    """
    cfg = settings()
    with loading():
        from hubwatch.runtime import download_advisories, recheck_advisories
        from hubwatch.settings import AdvisoryServiceKind
    if cfg.advisory_service is AdvisoryServiceKind.OFF:
        err.print("advisories are off (HUBWATCH_ADVISORY_SERVICE=off): nothing to do")
        return
    sizes = download_advisories(cfg) if download else {}
    for ecosystem, size in sizes.items():
        err.print(f"downloaded {ecosystem}/all.zip ({size} bytes)", highlight=False)
    with stored() as store:
        attached = recheck_advisories(cfg, store)
    for event in attached:
        m = event.match
        out.print(
            f"{shown(event.repo_id)} {event.sha[:12]}: {shown(m.advisory_id)} now applies "
            f"({shown(m.package)} {shown(m.version or '')})",
            highlight=False,
        )
    err.print(f"{len(attached)} advisory match(es) newly attached")


@osv_app.command("show")
@exit_on_error()
def show(
    repo_id: RepoArg,
    rev: RevArg,
    as_json: JsonOption = False,
) -> None:
    """Show a revision's dependencies and the known advisories that apply to them.

    Exits 7 when the revision's advisories are unknown (its last check failed).
    """
    with stored(repo_id) as store:
        revision = store.revision(repo_id, rev)
        report = store.advisory_report(repo_id, revision.sha)
    if as_json:
        print_json(
            {
                "repo": repo_id,
                "sha": revision.sha,
                "status": report.status.value,
                "advisories": report,
            }
        )
    else:
        _show(repo_id, revision.sha, report)
    if report.status is AdvisoryStatus.DEGRADED:
        raise typer.Exit(EXIT_ADVISORIES_UNKNOWN)


def _show(repo_id: str, sha: str, report: AdvisoryReport) -> None:
    out.print(f"[bold]{shown(repo_id)}[/] {sha}")
    if report.checked_at is None:
        out.print("advisories: not checked yet (`hubwatch osv sync` checks every revision)")
    else:
        out.print(f"checked: {to_minute(report.checked_at)} by {shown(report.service)}")
    if report.error:
        out.print(
            "[red]advisories unknown: the last check failed:[/] "
            f"{shown(report.error)}\n(the matches below are from the last good check)"
        )
    deps = Table("package", "version", "spec", "from", "why")
    for d in report.dependencies:
        deps.add_row(
            shown(d.name), shown(d.version or ""), shown(d.spec), shown(d.source), shown(d.reason)
        )
    out.print(deps if report.dependencies else "dependencies: none found")
    if not report.matches:
        if report.status is AdvisoryStatus.OK:
            out.print("advisories: none known apply")
        return
    matches = Table("advisory", "aliases", "package", "severity", "fixed", "status", "why")
    for m in report.matches:
        severity = ", ".join(
            f"{s.score} {s.vector}" if s.score is not None else s.vector for s in m.severity
        )
        matches.add_row(
            shown(m.advisory_id),
            shown(", ".join(m.aliases)),
            shown(f"{m.package} {m.version or ''}"),
            shown(severity),
            shown(", ".join(m.fixed)),
            m.status.value,
            shown(m.reason),
        )
    out.print(matches)


@osv_app.command("export")
@exit_on_error(OSError)  # an unwritable DIR is a one-line error too
def export_records(
    directory: Annotated[Path, typer.Argument(metavar="DIR", help="Where to write the records.")],
) -> None:
    """Write every published change (behavior or above) as an OSV record, one file per record."""
    cfg = settings()
    with loading():
        from hubwatch.advisories.attach import StoreChangeFeed
        from hubwatch.advisories.publish import export, publish
    with stored() as store:
        records = publish(StoreChangeFeed(store, cfg.hf_endpoint).changes(), store)
    written = export(records, directory)
    err.print(f"{len(written)} OSV record(s) written to {shown(str(directory))}")
