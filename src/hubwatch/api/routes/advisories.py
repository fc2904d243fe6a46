"""Advisories as raw OSV JSON at stable URLs: our own records and the matched OSV.dev ones."""

from __future__ import annotations

from typing import Annotated, Any, Protocol

from fastapi import APIRouter, Depends, HTTPException, Path

from hubwatch.advisories.attach import StoreChangeFeed
from hubwatch.advisories.publish import SCHEMA_VERSION, publish
from hubwatch.api.convert import advisory_url
from hubwatch.api.deps import SettingsDep, StoreDep, require_reader
from hubwatch.api.schemas import AdvisoryIndexEntry
from hubwatch.models import AdvisoryMatch
from hubwatch.store.advisories import AdvisoryStore
from hubwatch.store.browse import BrowseStore
from hubwatch.store.repos import RepoStore, each_repo


class _MatchReads(RepoStore, BrowseStore, AdvisoryStore, Protocol):
    """What the advisory listing reads: every repo's latest revision and its matches."""


router = APIRouter(prefix="/api/v1", tags=["advisories"], dependencies=[Depends(require_reader)])


def _matched(store: _MatchReads) -> dict[str, AdvisoryMatch]:
    """The advisories matched to each repo's latest revision, by id."""
    found: dict[str, AdvisoryMatch] = {}
    for tracked in each_repo(store):  # a page at a time: the repos need not fit at once
        latest = store.latest_revision(tracked.ref.repo_id)
        if latest is None:
            continue
        for match in store.advisory_report(tracked.ref.repo_id, latest.sha).matches:
            found.setdefault(match.advisory_id, match)
    return found


def _osv(match: AdvisoryMatch) -> dict[str, Any]:
    """An OSV record rebuilt from what the match stored (the fields hubwatch keeps)."""
    events: list[dict[str, str]] = [{"introduced": "0"}]
    events += [{"fixed": v} for v in match.fixed]
    return {
        "schema_version": SCHEMA_VERSION,
        "id": match.advisory_id,
        "modified": match.modified,
        "aliases": list(match.aliases),
        "summary": match.summary,
        "severity": [{"type": s.type, "score": s.vector} for s in match.severity],
        "affected": [
            {
                "package": {"ecosystem": "PyPI", "name": match.package},
                "ranges": [{"type": "ECOSYSTEM", "events": events}],
            }
        ],
        "database_specific": {
            "hubwatch": "as matched and stored; the upstream record may say more"
        },
    }


@router.get("/advisories")
def advisory_index(store: StoreDep, settings: SettingsDep) -> list[AdvisoryIndexEntry]:
    """Every advisory served here: ours (each published change), then matched OSV.dev ones."""
    own = publish(StoreChangeFeed(store, settings.hf_endpoint).changes(), store)
    entries = [
        AdvisoryIndexEntry(
            id=r["id"],
            source="hubwatch",
            summary=r["summary"],
            modified=r["modified"],
            url=advisory_url(r["id"]),
        )
        for r in own
    ]
    entries += [
        AdvisoryIndexEntry(
            id=m.advisory_id,
            source="osv",
            summary=m.summary,
            modified=m.modified,
            url=advisory_url(m.advisory_id),
        )
        for m in _matched(store).values()
    ]
    return entries


@router.get("/advisories/{advisory_id}.json")
def advisory_record(
    advisory_id: Annotated[str, Path(max_length=128)], store: StoreDep, settings: SettingsDep
) -> dict[str, Any]:
    """One advisory as raw OSV JSON."""
    for record in publish(StoreChangeFeed(store, settings.hf_endpoint).changes(), store):
        if record["id"] == advisory_id:
            return record
    match = _matched(store).get(advisory_id)
    if match is None:
        raise HTTPException(404, f"no advisory {advisory_id[:128]}")
    return _osv(match)
