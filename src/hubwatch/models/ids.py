"""Identifiers shared by every layer: commit, content and advisory ids."""

from __future__ import annotations

from typing import NewType

CommitSha = NewType("CommitSha", str)
ContentSha = NewType("ContentSha", str)
"""sha256 hex of stored bytes: the key of the content-addressed blob table."""

AdvisoryId = NewType("AdvisoryId", str)
"""An OSV id (`PYSEC-2024-227`, `GHSA-…`, `x_HUBWATCH-2025-1`)."""
