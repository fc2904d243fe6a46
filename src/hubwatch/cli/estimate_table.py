"""The reservation table of `hubwatch estimate`: workloads as rows, cards as columns, in the
terminal (narrow cells that fit 80 columns) and as Markdown (the page's wording)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich import box

from hubwatch.cli.base import out, shown
from hubwatch.cli.render import folding
from hubwatch.estimator.table import legend

BORDERLINE_MARK = "!"


def _gb(n: int) -> str:
    return f"{n / 1e9:.1f}" if n < 99.95e9 else f"{n / 1e9:.0f}"


def _card(name: str) -> str:
    """A card's name on two lines at its dash (A100-40GB: A100 / 40GB), never cut."""
    return name.replace("-", "\n", 1)


def _batch(n: int) -> str:
    return f"×{n}" if n < 65_536 else "×65536+"


def terminal_cell(cell: Mapping[str, Any]) -> str:
    """The GB (the unit in the title) on one line, the batch or verdict under it: seven
    characters wide at most, so that eight cards fit 80 columns."""
    verdict, need = cell["verdict"], _gb(cell["need"])
    if verdict == "fits":
        return f"{need}\n{_batch(cell['max_batch'])}"
    if verdict == "borderline":
        return f"{need}\n{_batch(cell['max_batch'])}{BORDERLINE_MARK}"
    if verdict == "2 cards" and cell.get("layers"):
        first, second = cell["layers"]
        return f"{need}\n2 cards\n({first}+{second})\n{_batch(cell['max_batch'])}"
    return f"{need}\nno fit"


def render_table(table: Mapping[str, Any]) -> None:
    """The table, then what its figures rest on."""
    grid = folding(
        "",
        *[_card(c) for c in table["cards"]],
        title="GB at batch 1, and the largest batch (×N) per card",
    )
    grid.box = box.SIMPLE_HEAD
    grid.pad_edge = False
    for column in grid.columns[1:]:
        column.justify = "right"
    for row in table["rows"]:
        name = row["name"].replace("full fine-tune", "full\nfine-tune")
        grid.add_row(name, *[terminal_cell(c) for c in row["cells"]])
    out.print(grid)
    for line in legend(table, mark=f"{BORDERLINE_MARK} "):
        out.print(f"  {shown(line)}", highlight=False)


def markdown(table: Mapping[str, Any]) -> str:
    """The table as Markdown: full card names, each cell the GB, the batch and the verdict."""
    head = "| workload | " + " | ".join(table["cards"]) + " |"
    rule = "|---|" + "---|" * len(table["cards"])
    rows = [
        f"| {row['name']} | " + " | ".join(c["text"] for c in row["cells"]) + " |"
        for row in table["rows"]
    ]
    notes = [f"- {_escaped(line)}" for line in legend(table, mark="")]
    return "\n".join([head, rule, *rows, "", *notes]) + "\n"


def _escaped(text: str) -> str:
    return text.replace("|", "\\|")
