"""Our clock, and how timestamps are written: RFC 3339 in UTC for machines, to the minute for
people."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import overload


def rfc3339(value: datetime) -> str:
    """RFC 3339 in UTC with a `Z` (what OSV's schema and Atom both accept)."""
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def to_minute(value: datetime | None) -> str:
    """A timestamp as tables and pages show it; empty for none."""
    return value.strftime("%Y-%m-%d %H:%M") if value else ""


@overload
def utc(value: datetime) -> datetime: ...


@overload
def utc(value: datetime | None) -> datetime | None: ...


def utc(value: datetime | None) -> datetime | None:
    """A stored timestamp as UTC-aware: SQLite hands back naive ones; everything we store is UTC."""
    if value is None:
        return None
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def now() -> datetime:
    """The time events and polls are stamped with: our clock, never an upstream one."""
    return datetime.now(UTC)
