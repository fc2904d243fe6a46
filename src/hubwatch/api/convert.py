"""Store values as API shapes (one place, so routes, pages and badges agree)."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

import orjson

from hubwatch.api.schemas import (
    AdvisoryMatchPublic,
    AdvisoryReportPublic,
    ChangePublic,
    DependencyPublic,
    RepoPublic,
    RevisionChangesPublic,
    RevisionPage,
    RevisionPublic,
    SeverityScorePublic,
)
from hubwatch.models import (
    AdvisoryReport,
    Change,
    CommitSha,
    Estimate,
    HistoryPage,
    HistoryText,
    RevisionChanges,
    RevisionText,
    StoredRevision,
    TrackedRepo,
    redact_url,
)

API = "/api/v1"


def advisory_url(advisory_id: str) -> str:
    return f"{API}/advisories/{quote(advisory_id, safe='')}.json"


def repo_public(repo: TrackedRepo) -> RepoPublic:
    return RepoPublic(
        repo_id=repo.ref.repo_id,
        source=repo.ref.source.value,
        url=redact_url(repo.ref.url),  # one stored before credentials were split off
        branch=repo.ref.branch,
        state=repo.state.value,
        head=repo.head,
        revisions=repo.revisions,
        added_at=repo.added_at,
        last_polled_at=repo.last_polled_at,
        last_error=repo.last_error,
        renamed_to=repo.renamed_to,
        failures=repo.failures,
        object_id=repo.identity.object_id if repo.identity else None,
        created_at=repo.identity.created_at if repo.identity else None,
        former_ids=list(repo.former_ids),
    )


def revision_public(revision: StoredRevision) -> RevisionPublic:
    return RevisionPublic.model_validate(revision)


def history_json(page: HistoryPage) -> bytes:
    """A history page as the JSON of its `RevisionPage`, written by orjson from the stored
    values: validating each revision with pydantic cost as much as reading it (issue 15)."""
    items = [
        {
            "sha": r.sha,
            "parents": r.parents,
            "date": r.date,
            "authors": r.authors,
            "title": r.title,
            "message": r.message,
            "changed": r.changed,
            "reachable": r.reachable,
            "card": r.card,
        }
        for r in page.revisions
    ]
    try:
        return orjson.dumps({"items": items, "next_cursor": page.next_cursor}, option=_UTC_Z)
    except orjson.JSONEncodeError:  # an integer beyond 64 bits in a card: pydantic writes it
        public = [revision_public(r) for r in page.revisions]
        return RevisionPage(items=public, next_cursor=page.next_cursor).model_dump_json().encode()


_UTC_Z = orjson.OPT_UTC_Z
"""UTC written as `Z`, as pydantic writes it."""


def history_text_json(page: HistoryText) -> bytes:
    """`history_json` of a page read as text: the stored JSON columns spliced in as they are
    (orjson fragments), not decoded and encoded again (issue 15). A page where one might hold
    what json.dumps writes but JSON has not (NaN, Infinity) goes the decoding way."""
    items = []
    for r in page.revisions:
        if not _strict(r.parents, r.authors, r.changed, r.card or ""):
            return history_json(_decoded(page))
        items.append(
            {
                "sha": r.sha,
                "parents": orjson.Fragment(r.parents),
                "date": r.date,
                "authors": orjson.Fragment(r.authors),
                "title": r.title,
                "message": r.message,
                "changed": orjson.Fragment(r.changed),
                "reachable": r.reachable,
                "card": None if r.card is None else orjson.Fragment(r.card),
            }
        )
    try:
        return orjson.dumps({"items": items, "next_cursor": page.next_cursor}, option=_UTC_Z)
    except orjson.JSONEncodeError:  # a string orjson refuses (a lone surrogate): pydantic's way
        return history_json(_decoded(page))


def _strict(*texts: str) -> bool:
    """No NaN or Infinity (json.dumps writes them bare); a string holding the word is taken
    the decoding way too, which is only slower."""
    return not any("NaN" in text or "Infinity" in text for text in texts)


def _decoded(page: HistoryText) -> HistoryPage:
    return HistoryPage(tuple(_revision(r) for r in page.revisions), page.next_cursor)


def _revision(r: RevisionText) -> StoredRevision:
    """json reads exactly what json.dumps wrote (NaN, integers beyond 64 bits)."""
    return StoredRevision(
        repo_id="",  # not part of a page's JSON
        sha=CommitSha(r.sha),
        parents=tuple(json.loads(r.parents)),
        date=r.date,
        authors=tuple(json.loads(r.authors)),
        title=r.title,
        message=r.message,
        changed=tuple(json.loads(r.changed)),
        reachable=r.reachable,
        card=None if r.card is None else json.loads(r.card),
    )


def estimate_public(estimate: Estimate | None) -> dict[str, Any] | None:
    """The estimate as stored (its JSON); None without a config.json or GGUF files."""
    return estimate.to_json() if estimate is not None else None


def change_public(change: Change) -> ChangePublic:
    return ChangePublic.model_validate(change)


def revision_changes_public(recorded: RevisionChanges) -> RevisionChangesPublic:
    revision = recorded.revision
    return RevisionChangesPublic(
        sha=revision.sha,
        date=revision.date,
        title=revision.title,
        base=recorded.base,
        changes=[change_public(c) for c in recorded.changes],
    )


def report_public(report: AdvisoryReport) -> AdvisoryReportPublic:
    return AdvisoryReportPublic(
        dependencies=[DependencyPublic.model_validate(d) for d in report.dependencies],
        matches=[
            AdvisoryMatchPublic(
                advisory_id=m.advisory_id,
                aliases=list(m.aliases),
                summary=m.summary,
                severity=[SeverityScorePublic.model_validate(s) for s in m.severity],
                fixed=list(m.fixed),
                package=m.package,
                version=m.version,
                status=m.status.value,
                reason=m.reason,
                modified=m.modified,
                url=advisory_url(m.advisory_id),
            )
            for m in report.matches
        ],
        checked_at=report.checked_at,
        service=report.service,
        error=report.error,
        status=report.status.value,
    )
