"""The filter of the repo page and the feeds, read from the query string (`?severity=breaking`,
`?kind=chat_template`, `?since=2024-01-01`), so that a filtered view is a link to share."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime
from typing import Annotated
from urllib.parse import urlencode

from fastapi import Depends, HTTPException, Query

from hubwatch.models import ChangeFilter, Severity

_KIND = re.compile(r"[a-z0-9_]+(\.[a-z0-9_]+)*\.?")
"""How change kinds are spelled (`chat_template.rendered`); a trailing `.` (the API's prefix
form, `chat_template.`) is taken too."""


def parse_filter(severity: str | None, kind: str | None, since: str | None) -> ChangeFilter:
    """The filter the three fields give; an empty field (a form's "any") is no filter.

    ValueError, with the reason, for a value that is none of the allowed ones."""
    chosen = None
    if severity:
        try:
            chosen = Severity(severity)
        except ValueError:
            allowed = ", ".join(s.value for s in Severity)
            raise ValueError(f"severity must be one of {allowed}, not {severity!r}") from None
    if kind and not _KIND.fullmatch(kind):
        raise ValueError(f"kind must look like chat_template or card.license, not {kind!r}")
    start = None
    if since:
        try:
            day = date.fromisoformat(since)
        except ValueError:
            raise ValueError(f"since must be a date (2024-01-31), not {since!r}") from None
        start = datetime(day.year, day.month, day.day, tzinfo=UTC)
    return ChangeFilter(chosen, kind.rstrip(".") if kind else None, start)


def query_string(where: ChangeFilter, **more: int) -> str:
    """The query string that gives `where` (and `more`, like the page) back: for links."""
    fields: dict[str, str | int] = {}
    if where.severity is not None:
        fields["severity"] = where.severity.value
    if where.kind is not None:
        fields["kind"] = where.kind
    if where.since is not None:
        fields["since"] = where.since.date().isoformat()
    fields.update(more)
    return f"?{urlencode(fields)}" if fields else ""


async def change_filter(
    severity: Annotated[str | None, Query(max_length=16, description="breaking, security…")] = None,
    kind: Annotated[str | None, Query(max_length=64, description="a kind or its prefix")] = None,
    since: Annotated[str | None, Query(max_length=10, description="YYYY-MM-DD")] = None,
) -> ChangeFilter:
    """The filter of the request's query string; 422 with the reason for a bad value."""
    try:
        return parse_filter(severity, kind, since)
    except ValueError as exc:
        raise HTTPException(422, str(exc)) from None


FilterDep = Annotated[ChangeFilter, Depends(change_filter)]
