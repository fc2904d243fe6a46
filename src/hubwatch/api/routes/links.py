"""Links: a tracked repo's refs, the repos whose code it loads, and the changes reported on it
from either (open pull requests, code dependencies)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query

from hubwatch.api.convert import change_public
from hubwatch.api.deps import StoreDep, repo_path, require_reader
from hubwatch.api.schemas import CodeLinkPublic, GitRefPublic, LinkedChangesPublic
from hubwatch.models import Severity

router = APIRouter(prefix="/api/v1", tags=["repos"], dependencies=[Depends(require_reader)])


@router.get("/repos/{org}/{name}/refs")
def list_refs(org: str, name: str, store: StoreDep) -> list[GitRefPublic]:
    """The repo's refs as last listed (only of repos tracked with `--refs prs`), by ref."""
    return [
        GitRefPublic(kind=r.kind.value, ref=r.ref, target=r.target, pr=r.pr_number)
        for r in store.refs(repo_path(org, name))
    ]


@router.get("/repos/{org}/{name}/dependencies")
def list_dependencies(org: str, name: str, store: StoreDep) -> list[CodeLinkPublic]:
    """The repos whose code the model loads (external auto_map targets, kernel repos)."""
    return [
        CodeLinkPublic(target=link.target, kind=link.kind.value, via=link.via)
        for link in store.links_of(repo_path(org, name))
    ]


@router.get("/repos/{org}/{name}/linked-changes")
def list_linked_changes(
    org: str,
    name: str,
    store: StoreDep,
    severity: Annotated[Severity | None, Query(description="Minimum severity")] = None,
) -> list[LinkedChangesPublic]:
    """Changes from open pull requests and code dependencies, oldest first: apart from the
    revisions' own (`/changes`)."""
    return [
        LinkedChangesPublic(
            origin=lc.origin.value,
            source=lc.source,
            label=lc.label,
            head=lc.head,
            base=lc.base,
            observed_at=lc.observed_at,
            changes=[change_public(c) for c in lc.changes],
        )
        for lc in store.linked_changes(repo_path(org, name), min_severity=severity)
    ]
