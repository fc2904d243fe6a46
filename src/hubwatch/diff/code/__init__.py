"""Custom code read as Python: what each change to a repo's `*.py` files does to a
`trust_remote_code` load (breaks it, reaches something risky, runs differently, or not)."""

from __future__ import annotations

from hubwatch.diff.code.differ import diff_code

__all__ = ["diff_code"]
