"""Model pins in a codebase: find them (scan/), say what each misses (check), move them (bump).

Floor: beside tracker and notify. It reads the store through its interfaces; tracking a pinned
repo is a callable the CLI hands in from the runtime, so nothing here builds a source.
"""

from __future__ import annotations

from hubwatch.pins.model import Pin, RefKind, classify_ref, looks_like_repo

__all__ = ["Pin", "RefKind", "classify_ref", "looks_like_repo"]
