"""CLI commands for model pins in a codebase: scan, check (a CI gate), bump (a PR)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import date, datetime
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from hubwatch.cli.base import JsonOption, app, err, exit_on_error, out, print_json, settings, shown
from hubwatch.cli.render import folding
from hubwatch.models import Severity

# The pins package is imported inside the commands: its scanners (YAML, TOML, shell) would
# otherwise load on every `hubwatch` start-up (bench/startup.py).
if TYPE_CHECKING:
    from hubwatch.pins.check import Report
    from hubwatch.pins.ignores import Ignore, ProjectConfig
    from hubwatch.pins.links import Link
    from hubwatch.pins.model import Pin
    from hubwatch.store.base import Store

pins_app = typer.Typer(
    help="Model pins in a codebase: find them, gate CI on them, propose the bump.",
    no_args_is_help=True,
)
app.add_typer(pins_app, name="pins")

EXIT_FAILED = 1
"""`pins check`: a pin at --fail-on or worse, or one that could not be checked, or an advisory
of the codebase's own versions; 7 (EXIT_ADVISORIES_UNKNOWN) takes precedence: the advisory data
is missing, empty, damaged or stale, so there is no advisory verdict."""

PathsArg = Annotated[
    list[Path], typer.Argument(metavar="PATH...", help="Files or folders to scan.", exists=True)
]


class Format(StrEnum):
    """How `pins check` prints its report."""

    TABLE = "table"
    JSON = "json"
    MARKDOWN = "markdown"
    SARIF = "sarif"


class FailOn(StrEnum):
    """The severities `--fail-on` takes."""

    BREAKING = "breaking"
    SECURITY = "security"
    BEHAVIOR = "behavior"


@pins_app.command("scan")
@exit_on_error()
def scan_command(paths: PathsArg, as_json: JsonOption = False) -> None:
    """List every model reference under PATH...: repo, revision (or unpinned), file, line."""
    from hubwatch.pins.scan import scan
    from hubwatch.pins.serialize import pin_json

    found = scan(paths)
    if as_json:
        print_json([pin_json(p) for p in found])
        return
    table = folding("where", "repo", "revision", "kind", "spelling")
    for pin in found:
        table.add_row(
            shown(f"{pin.path}:{pin.line}"),
            shown(pin.repo or pin.expression or ""),
            shown(pin.ref or ""),
            pin.kind.value,
            pin.spelling,
        )
    out.print(table)
    err.print(f"{len(found)} model reference(s)")


IgnoreOption = Annotated[
    list[str] | None,
    typer.Option(
        "--ignore",
        metavar="WHAT",
        help="Accept a finding: an advisory ID, ORG/NAME[@SHA], or id=,repo=,sha=,kind= "
        "(repeatable; needs --ignore-reason).",
    ),
]
ReasonOption = Annotated[
    str | None, typer.Option("--ignore-reason", help="Why the --ignore findings are accepted.")
]
UntilOption = Annotated[
    datetime | None,
    typer.Option(
        "--ignore-until", formats=["%Y-%m-%d"], help="Last day the --ignore entries count."
    ),
]
ConfigOption = Annotated[
    Path | None,
    typer.Option(
        "--config",
        exists=True,
        dir_okay=False,
        help="Read the ignore list here (.hubwatch.toml form, or a pyproject.toml's "
        "[tool.hubwatch]); default: the nearest one above PATH.",
    ),
]


def _project_config(
    paths: list[Path],
    config: Path | None,
    ignore: list[str] | None,
    reason: str | None,
    until: datetime | None,
) -> tuple[ProjectConfig, list[Ignore]]:
    from hubwatch.pins.ignores import ProjectConfig, find_config, parse_flag, read_config

    if ignore and not (reason and reason.strip()):
        raise typer.BadParameter("say why with --ignore-reason TEXT", param_hint="--ignore")
    found = config or find_config(paths)
    project = read_config(found) if found else ProjectConfig()
    flags = [parse_flag(w, reason or "", until.date() if until else None) for w in ignore or []]
    return project, [*project.ignores, *flags]


@contextmanager
def _checked(
    pins: list[Pin], paths: list[Path] | None = None, packages: frozenset[str] | None = None
) -> Iterator[tuple[Report, Store, Link]]:
    """Track every pinned repo (backfill, or a poll when tracked), check the pins, record that
    they name their repos (verified first a while), and match the codebase's own declared
    versions (under `paths`) against the advisory data."""
    from hubwatch.models import RepoRef
    from hubwatch.models.timestamps import now
    from hubwatch.pins.audit import audit
    from hubwatch.pins.check import check, repo_refs
    from hubwatch.pins.declared import declarations
    from hubwatch.pins.links import hub_links
    from hubwatch.pins.marks import record_pins
    from hubwatch.pins.scan import files
    from hubwatch.runtime import runtime

    loaded = settings()
    with runtime(loaded) as rt:

        def ensure(ref: RepoRef) -> None:
            err.print(f"tracking {shown(ref.repo_id)}", highlight=False)
            result = rt.tracker.track(ref)
            if result.failure:
                raise result.failure

        attach = rt.attacher.attach if rt.attacher else None
        report = check(rt.store, pins, ensure, advisories=attach is not None, recheck=attach)
        record_pins(rt.store, report.pins, now(), read_only=rt.store.read_only)
        if paths is not None:
            report = dataclasses.replace(
                report, project=audit(declarations(files(paths)), rt.service, packages)
            )
        git = frozenset(r for r, ref in repo_refs(pins).items() if ref.url is not None)
        yield report, rt.store, hub_links(loaded.hf_endpoint, git)


@pins_app.command("check")
@exit_on_error()
def check_command(
    paths: PathsArg,
    fail_on: Annotated[
        FailOn, typer.Option("--fail-on", help="Exit 1 when a pin is at this severity or worse.")
    ] = FailOn.SECURITY,
    fmt: Annotated[Format, typer.Option("--format", help="How to print the report.")] = (
        Format.TABLE
    ),
    as_json: JsonOption = False,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write the report here, not stdout.")
    ] = None,
    ignore: IgnoreOption = None,
    ignore_reason: ReasonOption = None,
    ignore_until: UntilOption = None,
    config: ConfigOption = None,
) -> None:
    """Track each pinned repo, report what changed upstream since each pin, and match the
    codebase's own declared versions against the advisory data.

    Exits 0 when it passes, 1 when it fails at --fail-on, 7 when the advisory data is
    missing, empty, damaged or stale (run `hubwatch osv sync`), 2 for a bad ignore list.
    """
    from hubwatch.pins.gate import apply
    from hubwatch.pins.scan import scan

    threshold = Severity(fail_on.value)
    fmt = Format.JSON if as_json else fmt
    if output is not None and fmt is Format.TABLE:
        raise typer.BadParameter("needs --format json, markdown or sarif", param_hint="--output")
    project, ignores = _project_config(paths, config, ignore, ignore_reason, ignore_until)
    with _checked(scan(paths), paths, project.packages) as (report, _, link):
        report = dataclasses.replace(report, config=project.path)
        report = apply(report, ignores, date.today())
        text = _render(report, threshold, fmt, link)
    if text is None:
        _table(report, threshold)
    elif output is not None:
        output.write_text(text, encoding="utf-8")
    else:
        out.print(text, markup=False, highlight=False, end="")
    code = report.exit_code(threshold)
    if code:
        raise typer.Exit(code)


def _render(report: Report, threshold: Severity, fmt: Format, link: Link) -> str | None:
    from hubwatch.pins.markdown import report_markdown
    from hubwatch.pins.sarif import report_sarif
    from hubwatch.pins.serialize import report_json

    data: Any
    if fmt is Format.MARKDOWN:
        return report_markdown(report, threshold, link)
    if fmt is Format.JSON:
        data = report_json(report, threshold)
    elif fmt is Format.SARIF:
        data = report_sarif(report)
    else:
        return None
    # ASCII: upstream text (summaries, titles) can hold C1 controls a terminal would act on.
    return json.dumps(data, indent=2, ensure_ascii=True) + "\n"


def _table(report: Report, threshold: Severity) -> None:
    from hubwatch.pins.findings import AdvisoryState

    table = folding("where", "repo", "pinned", "status", "worst", "newest", "advisories")
    for p in report.pins:
        own = p.matches
        state = p.advisory_state
        table.add_row(
            shown(f"{p.pin.path}:{p.pin.line}"),
            shown(p.pin.repo or p.pin.expression or ""),
            shown(p.pin.ref or p.pin.kind.value),
            p.status.value,
            (p.severity.value if p.severity else "") + (" (ignored some)" if p.waivers else ""),
            p.newest.sha[:12] if p.newest else "",
            shown(", ".join(m.advisory_id for m in own))
            if own
            else (state.value if state and state is not AdvisoryState.OK else ""),
        )
    out.print(table)
    for p in report.pins:
        for note in p.notes:
            err.print(f"{shown(p.pin.path)}:{p.pin.line}: {shown(note)}", highlight=False)
        for lc in p.dependencies:
            worst = max((c.severity for c in lc.changes), key=lambda s: s.rank, default=None)
            out.print(
                f"{shown(p.pin.path)}:{p.pin.line} {shown(p.pin.repo or '')} loads code from "
                f"{shown(lc.source)}, which changed ({worst.value if worst else 'info'}): pin "
                f"code_revision={lc.head}",
                highlight=False,
            )
    project = report.project
    if project is not None and project.state is AdvisoryState.OK:
        waived = {w.finding for w in project.waivers}
        for found in project.matches:
            m, d = found.match, found.declared
            note = " (ignored)" if m.advisory_id in waived else ""
            out.print(
                f"your {shown(m.package)} {shown(m.version or '')} ({shown(d.path)}:{d.line}): "
                f"{shown(m.advisory_id)} {shown(m.summary[:100])}{note}",
                highlight=False,
            )
    for entry in report.expired:
        err.print(f"expired ignore entry, counts again: {shown(entry.origin)}", highlight=False)
    for entry in report.unused:
        err.print(f"unused ignore entry (remove it): {shown(entry.origin)}", highlight=False)
    if report.advisory_state is AdvisoryState.UNKNOWN:
        for why in report.unknown_reasons():
            err.print(f"advisories unknown: {shown(why)}", highlight=False)
    verdict = {0: "passes", 1: "fails"}.get(report.exit_code(threshold), "advisories unknown")
    err.print(f"the check {verdict} at --fail-on {threshold.value}", highlight=False)


@pins_app.command("bump")
@exit_on_error()
def bump_command(
    paths: PathsArg,
    to: Annotated[
        str,
        typer.Option(
            "--to", metavar="TARGET", help="newest, or newest-without=SEVERITY (e.g. breaking)."
        ),
    ] = "newest",
    min_age: Annotated[
        str,
        typer.Option(
            "--min-age",
            metavar="AGE",
            help="Only to revisions committed at least this long ago (36h, 3d, 2w): a cool-down.",
        ),
    ] = "0",
    do_write: Annotated[
        bool, typer.Option("--write", help="Edit the files (else print a unified diff).")
    ] = False,
    pr_body: Annotated[
        Path | None,
        typer.Option("--pr-body", metavar="FILE", help="Also write the Markdown PR body here."),
    ] = None,
) -> None:
    """Move each sha pin to TARGET (only the sha bytes change) and print a changelog."""
    from hubwatch.pins.bump import parse_age, parse_target, plan, rewrite, unified_diff, write
    from hubwatch.pins.markdown import changelog_markdown
    from hubwatch.pins.scan import scan

    try:
        without = parse_target(to)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--to") from None
    try:
        age = parse_age(min_age)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--min-age") from None
    with _checked(scan(paths)) as (report, store, link):
        bumps = plan(store, report.pins, without, age)
    edited = rewrite(bumps)
    body = changelog_markdown(bumps, link)
    if do_write:
        write(edited)
        err.print(f"{len(edited)} file(s) edited")
    else:
        out.print(unified_diff(edited), markup=False, highlight=False, end="")
    if pr_body is not None:
        pr_body.write_text(body, encoding="utf-8")
        err.print(f"PR body written to {shown(str(pr_body))}", highlight=False)
    out.print(body, markup=False, highlight=False, end="")
