"""The reservation table: for each workload (rows) on each card (columns), the GB it needs, the
largest batch, and a verdict (fits, borderline, two cards split by layers, does not fit)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from hubwatch.estimator.cards import Fit, Gpu, gpus
from hubwatch.estimator.cost import Cost, price_words
from hubwatch.estimator.memory import CUDA_CONTEXT, SLACK, GiB, Memory

CONSERVATIVE = 1.17
"""The conservative peak: the estimate times this. It covers the largest under-estimate this
project has measured (docs/estimator-accuracy.md)."""
CONSERVATIVE_FROM = (
    "it covers the largest under-estimate of a run with published settings in "
    "docs/estimator-accuracy.md: LitGPT's Llama 2 "
    "13B QLoRA, 22.55 GB measured against 19.34 GB estimated (x1.166)"
)
HEADROOM_FROM = (
    f"every estimate holds the CUDA context ({CUDA_CONTEXT / GiB:g} GiB) and {SLACK:.0%} "
    "allocator slack (estimator/memory.py); a card's memory is its nvidia-smi total (gpus.json)"
)
WORKLOADS = {"full": "full fine-tune", "lora": "LoRA", "qlora": "QLoRA", "serving": "serving"}
"""Row order and names: the training methods, then serving."""

FITS, BORDERLINE, TWO_CARDS, NO_FIT = "fits", "borderline", "2 cards", "does not fit"


@dataclass(slots=True, unsafe_hash=True)
class Cell:
    """One workload on one card. Not frozen, though never changed once made (hashable all
    the same), for the reason `Fit` is not: one per workload and card."""

    gpu: str
    verdict: str
    """fits, borderline (fits on the estimate, not on the conservative peak), 2 cards,
    does not fit (not even two cards hold batch 1)."""
    need: int
    """Bytes at batch 1 (on the fuller card when split)."""
    max_batch: int
    layers: tuple[int, int] | None = None
    """Two cards: layers on each."""

    @property
    def text(self) -> str:
        """The cell as the table prints it: "2.9 GB · 41", "… · borderline", "… · 2 cards
        (8 layers + 8)", "… · does not fit"; the batch is the largest on the estimate."""
        return _text(self, f"{self.need / 1e9:.1f} GB")


def _text(cell: Cell, gb: str) -> str:
    """`cell.text`, its bytes already in words (`gb`)."""
    batch = f"{cell.max_batch}" if cell.max_batch < 65_536 else "≥65536"
    if cell.verdict == FITS:
        return f"{gb} · {batch}"
    if cell.verdict == BORDERLINE:
        return f"{gb} · {batch} · borderline"
    if cell.verdict == TWO_CARDS and cell.layers:
        return f"{gb} · {batch} · 2 cards ({cell.layers[0]} layers + {cell.layers[1]})"
    return f"{gb} · does not fit"


@dataclass(frozen=True, slots=True)
class Row:
    workload: str
    """full, lora, qlora, serving."""
    name: str
    total: int
    """Bytes at the stated batch on one card."""
    settings: str
    cells: tuple[Cell, ...]
    cost: str | None = None
    """The priced job, for training rows: hours and dollars, with cents."""


@dataclass(frozen=True, slots=True)
class Table:
    """Rows = workloads, columns = cards, and what every figure rests on."""

    cards: tuple[str, ...]
    rows: tuple[Row, ...]
    context: int
    """Serving tokens per sequence."""
    model_context: int
    """The longest context the config declares, shown beside."""
    seq_len: int
    conservative: float
    conservative_from: str
    headroom_from: str
    computes: tuple[str, ...]
    job: str | None = None
    """The priced job in words (epochs × samples × tokens on a card, prices dated)."""


def verdict(memory: Memory, fit: Fit, card: Gpu) -> Cell:
    """The cell of `memory`'s workload on `card`, from its fit."""
    if fit.max_batch < 1:
        return Cell(card.name, NO_FIT, fit.need, 0)
    if fit.cards == 2:
        return Cell(card.name, TWO_CARDS, fit.need, fit.max_batch, fit.layers)
    safe = fit.need * CONSERVATIVE <= card.memory
    return Cell(card.name, FITS if safe else BORDERLINE, fit.need, fit.max_batch)


def table(
    memory: Sequence[Memory],
    max_batch: Mapping[str, Sequence[Fit]],
    *,
    model_context: int,
    computes: tuple[str, ...] = (),
    costs: Mapping[str, Cost] | None = None,
) -> Table:
    """The table of `memory`'s workloads over the cards of the GPU table."""
    cards = gpus()
    by = {m.workload: m for m in memory}
    rows = []
    for workload, name in WORKLOADS.items():
        m = by.get(workload)
        if m is None:
            continue
        cells = tuple(
            verdict(m, fit, card) for fit, card in zip(max_batch[workload], cards, strict=True)
        )
        cost = (costs or {}).get(workload)
        priced = price_words(cost.hours, cost.usd) if cost else None
        rows.append(Row(workload, name, m.total, _settings(m), cells, priced))
    context, seq_len = _lengths(memory)
    job = next(iter((costs or {}).values()), None)
    return Table(
        tuple(c.name for c in cards),
        tuple(rows),
        context,
        model_context,
        seq_len,
        CONSERVATIVE,
        CONSERVATIVE_FROM,
        HEADROOM_FROM,
        computes,
        None if job is None else f"{job.assumptions['job']} on {job.assumptions['gpu']}",
    )


def _lengths(memory: Sequence[Memory]) -> tuple[int, int]:
    """Serving's tokens per sequence and training's (its first method's, cut at the model's
    context), as the table's legend gives them."""
    serve = next((m for m in memory if m.workload == "serving"), None)
    context = int(serve.assumptions.get("context tokens", 0)) if serve else 0
    train = next((m for m in memory if m.workload != "serving"), None)
    seq = train.assumptions.get("sequence length", 0) if train else 0
    return context, int(str(seq).split()[0]) if seq else 0


def _settings(m: Memory) -> str:
    a = m.assumptions
    if m.workload == "serving":
        return f"{a.get('weights dtype', '?')}, {a.get('context tokens', '?')} tokens x batch " + (
            f"{a.get('batch', 1)}"
        )
    return f"{a.get('sequence length', '?')} tokens x batch {a.get('batch', 1)}"


def as_json(t: Table) -> dict[str, Any]:
    """The table as plain data, each cell with its text (what the stored estimate keeps)."""
    return {
        "cards": list(t.cards),
        "rows": [
            {
                "workload": r.workload,
                "name": r.name,
                "total": r.total,
                "settings": r.settings,
                "cost": r.cost,
                "cells": _cells(r.cells),
            }
            for r in t.rows
        ],
        "context": t.context,
        "model_context": t.model_context,
        "seq_len": t.seq_len,
        "conservative": t.conservative,
        "conservative_from": t.conservative_from,
        "headroom_from": t.headroom_from,
        "computes": list(t.computes),
        "job": t.job,
    }


def _cells(cells: tuple[Cell, ...]) -> list[dict[str, Any]]:
    return [
        {
            "gpu": c.gpu,
            "verdict": c.verdict,
            "need": c.need,
            "max_batch": c.max_batch,
            "layers": list(c.layers) if c.layers else None,
            "text": c.text,
        }
        for c in cells
    ]


def stored_json(
    memory: Sequence[Memory],
    max_batch: Mapping[str, Sequence[Fit]],
    *,
    model_context: int,
    computes: tuple[str, ...],
    costs: Mapping[str, str],
    job: str | None,
) -> tuple[dict[str, Any], dict[str, dict[str, dict[str, Any]]]]:
    """`as_json(table(...))`, `costs` already in words (`cost.priced`) and `job` too, and the
    largest batches by workload and card ({cards, max_batch, split}): what an estimate
    stores, built in one pass over the fits, without a Cell, Row or Table between."""
    cards = _columns()
    batches = {}
    rows = {}
    for m in memory:
        workload = m.workload
        cells, batches[workload] = _stored_row(max_batch[workload], cards)
        name = WORKLOADS.get(workload)
        if name is not None:
            rows[workload] = {
                "workload": workload,
                "name": name,
                "total": m.total,
                "settings": _settings(m),
                "cost": costs.get(workload),
                "cells": cells,
            }
    context, seq_len = _lengths(memory)
    grid = {
        "cards": list(_names()),
        "rows": [rows[w] for w in WORKLOADS if w in rows],
        "context": context,
        "model_context": model_context,
        "seq_len": seq_len,
        "conservative": CONSERVATIVE,
        "conservative_from": CONSERVATIVE_FROM,
        "headroom_from": HEADROOM_FROM,
        "computes": list(computes),
        "job": job,
    }
    return grid, batches


@cache
def _columns() -> tuple[tuple[str, int], ...]:
    """Each card of the table's name and bytes, read once."""
    return tuple((card.name, card.memory) for card in gpus())


@cache
def _names() -> tuple[str, ...]:
    """The table's columns: the cards' names."""
    return tuple(card.name for card in gpus())


def _stored_row(
    fits: Sequence[Fit], cards: tuple[tuple[str, int], ...]
) -> tuple[list[dict[str, Any]], dict[str, dict[str, Any]]]:
    """A row's cells as `_cells` gives them and its largest batches by card, from its fits.

    The verdict is `verdict`'s and the text `_text`'s, inlined (on the stored path, a call
    per cell costs what the cell's dict does); tests/estimator/test_stored.py holds both paths
    to the same words and figures."""
    cells = []
    batches = {}
    last, gb, peak = -1, "", 0.0
    for fit, (gpu, bytes_) in zip(fits, cards, strict=True):
        need, batch = fit.need, fit.max_batch
        batches[gpu] = {"cards": fit.cards, "max_batch": batch, "split": fit.split}
        if need != last:  # the cards one card holds share the row's bytes at batch 1
            last, gb, peak = need, f"{need / 1e9:.1f} GB", need * CONSERVATIVE
        layers = None
        if batch < 1:
            verdict, batch, text = NO_FIT, 0, f"{gb} · does not fit"
        else:
            shown = batch if batch < 65_536 else "≥65536"
            if fit.cards == 2:
                verdict, layers = TWO_CARDS, fit.layers
                text = (
                    f"{gb} · {shown} · 2 cards ({layers[0]} layers + {layers[1]})"
                    if layers
                    else f"{gb} · does not fit"
                )
            elif peak <= bytes_:
                verdict, text = FITS, f"{gb} · {shown}"
            else:
                verdict, text = BORDERLINE, f"{gb} · {shown} · borderline"
        cells.append(
            {
                "gpu": gpu,
                "verdict": verdict,
                "need": need,
                "max_batch": batch,
                "layers": list(layers) if layers else None,
                "text": text,
            }
        )
    return cells, batches


def legend(table: Mapping[str, Any], mark: str = "") -> list[str]:
    """What the cells mean and where the factors come from, one line each, from the table as
    `as_json` gives it (`mark`: the sign a terminal cell puts after a borderline batch)."""
    lines = [
        f"{mark}borderline: fits on the estimate, not on the conservative peak "
        f"(estimate x{table['conservative']:g}; {table['conservative_from']})",
        "2 cards (L + M): a pipeline split, L layers on the first card and M on the second; "
        "no fit: not even two cards hold batch 1",
        f"headroom: {table['headroom_from']}",
        f"serving: {table['context']:,} tokens per sequence (--context to change; the "
        f"model's maximum: {table['model_context']:,}); training: {table['seq_len']:,} tokens "
        "per sequence",
    ]
    lines += [f"computes: {line}" for line in table.get("computes", [])]
    for row in table["rows"]:
        if row.get("cost"):
            lines.append(f"cost, {row['name']}: {row['cost']}")
    if table.get("job"):
        lines.append(f"priced job: {table['job']}")
    return lines
