"""The Hub's answers read into hubwatch's types: commit listings, model listings, derivatives.

With hub.py and hubhttp.py, the only modules that import huggingface_hub (its types stay here).
"""

from __future__ import annotations

import re
from datetime import UTC
from typing import Any

from huggingface_hub.hf_api import ModelInfo, RepoFile
from huggingface_hub.utils._datetime import parse_datetime

from hubwatch.errors import InvalidRepoId
from hubwatch.models import (
    CommitInfo,
    CommitSha,
    FileEntry,
    RepoIdentity,
    RepoStatus,
    validate_repo_id,
)
from hubwatch.models.lineage import Derivative, Relation
from hubwatch.sources.base import FileChange, Modified

_OBJECT_ID = re.compile(r"[0-9a-f]{24}")
"""The Hub's object ids are MongoDB ObjectIds: 24 hex digits (`_id` of a model info)."""
_RELATIONS = {r.value for r in Relation if r is not Relation.UNKNOWN}
_XET_HASH = re.compile(r"[0-9a-f]{64}")


def file_entries(page: list[Any]) -> list[FileEntry]:
    """The files of one page of `/api/models/{id}/tree/{sha}?recursive=true` (folders left out)."""
    entries = []
    for item in page:
        if not isinstance(item, dict) or item.get("type") != "file":
            continue
        # huggingface_hub leaves RepoFile.__init__ unannotated
        file = RepoFile(**item)  # type: ignore[no-untyped-call]
        sha256 = file.lfs.sha256 if file.lfs else None
        # NOTE: the tree listing names a Xet-stored file's hash as `xetHash` (the real trace,
        # tests/data/hub-traces/ref-download-plain.json exchange 3); anything else is no hash
        xet = item.get("xetHash")
        xet_hash = xet if isinstance(xet, str) and _XET_HASH.fullmatch(xet) else None
        entries.append(
            FileEntry(file.path, int(file.size), file.blob_id, sha256, xet_hash=xet_hash)
        )
    return entries


_GONE = frozenset("D")
_MOVED = frozenset("RC")
"""Statuses whose item names the path it came from (`oldPath`): a rename leaves it, a copy not."""
_STATUSES = frozenset("AMDRCT")


def file_changes(body: Any) -> list[FileChange] | None:
    """The changes of a compare answer (`/api/models/{id}/compare/{a}..{b}?raw=true`), or None
    for an answer of another shape, which the caller takes as "no compare here".

    NOTE: the shape is taken from issue 35, not from a recorded exchange (no trace in
    tests/data/hub-traces/ holds one, and neither huggingface_hub 2.4 nor huggingface.js call
    the endpoint): a JSON list (or `{"files": [...]}`) with one item per changed path, its
    `status` (`added`, `modified`, `deleted`, `renamed`, `copied`, `typechange`, or git's
    letters `A M D R C T`, a rename's score allowed: `R100`), the path (`path`; `oldPath`
    for a rename or copy) and, for what is not deleted, the new file as a tree item gives it
    (`oid`, `size`, `lfs`, `xetHash`). Anything else is None, never a guess.
    """
    items = body.get("files") if isinstance(body, dict) else body
    if not isinstance(items, list):
        return None
    changes: list[FileChange] = []
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("path"), str):
            return None
        status = str(item.get("status") or "")[:1].upper()
        if status not in _STATUSES:
            return None
        if status in _MOVED:
            old = item.get("oldPath")
            if not isinstance(old, str):
                return None
            if status == "R":
                changes.append(FileChange(old, None))
        if status in _GONE:
            changes.append(FileChange(item["path"], None))
            continue
        try:
            entries = file_entries([{**item, "type": "file"}])
        except (TypeError, ValueError, KeyError):
            return None
        changes += [FileChange(entry.path, entry) for entry in entries]
    return changes


def identity_of(model: ModelInfo) -> RepoIdentity | None:
    """Who is behind the name: the model info's `_id` and `createdAt` (the real trace,
    tests/data/hub-traces/ref-download-plain.json exchange 2, has both; its `_id` is redacted,
    and anything not an object id counts as absent). The Hub gives no owner id here: `author`
    is the owner's name, which the repo id holds already."""
    raw = getattr(model, "_id", None)
    object_id = raw if isinstance(raw, str) and _OBJECT_ID.fullmatch(raw) else None
    created = model.created_at.astimezone(UTC) if model.created_at else None
    if object_id is None and created is None:
        return None
    return RepoIdentity(object_id, created)


def modified(item: dict[str, Any]) -> Modified | None:
    """One item of the `/api/models` listing as what discovery reads of it."""
    # huggingface_hub leaves ModelInfo.__init__ unannotated
    model = ModelInfo(**item)  # type: ignore[no-untyped-call]
    if not model.id or model.last_modified is None:
        return None
    status = None
    if model.sha:
        status = RepoStatus(
            head=CommitSha(model.sha),
            repo_id=model.id,
            gated=model.gated not in (None, False),
            disabled=bool(model.disabled),
            private=bool(model.private),
            identity=identity_of(model),
        )
    identity = identity_of(model)
    object_id = identity.object_id if identity else None
    return Modified(model.id, model.last_modified.astimezone(UTC), status, object_id)


def derivative_of(item: Any, base_id: str) -> Derivative | None:
    """One listing item as a Derivative of `base_id`; None for an item without a usable id.

    The relation is read from the item's `base_model:<relation>:<base>` tag; the listing is
    untrusted, so anything of another shape counts as absent.
    """
    repo_id = item.get("id") if isinstance(item, dict) else None
    try:
        validate_repo_id(repo_id if isinstance(repo_id, str) else "")
    except InvalidRepoId:
        return None  # no id the Hub could hold: nothing to show or track
    tags = item.get("tags")
    found = Relation.UNKNOWN
    for tag in tags if isinstance(tags, list) else ():
        if not isinstance(tag, str) or not tag.startswith("base_model:"):
            continue
        kind, _, base = tag.removeprefix("base_model:").partition(":")
        if base.casefold() == base_id.casefold() and kind in _RELATIONS:
            found = Relation(kind)
            break
    modified = item.get("lastModified")
    try:
        when = parse_datetime(modified).astimezone(UTC) if isinstance(modified, str) else None
    except ValueError:
        when = None
    return Derivative(str(repo_id), found, when)


def commit_infos(items: list[dict[str, Any]]) -> list[CommitInfo]:
    commits: list[CommitInfo] = []
    # NOTE: the Hub's commit listing carries no parent shas; it is `git log` order, so on
    # the Hub's linear histories each commit's parent is the next one listed.
    for i, item in enumerate(items):
        parent = (CommitSha(items[i + 1]["id"]),) if i + 1 < len(items) else ()
        commits.append(
            CommitInfo(
                sha=CommitSha(item["id"]),
                parents=parent,
                date=parse_datetime(item["date"]).astimezone(UTC),
                authors=tuple(author["user"] for author in item["authors"]),
                title=item["title"],
                message=item["message"],
            )
        )
    return commits
