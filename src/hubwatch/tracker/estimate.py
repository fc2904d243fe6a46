"""Estimating a snapshot from its own config.json and safetensors headers, before it is stored."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from hubwatch.estimator import estimate_json
from hubwatch.models import ContentSha, Estimate, ReadResult, ReadStatus, Snapshot

CONFIG = "config.json"


def with_estimate(snapshot: Snapshot, load: Callable[[ContentSha], bytes]) -> Snapshot:
    """`snapshot` with its estimate set; None when the revision has no root config.json."""
    config = snapshot.contents.get(CONFIG)
    if config is None:
        return snapshot
    raw = _bytes(config, load)
    if raw is None:
        reason = config.error or f"config.json was not read ({config.status.value})"
        result = Estimate(ok=False, error=f"cannot estimate: {reason}")
        return dataclasses.replace(snapshot, estimate=result)
    headers = {
        path: data
        for path, read in snapshot.headers.items()
        if read.status is ReadStatus.STORED and (data := _bytes(read, load)) is not None
    }
    return dataclasses.replace(snapshot, estimate=estimate_json(raw, headers))


def _bytes(read: ReadResult, load: Callable[[ContentSha], bytes]) -> bytes | None:
    if read.status not in (ReadStatus.STORED, ReadStatus.INVALID):
        return None
    if read.data is not None:
        return read.data
    return load(read.sha256) if read.sha256 else None
