"""CLI commands for advisories: refresh the OSV data, show a revision's advisories, export ours."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

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
from hubwatch.cli.render import folding, progress_bar
from hubwatch.errors import EXIT_ADVISORIES_UNKNOWN
from hubwatch.models import AdvisoryMatch, AdvisoryReport, AdvisoryStatus
from hubwatch.models.timestamps import to_minute

if TYPE_CHECKING:
    from hubwatch.advisories.attach import AdvisoryAttached

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
    as_json: Annotated[
        bool, typer.Option("--json", help="Print each newly attached match as JSON.")
    ] = False,
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
        err.print(
            "advisories are off (HUBWATCH_ADVISORY_SERVICE=off): nothing to do; set it to "
            "offline (a local OSV database) or osv (OSV.dev) to check revisions"
        )
        return
    sizes = download_advisories(cfg) if download else {}
    for ecosystem, size in sizes.items():
        err.print(f"downloaded {ecosystem}/all.zip ({size:,} bytes)", highlight=False)
    checked = [0]
    with stored() as store, progress_bar(terminal_only=True) as progress:
        task = progress.add_task("checking revisions", total=None)

        def advance(done: int, total: int) -> None:
            checked[0] = total
            progress.update(task, completed=done, total=total)

        attached = recheck_advisories(cfg, store, advance)
    if as_json:
        print_json([{"repo": e.repo_id, "sha": e.sha, "match": e.match} for e in attached])
        return
    _sync_summary(attached, checked[0])


def _sync_summary(attached: list[AdvisoryAttached], checked: int) -> None:
    """What `osv sync` found, grouped by package and severity, and where to look next."""
    if not attached:
        out.print(f"{checked} revision(s) checked: no advisory newly applies", highlight=False)
        return
    groups: dict[tuple[str, str], list[AdvisoryAttached]] = defaultdict(list)
    for event in attached:
        groups[(event.match.package, _level(event.match))].append(event)
    repos = {e.repo_id for e in attached}
    out.print(
        f"{checked} revision(s) checked: {len({e.match.advisory_id for e in attached})} "
        f"advisories newly apply to {len({(e.repo_id, e.sha) for e in attached})} revision(s) "
        f"of {len(repos)} repo(s)",
        highlight=False,
    )
    table = folding("package", "severity", "advisories", "revisions", "repos")
    ranked = sorted(groups.items(), key=lambda item: (item[0][0], _LEVELS.index(item[0][1])))
    for (package, level), events in ranked:
        table.add_row(
            shown(package),
            level,
            str(len({e.match.advisory_id for e in events})),
            str(len({(e.repo_id, e.sha) for e in events})),
            shown(", ".join(sorted({e.repo_id for e in events}))),
        )
    out.print(table)
    repo_id, sha = attached[-1].repo_id, attached[-1].sha
    out.print(
        f"next: `hubwatch osv show {shown(repo_id)} {sha[:12]}` lists a revision's advisories",
        highlight=False,
        soft_wrap=False,
        overflow="fold",
    )


_LEVELS = ("critical", "high", "medium", "low", "unscored")


def _level(match: AdvisoryMatch) -> str:
    """The advisory's highest CVSS base score, as the CVSS v3 rating names it."""
    score = max((s.score for s in match.severity if s.score is not None), default=None)
    if score is None:
        return "unscored"
    if score >= 9:
        return "critical"
    if score >= 7:
        return "high"
    return "medium" if score >= 4 else "low"


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
    deps = folding("package", "version", "spec", "from", "why")
    for d in report.dependencies:
        deps.add_row(
            shown(d.name), shown(d.version or ""), shown(d.spec), shown(d.source), shown(d.reason)
        )
    out.print(deps if report.dependencies else "dependencies: none found")
    if not report.matches:
        if report.status is AdvisoryStatus.OK:
            out.print("advisories: none known apply")
        return
    matches = folding("advisory", "aliases", "package", "severity", "fixed", "status", "why")
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
