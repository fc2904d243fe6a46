"""Estimating a snapshot from its own config.json, safetensors and GGUF headers, before storing."""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable, Mapping
from typing import Any

from hubwatch.caching import Memo, Slot
from hubwatch.estimator import estimate_json
from hubwatch.estimator.gguf import estimate_headers, with_gguf
from hubwatch.models import ContentSha, Estimate, ReadResult, ReadStatus, Snapshot
from hubwatch.models.gguf import is_gguf

CONFIG = "config.json"


def with_estimate(
    snapshot: Snapshot, load: Callable[[ContentSha], bytes], memo: Memo | None = None
) -> Snapshot:
    """`snapshot` with its estimate set: from its root config.json, with one estimate per GGUF
    model added; from the GGUF headers alone without a config; None with neither. `memo` keeps
    the estimates by their inputs, for the revisions after it (a fresh one if None)."""
    memo = memo if memo is not None else Memo()
    config = snapshot.contents.get(CONFIG)
    ggufs = tuple(entry.path for entry in snapshot.files if is_gguf(entry.path))
    if config is None and not ggufs:
        return snapshot
    headers = {
        path: data
        for path, read in snapshot.headers.items()
        if read.status is ReadStatus.STORED and (data := _bytes(read, load)) is not None
    }
    # a quantization beside the weights is not config.json's checkpoint
    safetensors = {path: data for path, data in headers.items() if not is_gguf(path)}
    found: Estimate | None = None
    if config is not None:
        raw = _bytes(config, load)
        if raw is None:
            reason = config.error or f"config.json was not read ({config.status.value})"
            found = Estimate(ok=False, error=f"cannot estimate: {reason}")
        else:
            found = _estimated(raw, safetensors, memo)
    if ggufs:
        gguf_headers = {path: data for path, data in headers.items() if is_gguf(path)}
        found = with_gguf(found, _gguf_estimated(ggufs, gguf_headers, memo))
    return dataclasses.replace(snapshot, estimate=found)


ESTIMATES: Slot[Estimate] = Slot("estimates", 32)
"""Estimates by the sha256 of their inputs: most revisions of a history (a card edit, a new
file) keep config.json and the headers of the one before, and so its estimate."""
GGUF_ESTIMATES: Slot[dict[str, dict[str, Any]]] = Slot("estimates.gguf", 32)
"""GGUF estimates by the sha256 of the GGUF paths and headers, likewise."""


def _digest(first: bytes, headers: Mapping[str, bytes]) -> str:
    digest = hashlib.sha256(first)
    for path in sorted(headers):
        digest.update(b"\0" + path.encode() + b"\0" + hashlib.sha256(headers[path]).digest())
    return digest.hexdigest()


def _estimated(raw: bytes, headers: dict[str, bytes], memo: Memo) -> Estimate:
    """`estimate_json(raw, headers)`, computed once per distinct config and headers."""
    key, estimates = _digest(raw, headers), memo[ESTIMATES]
    found = estimates.get(key)
    if found is None:
        found = estimate_json(raw, headers)
        estimates.put(key, found)
    return found


def _gguf_estimated(
    paths: tuple[str, ...], headers: dict[str, bytes], memo: Memo
) -> dict[str, dict[str, Any]]:
    """`estimate_headers(paths, headers)`, once per distinct set of GGUF files and headers."""
    # NOTE: the paths are part of the key: a split part without a header changes the result.
    key, estimates = _digest("\0".join(paths).encode(), headers), memo[GGUF_ESTIMATES]
    found = estimates.get(key)
    if found is None:
        found = estimate_headers(paths, headers)
        estimates.put(key, found)
    return found


def _bytes(read: ReadResult, load: Callable[[ContentSha], bytes]) -> bytes | None:
    if read.status not in (ReadStatus.STORED, ReadStatus.INVALID):
        return None
    if read.data is not None:
        return read.data
    return load(read.sha256) if read.sha256 else None
