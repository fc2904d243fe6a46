"""A repo's trend across revisions: what each revision stored, as the series its charts draw."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from hubwatch.api.charts import Point, Series
from hubwatch.errors import UnsafeContent
from hubwatch.formats.json import loads_bounded
from hubwatch.models import TrendPoint
from hubwatch.models.timestamps import to_minute


@dataclass(frozen=True, slots=True)
class TrendRow:
    """One revision's values, for the table that says what the charts show."""

    sha: str
    date: str
    breaking: bool
    values: tuple[float | None, ...]
    """In the order of `METRICS`."""


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _params(p: TrendPoint) -> float | None:
    return _number(p.estimate.params.get("total")) if p.estimate and p.estimate.ok else None


def _serving(p: TrendPoint) -> float | None:
    return _number(p.estimate.serving.get("total")) if p.estimate and p.estimate.ok else None


def _lora(p: TrendPoint) -> float | None:
    if not (p.estimate and p.estimate.ok):
        return None
    return _number(p.estimate.training.get("lora", {}).get("total"))


def _context(p: TrendPoint) -> float | None:
    return float(p.estimate.context) if p.estimate and p.estimate.context > 0 else None


def _vocab(p: TrendPoint) -> float | None:
    """`vocab_size` of the config, or of its text model's (multimodal configs nest it)."""
    if p.config is None:
        return None
    try:
        config = loads_bounded(p.config)
    except (UnsafeContent, ValueError):
        return None
    if not isinstance(config, dict):
        return None
    text = config.get("text_config")
    found = config.get("vocab_size")
    if found is None and isinstance(text, dict):
        found = text.get("vocab_size")
    return _number(found)


def _weights(p: TrendPoint) -> float | None:
    return float(p.weight_bytes) if p.weight_bytes is not None else None


def _count(value: float) -> str:
    for size, suffix in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= size:
            return f"{value / size:,.3g}{suffix}"
    return f"{value:,.0f}"


def _gb(value: float) -> str:
    return f"{value / 1e9:,.3g} GB"


def _whole(value: float) -> str:
    return f"{value:,.0f}"


@dataclass(frozen=True, slots=True)
class Metric:
    """One chart: what it reads from a revision and how its values are written."""

    key: str
    title: str
    unit: str
    read: Callable[[TrendPoint], float | None]
    shown: Callable[[float], str]
    column: str
    """The table's header for it."""


METRICS = (
    Metric("params", "Parameters", "parameters", _params, _count, "parameters"),
    Metric(
        "serving",
        "Serving memory per card (bf16, one sequence as estimated)",
        "GB",
        _serving,
        _gb,
        "serving",
    ),
    Metric("lora", "LoRA fine-tuning memory per card (batch 1)", "GB", _lora, _gb, "LoRA"),
    Metric("context", "Context length", "tokens", _context, _whole, "context"),
    Metric("vocab", "Vocabulary size", "tokens", _vocab, _whole, "vocabulary"),
    Metric("weights", "Weight files, total size", "GB", _weights, _gb, "weights"),
)


def _label(p: TrendPoint) -> str:
    return p.date.strftime("%Y-%m-%d")


def trend_series(points: Sequence[TrendPoint]) -> list[Series]:
    """One series per metric that any revision knows, oldest revision first."""
    out = []
    for metric in METRICS:
        values = [metric.read(p) for p in points]
        if all(v is None for v in values):
            continue
        drawn = tuple(Point(_label(p), v, p.breaking) for p, v in zip(points, values, strict=True))
        out.append(Series(f"chart-{metric.key}", metric.title, metric.unit, drawn, metric.shown))
    return out


def trend_rows(points: Sequence[TrendPoint]) -> list[TrendRow]:
    """Every revision's values, newest first, as the table under the charts lists them."""
    return [
        TrendRow(p.sha, to_minute(p.date), p.breaking, tuple(m.read(p) for m in METRICS))
        for p in reversed(points)
    ]


def shown(metric: Metric, value: float | None) -> str:
    """A table cell: the value as its chart writes it, or a dash when it is not known."""
    return "–" if value is None else metric.shown(value)
