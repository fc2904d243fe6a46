"""Publishing detected changes as OSV records of hubwatch's own database (`x_HUBWATCH-…`)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from hubwatch.models import Change, CommitSha, Severity
from hubwatch.models.timestamps import rfc3339
from hubwatch.store.advisories import AdvisoryStore

SCHEMA_VERSION = "1.7.6-dev"
"""The OSV schema our records follow: its main branch after release 1.7.5 (ossf/osv-schema
51b8156, tests/data/osv/osv-schema.json), the first to accept the `x_` prefix of a local
database's ids. A SemVer pre-release: newer than 1.7.5, older than the release that will
carry it; 1.7.5's own schema refuses `x_` ids."""

OWN_SIGNALS: dict[str, Severity] = {
    "weights.pickle_added": Severity.SECURITY,
    "code.custom_added": Severity.SECURITY,
    "config.auto_map_external": Severity.SECURITY,
}
"""Change kinds OSV cannot know about, published with at least this severity. A change to
custom code is not one: the policy grades it by what it does (a docstring edit is info, a
risky call newly reached is security), and the record says that severity."""

REVERTED_BY = {"weights.pickle_added": "weights.pickle_removed"}
"""Kinds undone by another kind (besides the same kind changing back on the same path)."""

WHOLE_CLASS = {"weights.pickle_added"}
"""Kinds about a class of files, undone only once no file of the class is left: the differ
says `weights.pickle_removed` only then, whichever file it names, and deleting one of several
pickle files fixes nothing."""

LICENSE_CHANGE = "card.license"
MORE_RESTRICTIVE_LICENSE = Severity.BREAKING
"""A license that allows less than before: you may no longer use the model as you did."""

_PERMISSIVE = {
    "mit", "apache-2.0", "bsd", "bsd-2-clause", "bsd-3-clause", "bsd-3-clause-clear", "isc",
    "cc0-1.0", "unlicense", "cc-by-2.0", "cc-by-2.5", "cc-by-3.0", "cc-by-4.0", "bsl-1.0",
    "zlib", "wtfpl", "pddl", "odc-by", "artistic-2.0", "ecl-2.0", "afl-3.0", "postgresql",
    "ms-pl", "ncsa", "cdla-permissive-1.0", "cdla-permissive-2.0", "mit-0", "0bsd", "ofl-1.1",
}  # fmt: skip
_WEAK_COPYLEFT = re.compile(r"^(lgpl|mpl|epl|eupl|cc-by-sa|cdla-sharing|odbl|osl|lppl|gfdl)")
_COPYLEFT = re.compile(r"^(gpl|agpl)")
_NON_COMMERCIAL = re.compile(r"(^|-)nc(-|$)|noncommercial|non-commercial|research")
_UNLICENSED = 6


def license_rank(value: object) -> int:
    """How much a license restricts use: 0 permissive … 5 non-commercial, 6 none at all."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return _UNLICENSED  # no license: all rights reserved
    if isinstance(value, list):
        return max((license_rank(v) for v in value), default=_UNLICENSED)
    name = str(value).strip().lower()
    if name in _PERMISSIVE:
        return 0
    if _WEAK_COPYLEFT.match(name):
        return 1
    if _COPYLEFT.match(name):
        return 2
    if _NON_COMMERCIAL.search(name):
        return 5
    if "openrail" in name or name.startswith(("bigscience", "creativeml")):
        return 3  # use-based restrictions
    return 4  # custom terms (llama3, gemma, other): read them


def effective_severity(change: Change) -> Severity:
    """The change's severity, raised for the signals OSV cannot know about."""
    floor = OWN_SIGNALS.get(change.kind)
    if change.kind == LICENSE_CHANGE and license_rank(change.after) > license_rank(change.before):
        floor = MORE_RESTRICTIVE_LICENSE
    if floor is not None and floor.rank > change.severity.rank:
        return floor
    return change.severity


@dataclass(frozen=True, slots=True)
class FeedEntry:
    """One detected change of one revision, with what a record needs to say where it is."""

    repo_id: str
    repo_url: str
    """The repo's URL (Hub page or git remote); the GIT range's `repo`."""
    sha: CommitSha
    date: datetime
    """The revision's commit date (its year is part of the record's id)."""
    change: Change
    root: bool = False
    """The revision is a root commit: its range is `"introduced": "0"`, as OSV has it."""


class PublishableChanges(Protocol):
    """Detected changes, oldest revision first within each repo; the store implements it.

    Not `sources.base.ChangeFeed`, a source listing the repos modified upstream.
    """

    def changes(self) -> Iterable[FeedEntry]: ...


def publish(
    entries: Iterable[FeedEntry],
    ids: AdvisoryStore,
    minimum: Severity = Severity.BEHAVIOR,
    now: datetime | None = None,
) -> list[dict[str, Any]]:
    """The OSV record of every change of severity `minimum` or above, then the withdrawn ones.

    Ids are derived from the change (`publication_id`). `published` is when the change was
    first published; `modified` moves (to `now`) only when a record's content does; a change
    published before and no longer detected is published again with `withdrawn` set.
    """
    now = now or datetime.now(UTC)
    ordered = sorted(entries, key=lambda e: (e.repo_id, e.date, e.sha))
    records = []
    for i, entry in enumerate(ordered):
        severity = effective_severity(entry.change)
        if severity.rank < minimum.rank:
            continue
        change = entry.change
        publication = ids.publication(
            entry.repo_id, entry.sha, change.kind, change.path, entry.date.year
        )
        body = _content(entry, severity, _reverted_by(entry, ordered[i + 1 :]))
        digest = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()
        modified = ids.revise_publication(publication.osv_id, digest, body, now)
        records.append(_record(publication.osv_id, publication.published, modified, body))
    for gone in ids.withdraw_publications([r["id"] for r in records], now):
        assert gone.withdrawn is not None
        body = gone.record or {"summary": "a change hubwatch no longer detects"}
        record = _record(gone.osv_id, gone.published, gone.modified or gone.withdrawn, body)
        record["withdrawn"] = rfc3339(gone.withdrawn)
        records.append(record)
    return records


def _record(
    osv_id: str, published: datetime, modified: datetime, body: dict[str, Any]
) -> dict[str, Any]:
    return {
        "schema_version": SCHEMA_VERSION,
        "id": osv_id,
        "published": rfc3339(published),
        "modified": rfc3339(max(modified, published)),
        **body,
    }


def _content(entry: FeedEntry, severity: Severity, fix: FeedEntry | None) -> dict[str, Any]:
    """What the record says, apart from its id and dates (the digest is taken over this)."""
    change = entry.change
    # OSV's GIT convention: a range from the first commit is introduced at "0" (a root commit
    # named instead crashed osv.dev's own Python library)
    events: list[dict[str, str]] = [{"introduced": "0" if entry.root else entry.sha}]
    if fix is not None:
        events.append({"fixed": fix.sha})
    return {
        "summary": f"{entry.repo_id}: {change.summary}"[:300],
        "details": _details(entry, severity),
        "affected": [{"ranges": [{"type": "GIT", "repo": entry.repo_url, "events": events}]}],
        "references": _references(entry, fix),
        "database_specific": {
            "kind": change.kind,
            "severity": severity.value,
            "detected_severity": change.severity.value,
            "repo_id": entry.repo_id,
            "path": change.path,
            "before": _jsonable(change.before),
            "after": _jsonable(change.after),
        },
    }


def export(records: Sequence[dict[str, Any]], directory: Path) -> list[Path]:
    """Write each record to `<directory>/<id>.json` (replacing the old file whole)."""
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for record in records:
        target = directory / f"{record['id']}.json"
        fd, tmp = tempfile.mkstemp(dir=directory, suffix=".part")
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(record, out, indent=2, ensure_ascii=False)
            out.write("\n")
        os.replace(tmp, target)
        written.append(target)
    return written


def _reverted_by(entry: FeedEntry, later: Sequence[FeedEntry]) -> FeedEntry | None:
    """The first later revision of the same repo that undoes the change, if any."""
    change = entry.change
    undo = REVERTED_BY.get(change.kind)
    for other in later:
        if other.repo_id != entry.repo_id:
            continue
        if other.change.kind == undo and change.kind in WHOLE_CLASS:
            return other
        if other.change.path != change.path:
            continue
        if other.change.kind == undo:
            return other
        if other.change.kind == change.kind and other.change.after == change.before:
            return other
    return None


def _details(entry: FeedEntry, severity: Severity) -> str:
    change = entry.change
    lines = [
        f"{change.summary}",
        "",
        f"Repository: {entry.repo_id} ({entry.repo_url})",
        f"Revision: {entry.sha} ({rfc3339(entry.date)})",
        f"Kind: {change.kind}; severity: {severity.value}",
    ]
    if change.path:
        lines.append(f"File: {change.path}")
    if change.detail:
        lines += ["", change.detail[:20_000]]
    return "\n".join(lines)


def _references(entry: FeedEntry, fix: FeedEntry | None) -> list[dict[str, str]]:
    if not entry.repo_url.startswith(("https://", "http://")):
        return []
    refs = [{"type": "WEB", "url": f"{entry.repo_url}/commit/{entry.sha}"}]
    if fix is not None:
        refs.append({"type": "FIX", "url": f"{entry.repo_url}/commit/{fix.sha}"})
    return refs


def _jsonable(value: Any) -> Any:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return str(value)
    return value
