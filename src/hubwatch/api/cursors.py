"""Opaque page cursors: the last key of a page, base64url-encoded, for `?cursor=` links."""

from __future__ import annotations

import base64
import binascii

MAX_KEY = 400
"""Longest key a cursor may carry (repo ids are at most 200 characters)."""


class BadCursor(ValueError):
    """A cursor this API never gave out."""


def encode_cursor(key: str) -> str:
    """The cursor of the page after `key`."""
    return base64.urlsafe_b64encode(key.encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> str:
    """The key `cursor` carries; BadCursor if it is not one `encode_cursor` gives."""
    try:
        key = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise BadCursor(f"not a cursor this API gave: {cursor[:40]!r}") from None
    # NOTE: PostgreSQL refuses NUL in text: a cursor carrying one would fail the query (500)
    if not key or "\x00" in key or len(key) > MAX_KEY or encode_cursor(key) != cursor:
        raise BadCursor(f"not a cursor this API gave: {cursor[:40]!r}")
    return key
