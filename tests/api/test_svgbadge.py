"""The SVG badge adapter: what it draws reads back as the text it was given, whatever the text."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hubwatch.api.svgbadge import badge_svg, svg_color
from tests.api.test_badges import drawn_texts


@pytest.mark.parametrize(
    "message",
    [
        '<script>alert("x")</script>',
        "a & b > c 'd'",
        "{{ color }} {{ badge width }}",  # anybadge's own placeholders, left as they are
        "1e5",  # a number to anybadge, text to a badge
        "Q4_K_M – 16.1GB · 1d ago",
        "]]> <!-- -->",
    ],
)
def test_odd_characters_are_escaped_and_read_back(message: str) -> None:
    drawn = drawn_texts(badge_svg("org/x<y>", message, "red"))
    assert drawn["texts"] == ["org/x<y>", message]
    assert drawn["title"] == drawn["aria-label"] == f"org/x<y>: {message}"


def test_characters_xml_cannot_hold_are_replaced() -> None:
    drawn = drawn_texts(badge_svg("label", "a\x00b\x1bc\ufffe", "blue"))
    assert drawn["texts"] == ["label", "a\ufffdb\ufffdc\ufffd"]


# Controls aside (XML reads a "\r" back as "\n"), surrogates and unassigned code points.
TEXT = st.text(min_size=1, alphabet=st.characters(exclude_categories=["Cc", "Cs", "Cn"]))


@given(label=TEXT, message=TEXT)
def test_any_text_reads_back(label: str, message: str) -> None:
    drawn = drawn_texts(badge_svg(label, message, "orange"))
    assert drawn["texts"] == [label, message]
    assert drawn["title"] == f"{label}: {message}"


@pytest.mark.parametrize(
    ("color", "fill"),
    [
        ("brightgreen", "#4c1"),
        ("lightgrey", "#9f9f9f"),
        ("critical", "#e05d44"),
        ("ABC", "#abc"),
        ("#FE7D37", "#fe7d37"),
        ("not-a-colour", "#9f9f9f"),
    ],
)
def test_shields_colours_are_drawn_as_shields_draws_them(color: str, fill: str) -> None:
    assert svg_color(color) == fill
    assert fill in drawn_texts(badge_svg("l", "m", color))["fills"]
