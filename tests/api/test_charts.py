"""The SVG charts and the series they draw: pure functions, no server."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from datetime import UTC, datetime

import pytest

from hubwatch.api.charts import BREAKING, Point, Series, describe, line_chart
from hubwatch.api.trends import METRICS, trend_rows, trend_series
from hubwatch.estimator import estimate_json
from hubwatch.models import CommitSha, TrendPoint
from tests.support.served import CONFIG

SVG = "{http://www.w3.org/2000/svg}"


def series(*values: float | None, breaking: tuple[int, ...] = ()) -> Series:
    points = tuple(Point(f"2024-01-{n + 1:02d}", v, n in breaking) for n, v in enumerate(values))
    return Series("chart-x", "Parameters <&>", "parameters", points)


def parsed(svg: str) -> ET.Element:
    return ET.fromstring(svg)  # our own output


@pytest.mark.parametrize(
    "values",
    [(1.0,), (5.0, 5.0, 5.0), (1.0, 2.0, 3.0), (None, None), (), (0.0, None, 7.0, 8.0)],
    ids=["one", "flat", "rising", "unknown", "empty", "gap"],
)
def test_chart_is_well_formed_svg_with_a_title_and_description(
    values: tuple[float | None, ...],
) -> None:
    root = parsed(line_chart(series(*values)))
    assert root.tag == f"{SVG}svg" and root.get("role") == "img"
    assert root.get("aria-labelledby") == "chart-x-title chart-x-desc"
    title = root.find(f"{SVG}title")
    desc = root.find(f"{SVG}desc")
    assert title is not None and title.text == "Parameters <&>"  # escaped in, read back whole
    assert desc is not None and desc.text


def test_chart_has_no_script_and_no_external_reference() -> None:
    svg = line_chart(series(1.0, 2.0, breaking=(1,)))
    assert "<script" not in svg and "href" not in svg and "url(" not in svg


def test_breaking_revisions_are_marked_and_only_those() -> None:
    svg = line_chart(series(1.0, 2.0, 3.0, 4.0, breaking=(1, 3)))
    marks = parsed(svg).findall(f"{SVG}g[@class='breaking']")
    assert [m.find(f"{SVG}title").text for m in marks] == [  # type: ignore[union-attr]
        "breaking change at 2024-01-02",
        "breaking change at 2024-01-04",
    ]
    assert all(m.get("stroke") == BREAKING for m in marks)


def test_an_unknown_value_breaks_the_line() -> None:
    root = parsed(line_chart(series(1.0, 2.0, None, 3.0, 4.0)))
    lines = root.findall(f"{SVG}polyline")
    assert [len(line.get("points", "").split()) for line in lines] == [2, 2]
    assert len(root.findall(f"{SVG}circle")) == 4


def test_axes_are_labelled_with_the_unit_and_the_values() -> None:
    svg = line_chart(series(1_000.0, 3_000.0))
    texts = [t.text for t in parsed(svg).iter(f"{SVG}text")]
    assert "parameters" in texts and "revision, oldest to newest" in texts
    assert "2024-01-01" in texts and "2024-01-02" in texts
    assert "2,000" in texts  # the middle of the range


def test_values_stay_inside_the_plot() -> None:
    svg = line_chart(series(0.0, 1e12, 5e11))
    ys = [float(y) for y in re.findall(r'cy="([\d.]+)"', svg)]
    assert all(10 < y < 160 for y in ys)


@pytest.mark.parametrize(
    ("values", "breaking", "said"),
    [
        ((), (), "Parameters <&>: no revisions."),
        ((1.0,), (), "Parameters <&> across 1 revision: 1 at 2024-01-01."),
        (
            (1.0, None, 3.0),
            (2,),
            "Parameters <&> across 3 revisions: 1 at 2024-01-01, 3 at 2024-01-03; "
            "breaking changes at 2024-01-03.",
        ),
        ((None,), (), "Parameters <&> across 1 revision: not known at any."),
    ],
)
def test_description_says_first_last_and_breaking(
    values: tuple[float | None, ...], breaking: tuple[int, ...], said: str
) -> None:
    assert describe(series(*values, breaking=breaking)) == said


def point(n: int, config: dict[str, object] | None, weights: int | None) -> TrendPoint:
    raw = json.dumps(config).encode() if config is not None else None
    return TrendPoint(
        CommitSha(f"{n:040x}"),
        datetime(2024, 1, n, tzinfo=UTC),
        n == 2,
        estimate_json(raw) if raw is not None else None,
        raw,
        weights,
    )


def test_series_read_every_metric_from_what_was_stored() -> None:
    qwen = json.loads(CONFIG)
    points = [point(1, qwen, 10**9), point(2, {**qwen, "vocab_size": 200_000}, 2 * 10**9)]
    drawn = {s.key: s for s in trend_series(points)}
    assert set(drawn) == {f"chart-{m.key}" for m in METRICS}
    assert [p.value for p in drawn["chart-vocab"].points] == [151_936, 200_000]
    assert [p.value for p in drawn["chart-weights"].points] == [10**9, 2 * 10**9]
    assert [p.value for p in drawn["chart-context"].points] == [32_768, 32_768]
    assert [p.breaking for p in drawn["chart-params"].points] == [False, True]
    assert drawn["chart-serving"].shown(1_997_125_568) == "2 GB"
    assert drawn["chart-params"].shown(494_032_768) == "494M"


def test_vocabulary_of_a_multimodal_config_is_its_text_models() -> None:
    nested = {"model_type": "llava", "text_config": {"vocab_size": 32_064}}
    (vocab,) = [s for s in trend_series([point(1, nested, None)]) if s.key == "chart-vocab"]
    assert vocab.points[0].value == 32_064


def test_a_metric_no_revision_knows_has_no_chart() -> None:
    assert trend_series([point(1, None, None)]) == []
    rows = trend_rows([point(1, None, 5), point(3, None, None)])
    assert [r.sha[-1] for r in rows] == ["3", "1"]  # the table: newest first
    assert rows[1].values[-1] == 5
