"""Atom feeds (RFC 4287) of recorded changes: per repo, per org, and for everything."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from datetime import UTC, datetime

from hubwatch.models import FeedItem, Severity
from hubwatch.models.timestamps import rfc3339

ATOM = "http://www.w3.org/2005/Atom"
# Characters XML 1.0 cannot hold at all; upstream text may contain them.
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _text(value: str) -> str:
    return _NOT_XML.sub("\ufffd", value)


def _add(parent: ET.Element, tag: str, text: str | None = None, **attrs: str) -> ET.Element:
    element = ET.SubElement(parent, f"{{{ATOM}}}{tag}", attrs)
    if text is not None:
        element.text = _text(text)
    return element


def atom_feed(
    items: Sequence[FeedItem], *, title: str, feed_url: str, site_url: str, feed_id: str
) -> bytes:
    """An Atom document with one entry per revision: its changes, most severe first."""
    ET.register_namespace("", ATOM)
    feed = ET.Element(f"{{{ATOM}}}feed")
    _add(feed, "id", feed_id)
    _add(feed, "title", title)
    updated = max((i.recorded_at for i in items), default=datetime(2000, 1, 1, tzinfo=UTC))
    _add(feed, "updated", rfc3339(updated))
    _add(feed, "link", rel="self", href=feed_url)
    _add(feed, "link", rel="alternate", href=site_url)
    author = _add(feed, "author")
    _add(author, "name", "hubwatch")
    _add(feed, "generator", "hubwatch")
    for item in items:
        revision = item.changes.revision
        changes = sorted(item.changes.changes, key=lambda c: -c.severity.rank)
        top = changes[0].severity if changes else Severity.INFO
        entry = _add(feed, "entry")
        _add(entry, "id", f"{feed_id.split(':feed:')[0]}:revision:{item.repo_id}:{revision.sha}")
        _add(
            entry,
            "title",
            f"{item.repo_id} {revision.sha[:12]}: {len(changes)} change(s), {top.value}",
        )
        _add(entry, "updated", rfc3339(item.recorded_at))
        _add(entry, "published", rfc3339(revision.date))
        _add(
            entry,
            "link",
            rel="alternate",
            href=f"{site_url.rstrip('/')}/repos/{item.repo_id}/revisions/{revision.sha}",
        )
        _add(entry, "category", term=top.value)
        lines = [f"{revision.title}", ""]
        lines += [f"[{c.severity.value}] {c.kind}: {c.summary}" for c in changes]
        _add(entry, "summary", "\n".join(lines)[:20_000], type="text")
    document: bytes = ET.tostring(feed, encoding="utf-8", xml_declaration=True)
    return document
