"""A badge drawn as SVG in shields.io's flat style: the one module that imports anybadge."""

from __future__ import annotations

import html
import re

from anybadge.badge import Badge

# https://github.com/badges/shields badge-maker/lib/color.js: the named colours and their aliases,
# so that a badge looks as it does through shields.io's endpoint badge.
SHIELDS_COLORS = {
    "brightgreen": "#4c1",
    "green": "#97ca00",
    "yellow": "#dfb317",
    "yellowgreen": "#a4a61d",
    "orange": "#fe7d37",
    "red": "#e05d44",
    "blue": "#007ec6",
    "grey": "#555",
    "lightgrey": "#9f9f9f",
    "gray": "#555",
    "lightgray": "#9f9f9f",
    "critical": "#e05d44",
    "important": "#fe7d37",
    "success": "#4c1",
    "informational": "#007ec6",
    "inactive": "#9f9f9f",
}
_HEX = re.compile(r"(?:[0-9a-fA-F]{3}){1,2}")
# Characters XML 1.0 cannot hold, even escaped (controls, lone surrogates, U+FFFE/U+FFFF).
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")

# shields.io's flat badge, with anybadge's placeholders; the accessible name is the title and the
# aria-label, so the drawn texts and their shadows are hidden from screen readers. Fixed ids: the
# same badge is the same bytes (its ETag), and each badge is a document of its own.
_TEMPLATE = """\
<svg xmlns="http://www.w3.org/2000/svg" width="{{ badge width }}" height="20" role="img" \
aria-label="{{ label }}: {{ value }}">
  <title>{{ label }}: {{ value }}</title>
  <linearGradient id="s" x2="0" y2="100%">
    <stop offset="0" stop-color="#bbb" stop-opacity=".1"/>
    <stop offset="1" stop-opacity=".1"/>
  </linearGradient>
  <clipPath id="r"><rect width="{{ badge width }}" height="20" rx="3" fill="#fff"/></clipPath>
  <g clip-path="url(#r)">
    <rect width="{{ color split x }}" height="20" fill="#555"/>
    <rect x="{{ color split x }}" width="{{ value width }}" height="20" fill="{{ color }}"/>
    <rect width="{{ badge width }}" height="20" fill="url(#s)"/>
  </g>
  <g fill="#fff" text-anchor="middle" font-family="{{ font name }}" font-size="{{ font size }}" \
aria-hidden="true">
    <text x="{{ label anchor shadow }}" y="15" fill="#010101" fill-opacity=".3">{{ label }}</text>
    <text x="{{ label anchor }}" y="14">{{ label }}</text>
    <text x="{{ value anchor shadow }}" y="15" fill="#010101" fill-opacity=".3">{{ value }}</text>
    <text x="{{ value anchor }}" y="14">{{ value }}</text>
  </g>
</svg>
"""


def _xml_text(text: str) -> str:
    """`text` safe in an XML element or a quoted attribute, and inert to anybadge's placeholders.

    NOTE: anybadge fills its template with str.replace, the label and value first: a `{` left as
    is would let a repo's "{{ color }}" be replaced inside the message.
    """
    return html.escape(_NOT_XML.sub("\ufffd", text), quote=True).replace("{", "&#123;")


class _TextBadge(Badge):
    """anybadge's badge, its message always text and its texts escaped as `_xml_text` says."""

    @property
    def value_type(self) -> type:
        return str  # anybadge reads "1e5" as a float and would draw "100000.0"

    @property
    def encoded_label(self) -> str:
        return _xml_text(str(self.label))

    @property
    def encoded_value(self) -> str:
        return _xml_text(str(self.value_text))


def svg_color(color: str) -> str:
    """The fill of a shields.io colour: a named one, its alias, or hex digits (else lightgrey)."""
    if color in SHIELDS_COLORS:
        return SHIELDS_COLORS[color]
    digits = color.removeprefix("#")
    if _HEX.fullmatch(digits):
        return f"#{digits.lower()}"
    return SHIELDS_COLORS["lightgrey"]


def badge_svg(label: str, message: str, color: str) -> str:
    """The SVG of a badge: `label` on grey, `message` on `color` (a shields.io colour)."""
    drawn = _TextBadge(label, message, default_color=svg_color(color), template=_TEMPLATE)
    return drawn.badge_svg_text
