"""Estimating a snapshot from its own config.json and safetensors headers, before it is stored."""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable

from hubwatch.caching import BoundedCache
from hubwatch.estimator import estimate_json
from hubwatch.models import ContentSha, Estimate, ReadResult, ReadStatus, Snapshot
from hubwatch.models.gguf import is_gguf

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
        if read.status is ReadStatus.STORED
        and not is_gguf(path)  # a quantization beside the weights: not config.json's checkpoint
        and (data := _bytes(read, load)) is not None
    }
    return dataclasses.replace(snapshot, estimate=_estimated(raw, headers))


_ESTIMATES: BoundedCache[Estimate] = BoundedCache(32)
"""Estimates by the sha256 of their inputs: most revisions of a history (a card edit, a new
file) keep config.json and the headers of the one before, and so its estimate."""


def _estimated(raw: bytes, headers: dict[str, bytes]) -> Estimate:
    """`estimate_json(raw, headers)`, computed once per distinct config and headers."""
    digest = hashlib.sha256(raw)
    for path in sorted(headers):
        digest.update(b"\0" + path.encode() + b"\0" + hashlib.sha256(headers[path]).digest())
    key = digest.hexdigest()
    found = _ESTIMATES.get(key)
    if found is None:
        found = estimate_json(raw, headers)
        _ESTIMATES.put(key, found)
    return found


def _bytes(read: ReadResult, load: Callable[[ContentSha], bytes]) -> bytes | None:
    if read.status not in (ReadStatus.STORED, ReadStatus.INVALID):
        return None
    if read.data is not None:
        return read.data
    return load(read.sha256) if read.sha256 else None
