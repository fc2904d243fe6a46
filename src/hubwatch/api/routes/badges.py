"""Badges as shields.io endpoint JSON and as SVG; a badge never errors (an unknown repo is a
grey error badge)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, Literal, Protocol, get_args

import structlog
from fastapi import APIRouter, Depends, Query, Response

from hubwatch.api.deps import StoreDep, browse, require_reader
from hubwatch.api.routes.lineage import stale_badge
from hubwatch.api.schemas import Badge
from hubwatch.api.svgbadge import badge_svg
from hubwatch.errors import (
    HubwatchError,
    InvalidRepoId,
    NotTracked,
    StoreUnavailable,
    UnknownRevision,
)
from hubwatch.models import CommitSha, RepoState, validate_repo_id
from hubwatch.store.advisories import AdvisoryStore
from hubwatch.store.browse import BrowseStore
from hubwatch.store.estimates import EstimateStore
from hubwatch.store.lineage import LineageStore
from hubwatch.store.repos import RevisionStore


class _BadgeReads(BrowseStore, RevisionStore, EstimateStore, AdvisoryStore, LineageStore, Protocol):
    """What a badge reads: counts, the latest or pinned revision, its estimate, advisories and
    lineage."""


log = structlog.get_logger(__name__)
router = APIRouter(prefix="/api/v1", tags=["badges"], dependencies=[Depends(require_reader)])

BadgeKind = Literal[
    "latest", "status", "changes", "advisories", "params", "memory", "breaking", "stale"
]


def error_badge(label: str, message: str) -> Badge:
    return Badge(label=label, message=message, color="lightgrey", isError=True)


UNAVAILABLE = error_badge("hubwatch", "unavailable")
"""The badge while the database is unavailable (the store logs the outage once)."""


def _age(when: datetime, now: datetime) -> str:
    seconds = max((now - when).total_seconds(), 0)
    for unit, size in (("y", 365 * 86400), ("mo", 30 * 86400), ("d", 86400), ("h", 3600)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit} ago"
    return "just now"


def _si(value: float, unit: str = "") -> str:
    for suffix, size in (("T", 1e12), ("B" if not unit else "G", 1e9), ("M", 1e6), ("K", 1e3)):
        if value >= size:
            return f"{value / size:.1f}{suffix}{unit}".replace(".0", "")
    return f"{value:.0f}{unit}"


def _cvss_rating(score: float) -> str:
    if score >= 9:
        return "critical"
    if score >= 7:
        return "high"
    if score >= 4:
        return "medium"
    return "low"


_RATING_COLOR = {"critical": "red", "high": "orange", "medium": "yellow", "low": "yellowgreen"}
_STATE_COLOR = {
    RepoState.ACTIVE: "brightgreen",
    RepoState.DEGRADED: "orange",
    RepoState.GATED: "yellow",
    RepoState.DISABLED: "red",
    RepoState.DELETED: "red",
    RepoState.UNAVAILABLE: "red",  # deleted, or private to us: either way unreadable
    RepoState.AUTH_FAILED: "lightgrey",  # the token was refused: unknown, not failing
}


def badge(
    store: _BadgeReads,
    repo_id: str,
    kind: str,
    pinned: str | None = None,
    now: datetime | None = None,
) -> Badge:
    """The badge; every failure becomes an error badge, never an exception."""
    now = now or datetime.now(UTC)
    if kind not in get_args(BadgeKind):
        return error_badge("hubwatch", "unknown badge")
    try:
        validate_repo_id(repo_id)
        if kind == "stale":  # a derivative against its base (issue 17)
            return stale_badge(store, repo_id)
        return _badge(store, repo_id, kind, pinned, now)
    except InvalidRepoId:
        return error_badge("hubwatch", "invalid repo id")
    except NotTracked:
        return error_badge("hubwatch", "not tracked")
    except UnknownRevision:
        return error_badge("hubwatch", "unknown revision")
    except StoreUnavailable:
        return UNAVAILABLE
    except Exception:  # a badge never errors: a README shows it whatever happens
        log.exception("badge_failed", repo=repo_id, kind=kind)
        return error_badge("hubwatch", "unavailable")


def _badge(store: _BadgeReads, repo_id: str, kind: str, pinned: str | None, now: datetime) -> Badge:
    if kind == "status":  # whether hubwatch can follow the repo: active, degraded, gated…
        state = store.repo_state(repo_id)
        return Badge(label="hubwatch", message=state.value, color=_STATE_COLOR[state])
    if kind == "breaking":
        _, count = store.count_changes(repo_id, since=now - timedelta(days=30))
        return Badge(
            label="breaking changes (30d)",
            message=str(count),
            color="brightgreen" if count == 0 else "red",
        )
    if kind == "changes":
        if not pinned:
            return error_badge("changes", "pass ?pinned=SHA")
        pinned = pinned.strip().lower()
        full = len(pinned) == 40 and all(c in "0123456789abcdef" for c in pinned)
        # A full sha is looked up exactly by the counts; an abbreviated one needs a prefix search.
        sha = CommitSha(pinned) if full else store.revision(repo_id, pinned).sha
        count, breaking = store.count_changes(repo_id, after=sha)
        return Badge(
            label=f"changes since {sha[:7]}",
            message=str(count),
            color="brightgreen" if count == 0 else "red" if breaking else "orange",
        )
    latest = store.latest_revision(repo_id)  # the remaining kinds describe it
    if latest is None:
        return error_badge("hubwatch", "no revisions yet")
    if kind == "latest":
        age = now - latest.date
        color = "brightgreen" if age < timedelta(days=30) else "yellow"
        if age > timedelta(days=180):
            color = "lightgrey"
        return Badge(
            label="revision", message=f"{latest.sha[:7]} · {_age(latest.date, now)}", color=color
        )
    if kind == "advisories":
        report = store.advisory_report(repo_id, CommitSha(latest.sha))
        if report.checked_at is None or report.error:  # a failed check is never "none"
            message = "unknown" if report.error else "not checked"
            return Badge(label="advisories", message=message, color="lightgrey")
        if not report.matches:
            return Badge(label="advisories", message="none", color="brightgreen")
        scores = [s.score for m in report.matches for s in m.severity if s.score is not None]
        if not scores:
            return Badge(label="advisories", message=f"{len(report.matches)} open", color="orange")
        rating = _cvss_rating(max(scores))
        return Badge(
            label="advisories",
            message=f"{len(report.matches)} open, {rating}",
            color=_RATING_COLOR[rating],
        )
    return _estimate_badge(store, repo_id, CommitSha(latest.sha), kind)


def _estimate_badge(store: _BadgeReads, repo_id: str, sha: CommitSha, kind: str) -> Badge:
    """`params` or `memory` of the latest revision's estimate."""
    estimate = store.estimate(repo_id, sha)
    if estimate is None or not estimate.ok:
        return error_badge("parameters" if kind == "params" else "serving memory", "unknown")
    if kind == "params":
        total = _number(estimate.params, "total")
        return Badge(label="parameters", message=_si(total), color="blue")
    if not estimate.serving and estimate.gguf:  # GGUF files alone: no bf16 serving to show
        return _gguf_weights(estimate.gguf)
    total = _number(estimate.serving, "total")
    return Badge(label="serving memory (bf16)", message=_si(total, "B"), color="blue")


def _gguf_weights(models: dict[str, dict[str, Any]]) -> Badge:
    """The smallest and the largest quantization's weights: what a local runtime loads."""
    sizes = sorted(
        (_number(model.get("weights"), "bytes"), str(model.get("quantization") or name))
        for name, model in models.items()
        if model.get("ok")
    )
    if not sizes:
        return error_badge("GGUF weights", "unknown")
    (low, low_q), (high, high_q) = sizes[0], sizes[-1]
    message = f"{_si(low, 'B')} ({low_q[:24]})"
    if len(sizes) > 1:
        message += f" – {_si(high, 'B')} ({high_q[:24]})"
    return Badge(label="GGUF weights", message=message, color="blue")


def _number(data: Any, key: str) -> float:
    value = data.get(key) if isinstance(data, dict) else None
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    raise HubwatchError("estimate lacks numbers")


_PINNED = Query(description="For `changes`: the sha you pin")


async def _found(store: StoreDep, org: str, name: str, kind: str, pinned: str | None) -> Badge:
    # NOTE: async, the store read in one call (on the loop where its reads are local:
    # deps.browse) and the body serialized by the caller: a sync endpoint pays a hop for the call
    # and another for validating what it returns (issue 15).
    found = await browse(store, badge, store, f"{org}/{name}", kind, pinned)
    if found is UNAVAILABLE:
        store.outage.refused()
    return found


def _cache(found: Badge) -> dict[str, str]:
    """How long a client may keep a badge: as long as shields.io keeps the JSON one."""
    return {"Cache-Control": f"max-age={found.cacheSeconds}"}


# NOTE: declared before the JSON route, whose {kind} would match "breaking.svg" too.
@router.get(
    "/badges/{org}/{name}/{kind}.svg",
    response_class=Response,
    responses={200: {"content": {"image/svg+xml": {}}, "description": "The badge as SVG."}},
)
async def get_badge_svg(
    org: str,
    name: str,
    kind: str,
    store: StoreDep,
    pinned: Annotated[str | None, _PINNED] = None,
) -> Response:
    """The same badge drawn as SVG by hubwatch itself, for where shields.io cannot reach it: use
    as `![breaking](https://hubwatch.example/api/v1/badges/ORG/NAME/breaking.svg)`."""
    found = await _found(store, org, name, kind, pinned)
    drawn = badge_svg(found.label, found.message, found.color)
    # An SVG opened on its own is a document: nothing in it may run or load, whatever slips in.
    headers = {**_cache(found), "Content-Security-Policy": "default-src 'none'"}
    return Response(drawn, media_type="image/svg+xml", headers=headers)


@router.get("/badges/{org}/{name}/{kind}", response_model=Badge, response_model_exclude_none=True)
async def get_badge(
    org: str,
    name: str,
    kind: str,
    store: StoreDep,
    pinned: Annotated[str | None, _PINNED] = None,
) -> Response:
    """A shields.io endpoint badge: latest, status (active, degraded…), changes (?pinned=),
    advisories, params, memory, breaking, stale (a derivative against its base). Use with
    https://img.shields.io/endpoint?url=…"""
    found = await _found(store, org, name, kind, pinned)
    body = found.model_dump_json(exclude_none=True)
    return Response(body, media_type="application/json", headers=_cache(found))
