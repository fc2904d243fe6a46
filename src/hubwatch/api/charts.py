"""Line charts as inline SVG: a series of values across revisions in, an SVG string out."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from html import escape

WIDTH = 480
HEIGHT = 200
_LEFT, _RIGHT, _TOP, _BOTTOM = 76, 12, 14, 44
"""Margins inside the viewBox: the left one holds the value labels, the bottom one the dates
and the x axis' title."""
LINE = "#0550ae"
"""The series (7.0:1 on white)."""
BREAKING = "#cf222e"
"""A breaking revision's mark (5.4:1 on white), the badge colour of `breaking`."""
INK = "#1f2328"
MUTED = "#57606a"
"""Axis labels (6.4:1 on white)."""


@dataclass(frozen=True, slots=True)
class Point:
    """One revision's value."""

    label: str
    """What the revision is called on the x axis and in its tooltip (a date, a short sha)."""
    value: float | None
    """None: not known at this revision (no config, no estimate); the line breaks there."""
    breaking: bool = False
    """The revision recorded a breaking change: marked on the chart."""


@dataclass(frozen=True, slots=True)
class Series:
    """A quantity across revisions, oldest first."""

    key: str
    """Unique on its page: the SVG's element ids start with it."""
    title: str
    unit: str
    """The y axis' title (`parameters`, `GB`, `tokens`)."""
    points: tuple[Point, ...]
    shown: Callable[[float], str] = lambda v: f"{v:,.0f}"
    """How a value is written (the y axis' labels, the tooltips, the description)."""


def line_chart(series: Series) -> str:
    """`series` as a standalone inline SVG with a title, a description, labelled axes and the
    breaking revisions marked; no script, no external reference."""
    points = series.points
    known = [p.value for p in points if p.value is not None]
    lo, hi = _bounds(known)
    xs = _xs(len(points))

    def y(value: float) -> float:
        return _TOP + (HEIGHT - _TOP - _BOTTOM) * (hi - value) / (hi - lo)

    key = escape(series.key)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" viewBox="0 0 {WIDTH} {HEIGHT}"'
        f' role="img" aria-labelledby="{key}-title {key}-desc">',
        f'<title id="{key}-title">{escape(series.title)}</title>',
        f'<desc id="{key}-desc">{escape(describe(series))}</desc>',
        *_axes(series, lo, hi, y),
        *_marks(points, xs),
        *_lines(points, xs, y),
        *_dots(series, xs, y),
        "</svg>",
    ]
    return "\n".join(parts)


def describe(series: Series) -> str:
    """The chart in one sentence, for those who do not see it."""
    points = series.points
    if not points:
        return f"{series.title}: no revisions."
    known = [p for p in points if p.value is not None]
    n = len(points)
    text = f"{series.title} across {n} revision{'' if n == 1 else 's'}"
    if known:
        first, last = known[0], known[-1]
        assert first.value is not None and last.value is not None
        text += f": {series.shown(first.value)} at {first.label}"
        if len(known) > 1:
            text += f", {series.shown(last.value)} at {last.label}"
    else:
        text += ": not known at any"
    breaking = [p.label for p in points if p.breaking]
    if breaking:
        text += f"; breaking changes at {', '.join(breaking)}"
    return text + "."


def _bounds(values: Sequence[float]) -> tuple[float, float]:
    """The y axis' range: the values' own, widened around a single value so it sits mid-way."""
    if not values:
        return 0.0, 1.0
    lo, hi = min(values), max(values)
    if lo == hi:
        pad = abs(lo) * 0.1 or 1.0
        return lo - pad, hi + pad
    pad = (hi - lo) * 0.05
    return lo - pad, hi + pad


def _xs(n: int) -> list[float]:
    """Revisions evenly spaced: an order, not a time scale (a backfill lands many at once)."""
    left, right = _LEFT + 8, WIDTH - _RIGHT - 8
    if n == 1:
        return [(left + right) / 2]
    return [left + (right - left) * i / (n - 1) for i in range(n)]


def _axes(series: Series, lo: float, hi: float, y: Callable[[float], float]) -> list[str]:
    bottom = HEIGHT - _BOTTOM
    out = [
        f'<g stroke="{MUTED}" stroke-width="1">'
        f'<line x1="{_LEFT}" y1="{_TOP}" x2="{_LEFT}" y2="{bottom}"/>'
        f'<line x1="{_LEFT}" y1="{bottom}" x2="{WIDTH - _RIGHT}" y2="{bottom}"/></g>',
        f'<g font-size="11" fill="{MUTED}" font-family="system-ui, sans-serif">',
    ]
    pad = (hi - lo) / 22  # the labels at the data's range, not the padded axis' ends
    for value in (lo + pad, (lo + hi) / 2, hi - pad):
        at = y(value)
        out.append(
            f'<text x="{_LEFT - 6}" y="{at + 4:.1f}" text-anchor="end">'
            f"{escape(series.shown(value))}</text>"
        )
        out.append(
            f'<line x1="{_LEFT - 3}" y1="{at:.1f}" x2="{_LEFT}" y2="{at:.1f}" stroke="{MUTED}"/>'
        )
    if series.points:
        first, last = series.points[0].label, series.points[-1].label
        out.append(f'<text x="{_LEFT}" y="{bottom + 14}">{escape(first)}</text>')
        if len(series.points) > 1:
            out.append(
                f'<text x="{WIDTH - _RIGHT}" y="{bottom + 14}" text-anchor="end">'
                f"{escape(last)}</text>"
            )
    middle = (_LEFT + WIDTH - _RIGHT) / 2
    out.append(
        f'<text x="{middle}" y="{HEIGHT - 6}" text-anchor="middle" fill="{INK}">'
        "revision, oldest to newest</text>"
    )
    out.append(
        f'<text transform="translate(12 {(_TOP + bottom) / 2}) rotate(-90)"'
        f' text-anchor="middle" fill="{INK}">{escape(series.unit)}</text>'
    )
    out.append("</g>")
    return out


def _marks(points: Sequence[Point], xs: Sequence[float]) -> list[str]:
    """A dashed rule and a triangle above each breaking revision."""
    out = []
    for point, x in zip(points, xs, strict=True):
        if point.breaking:
            out.append(
                f'<g class="breaking" stroke="{BREAKING}" fill="{BREAKING}">'
                f"<title>breaking change at {escape(point.label)}</title>"
                f'<line x1="{x:.1f}" y1="{_TOP}" x2="{x:.1f}" y2="{HEIGHT - _BOTTOM}"'
                ' stroke-dasharray="4 3"/>'
                f'<path d="M{x - 5:.1f} {_TOP - 9} h10 l-5 8 z" stroke="none"/></g>'
            )
    return out


def _lines(points: Sequence[Point], xs: Sequence[float], y: Callable[[float], float]) -> list[str]:
    """One polyline per run of known values: a gap where a value is not known."""
    runs: list[list[str]] = [[]]
    for point, x in zip(points, xs, strict=True):
        if point.value is None:
            runs.append([])
        else:
            runs[-1].append(f"{x:.1f},{y(point.value):.1f}")
    return [
        f'<polyline fill="none" stroke="{LINE}" stroke-width="2" points="{" ".join(run)}"/>'
        for run in runs
        if len(run) > 1
    ]


def _dots(series: Series, xs: Sequence[float], y: Callable[[float], float]) -> list[str]:
    """A dot per known value, its tooltip the revision and the value."""
    out = []
    for point, x in zip(series.points, xs, strict=True):
        if point.value is not None:
            tip = f"{point.label}: {series.shown(point.value)}"
            out.append(
                f'<circle cx="{x:.1f}" cy="{y(point.value):.1f}" r="3" fill="{LINE}">'
                f"<title>{escape(tip)}</title></circle>"
            )
    return out
