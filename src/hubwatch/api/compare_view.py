"""What the compare page shows of a `Comparison`, as rows: changes by severity, the lines of a
unified diff, the two estimates with their delta, the tensor reports of re-uploads."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from hubwatch.diff import TENSOR_DIFF, Piece, Pieces, char_pieces
from hubwatch.models import Change, Estimate, Severity

SEVERITIES = (Severity.BREAKING, Severity.SECURITY, Severity.BEHAVIOR, Severity.INFO)
_Read = Callable[[Estimate | None], float | None]
"""One quantity read from an estimate, None where it has none."""
WORKLOADS = (
    ("serving", "serving"),
    ("lora", "LoRA"),
    ("qlora", "QLoRA"),
    ("full", "full fine-tune"),
)


def by_severity(changes: list[Change]) -> list[tuple[Severity, list[Change]]]:
    """The changes grouped by severity, most severe first; every severity, empty or not."""
    return [(s, [c for c in changes if c.severity is s]) for s in SEVERITIES]


def diff_lines(text: str) -> list[DiffLine]:
    """A unified diff's lines, each with its class (file, hunk, add, del or ctx); where a run of
    removed lines is followed by as many added ones, the characters that differ in each pair."""
    out, hunks = [], False
    for line in text.splitlines():
        hunks = hunks or line.startswith("@@")
        out.append(DiffLine(_kind(line, hunks), line, (Piece(line, False),)))
    i = 0
    while i < len(out):
        removed = _run(out, i, "del")
        added = _run(out, i + removed, "add")
        if removed and removed == added:
            for k in range(i, i + removed):
                old, new = out[k], out[k + removed]
                was, now = char_pieces(old.text[1:], new.text[1:])
                out[k] = replace(old, pieces=(Piece("-", False), *was))
                out[k + removed] = replace(new, pieces=(Piece("+", False), *now))
        i += max(1, removed + added)
    return out


@dataclass(frozen=True, slots=True)
class DiffLine:
    """One line of a unified diff."""

    kind: str
    text: str
    pieces: Pieces
    """The line in runs, those that differ from its pair (a removed line's added one) changed."""


def _kind(line: str, in_hunks: bool) -> str:
    if not in_hunks and line.startswith(("--- ", "+++ ")):
        return "file"  # NOTE: only above the first hunk: a removed line may start "-- "
    if line.startswith("@@"):
        return "hunk"
    return {"+": "add", "-": "del"}.get(line[:1], "ctx")


def _run(lines: list[DiffLine], start: int, kind: str) -> int:
    """How many lines of `kind` follow from `start`."""
    n = 0
    while start + n < len(lines) and lines[start + n].kind == kind:
        n += 1
    return n


@dataclass(frozen=True, slots=True)
class EstimateRow:
    """One quantity of both estimates, shown, with the change between them."""

    label: str
    before: str
    after: str
    delta: str


def estimate_rows(before: Estimate | None, after: Estimate | None) -> list[EstimateRow]:
    """Parameters, then the memory of serving and of each kind of fine-tune, on both sides."""
    quantities: list[tuple[str, _Read, Callable[..., str]]] = [("parameters", _params, _count)]
    quantities += [(f"{label} memory", _memory(workload), gb) for workload, label in WORKLOADS]
    rows = []
    for label, read, shown in quantities:
        b, a = read(before), read(after)
        if b is None and a is None:
            continue
        delta = ""
        if a is not None and b is not None:
            delta = "=" if a == b else shown(a - b, signed=True)
        rows.append(EstimateRow(label, shown(b), shown(a), delta))
    return rows


def batch_rows(
    before: Estimate | None, after: Estimate | None
) -> tuple[list[str], list[tuple[str, list[str]]]]:
    """The GPUs, and for each workload the largest batch per card on each: "b → a" where it
    changed."""
    tables = [e.max_batch if e is not None and e.ok else {} for e in (before, after)]
    gpus: list[str] = []
    for table in tables:
        for row in table.values():
            gpus += [g for g in row if g not in gpus]
    rows = []
    for workload, label in WORKLOADS:
        sides = [table.get(workload) for table in tables]
        if not any(sides):
            continue
        cells = []
        for gpu in gpus:
            b, a = (batch_cell((side or {}).get(gpu)) for side in sides)
            cells.append(b if a == b else f"{b or '?'} → {a or '?'}")
        rows.append((label, cells))
    return gpus, rows


@dataclass(frozen=True, slots=True)
class TensorReport:
    """A `weights.reuploaded` change told per tensor."""

    change: Change
    diff: dict[str, Any]
    """`TensorDiff.json()`: changed, possibly_changed, their counts, identical, tensors, bytes."""


def tensor_reports(changes: list[Change]) -> list[TensorReport]:
    """The re-uploads among `changes` that carry a tensor diff."""
    return [
        TensorReport(c, c.after[TENSOR_DIFF])
        for c in changes
        if c.kind == "weights.reuploaded"
        and isinstance(c.after, dict)
        and isinstance(c.after.get(TENSOR_DIFF), dict)
    ]


def _params(estimate: Estimate | None) -> float | None:
    total = estimate.params.get("total") if estimate is not None and estimate.ok else None
    return total if isinstance(total, int) else None


def _memory(workload: str) -> _Read:
    def read(estimate: Estimate | None) -> float | None:
        if estimate is None or not estimate.ok:
            return None
        part = estimate.serving if workload == "serving" else estimate.training.get(workload)
        total = part.get("total") if isinstance(part, dict) else None
        return total if isinstance(total, int | float) else None

    return read


def _count(value: float | None, signed: bool = False) -> str:
    if value is None:
        return "?"
    return f"{value:+,}" if signed else f"{value:,}"


def gb(value: object, signed: bool = False) -> str:
    """Bytes as GB to two places (signed for a delta); "?" for anything but a number."""
    if not isinstance(value, int | float):
        return "?"
    return f"{value / 1e9:+,.2f} GB" if signed else f"{value / 1e9:,.2f} GB"


def batch_cell(fit: Any) -> str:
    """A largest batch as a table cell: "–" when none fits, " ×2" when split over two cards."""
    if not isinstance(fit, dict) or not isinstance(fit.get("max_batch"), int):
        return ""
    n = fit["max_batch"]
    if n <= 0:
        return "–"
    shown = f"{n}" if n < 65_536 else "≥65536"
    return shown + (" ×2" if fit.get("cards") == 2 else "")
