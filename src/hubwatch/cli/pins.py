"""CLI commands for model pins in a codebase: scan, check (a CI gate), bump (a PR)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from hubwatch.cli.base import JsonOption, app, err, exit_on_error, out, print_json, settings, shown
from hubwatch.models import Severity

# The pins package is imported inside the commands: its scanners (YAML, TOML, shell) would
# otherwise load on every `hubwatch` start-up (bench/startup.py).
if TYPE_CHECKING:
    from hubwatch.pins.check import Report
    from hubwatch.pins.links import Link
    from hubwatch.pins.model import Pin
    from hubwatch.store.base import Store

pins_app = typer.Typer(
    help="Model pins in a codebase: find them, gate CI on them, propose the bump.",
    no_args_is_help=True,
)
app.add_typer(pins_app, name="pins")

EXIT_FAILED = 1
"""`pins check`: a pin at --fail-on or worse, or one that could not be checked."""

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
    table = Table("where", "repo", "revision", "kind", "spelling")
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


@contextmanager
def _checked(pins: list[Pin]) -> Iterator[tuple[Report, Store, Link]]:
    """Track every pinned repo (backfill, or a poll when tracked), then check the pins."""
    from hubwatch.models import RepoRef
    from hubwatch.pins.check import check, repo_refs
    from hubwatch.pins.links import hub_links
    from hubwatch.runtime import runtime

    loaded = settings()
    with runtime(loaded) as rt:

        def ensure(ref: RepoRef) -> None:
            err.print(f"tracking {shown(ref.repo_id)}", highlight=False)
            result = rt.tracker.track(ref)
            if result.failure:
                raise result.failure

        report = check(rt.store, pins, ensure)
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
) -> None:
    """Track each pinned repo and report what changed upstream since each pin, by severity."""
    from hubwatch.pins.scan import scan

    threshold = Severity(fail_on.value)
    fmt = Format.JSON if as_json else fmt
    if output is not None and fmt is Format.TABLE:
        raise typer.BadParameter("needs --format json, markdown or sarif", param_hint="--output")
    with _checked(scan(paths)) as (report, _, link):
        text = _render(report, threshold, fmt, link)
    if text is None:
        _table(report)
    elif output is not None:
        output.write_text(text, encoding="utf-8")
    else:
        out.print(text, markup=False, highlight=False, end="")
    if report.fails(threshold):
        raise typer.Exit(EXIT_FAILED)


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


def _table(report: Report) -> None:
    table = Table("where", "repo", "pinned", "status", "worst", "newest")
    for p in report.pins:
        table.add_row(
            shown(f"{p.pin.path}:{p.pin.line}"),
            shown(p.pin.repo or p.pin.expression or ""),
            shown(p.pin.ref or p.pin.kind.value),
            p.status.value,
            p.severity.value if p.severity else "",
            p.newest.sha[:12] if p.newest else "",
        )
    out.print(table)


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
    do_write: Annotated[
        bool, typer.Option("--write", help="Edit the files (else print a unified diff).")
    ] = False,
) -> None:
    """Move each sha pin to TARGET (only the sha bytes change) and print a changelog."""
    from hubwatch.pins.bump import parse_target, plan, rewrite, unified_diff, write
    from hubwatch.pins.markdown import changelog_markdown
    from hubwatch.pins.scan import scan

    try:
        without = parse_target(to)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--to") from None
    with _checked(scan(paths)) as (report, store, link):
        bumps = plan(store, report.pins, without)
    edited = rewrite(bumps)
    if do_write:
        write(edited)
        err.print(f"{len(edited)} file(s) edited")
    else:
        out.print(unified_diff(edited), markup=False, highlight=False, end="")
    out.print(changelog_markdown(bumps, link), markup=False, highlight=False, end="")
