"""How the commands draw what they share: tables that wrap instead of cutting, change lines,
a change's detail."""

from __future__ import annotations

from collections.abc import Iterable

from rich.console import Group, RenderableType
from rich.padding import Padding
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from hubwatch.cli.base import cleaned, err, shown
from hubwatch.models import Change, Severity

SEVERITY_STYLE = {
    Severity.BREAKING: "bold red",
    Severity.SECURITY: "bold magenta",
    Severity.BEHAVIOR: "yellow",
    Severity.INFO: "dim",
}


def folding(*headers: str, whole: Iterable[str] = (), title: str | None = None) -> Table:
    """A table whose cells wrap (fold) to the terminal's width instead of being cut with "…";
    the columns named in `whole` (ids people copy) are never broken. Every table of the CLI
    is made here (`tests/test_cli_views.py` holds it to that)."""
    table = Table(*headers, title=title)
    keep = set(whole)
    for column in table.columns:
        if column.header in keep:
            column.no_wrap = True
            column.min_width = None
        else:
            column.overflow = "fold"
    return table


def gb(n: float) -> str:
    """Bytes as gigabytes, as the estimates print them."""
    return f"{n / 1e9:,.2f} GB"


def severity_label(value: Severity) -> str:
    """A severity as markup, in its colour."""
    return f"[{SEVERITY_STYLE[value]}]{value.value}[/]"


def changes_grid(rows: Iterable[tuple[str | None, Change]]) -> Padding:
    """Changes as an indented grid whose kind and summary wrap (fold), never cut, to the width."""
    rows = list(rows)
    grid = Table.grid(padding=(0, 1))
    if any(at is not None for at, _ in rows):
        grid.add_column(no_wrap=True)
    grid.add_column(no_wrap=True, min_width=8)
    grid.add_column(overflow="fold", max_width=30)
    grid.add_column(overflow="fold", ratio=1)
    for at, change in rows:
        cells = [] if at is None else [at]
        grid.add_row(
            *cells, severity_label(change.severity), shown(change.kind), shown(change.summary)
        )
    return Padding(grid, (0, 0, 0, 2))


_DIFF_STYLE = (("+++", "bold"), ("---", "bold"), ("@@", "cyan"), ("+", "green"), ("-", "red"))


def change_detail(change: Change) -> RenderableType:
    """A change's detail (a unified diff, a rendered span) under a line naming the change,
    indented, its lines kept and folded to the width; a diff's lines in their colours."""
    title = Text(f"{cleaned(change.kind)}", style="bold")
    if change.path:
        title.append(f" {cleaned(change.path)}", style="")
    body = Text(overflow="fold", no_wrap=False)
    for line in cleaned(change.detail or "", lines=True).splitlines():
        style = next((s for prefix, s in _DIFF_STYLE if line.startswith(prefix)), "")
        body.append(line + "\n", style=style)
    body.rstrip()
    return Padding(Group(title, Padding(body, (0, 0, 0, 2))), (0, 0, 0, 4))


def progress_bar(*, terminal_only: bool) -> Progress:
    """The CLI's progress bar on stderr: with `terminal_only`, a bar gone when done and nothing
    at all elsewhere (a log, a pipe); otherwise its last line stays as a record of the work."""
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        transient=terminal_only,
        disable=terminal_only and not err.is_terminal,
    )
