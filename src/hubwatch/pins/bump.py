"""Move each sha pin to a newer revision: only the sha bytes change, the rest of the file stays."""

from __future__ import annotations

import difflib
import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from hubwatch.errors import PinMoved
from hubwatch.models import CommitSha, RevisionChanges, Severity, StoredRevision
from hubwatch.pins.check import PinReport, PinStatus
from hubwatch.pins.model import Pin
from hubwatch.store.repos import RevisionStore

NEWEST = "newest"
WITHOUT = "newest-without="


@dataclass(frozen=True, slots=True)
class Bump:
    """One pin moved from `old` to `new`, with the changes it takes in."""

    pin: Pin
    old: CommitSha
    new: CommitSha
    changes: tuple[RevisionChanges, ...]


def parse_target(text: str) -> Severity | None:
    """`newest` -> None; `newest-without=SEVERITY` -> that severity; ValueError otherwise."""
    if text == NEWEST:
        return None
    if text.startswith(WITHOUT):
        return Severity(text[len(WITHOUT) :])
    raise ValueError(f"--to is {NEWEST} or {WITHOUT}SEVERITY, not {text!r}")


_AGE = re.compile(r"(\d+)\s*([hdw])")
_UNITS = {"h": timedelta(hours=1), "d": timedelta(days=1), "w": timedelta(weeks=1)}


def parse_age(text: str) -> timedelta:
    """`0`, `36h`, `3d`, `2w` -> a timedelta; ValueError otherwise."""
    if text.strip() == "0":
        return timedelta(0)
    found = _AGE.fullmatch(text.strip())
    if found is None:
        raise ValueError(
            f"--min-age is a number of hours, days or weeks (36h, 3d, 2w), not {text!r}"
        )
    return int(found.group(1)) * _UNITS[found.group(2)]


def plan(
    store: RevisionStore,
    reports: Sequence[PinReport],
    without: Severity | None,
    min_age: timedelta = timedelta(0),
    now: datetime | None = None,
) -> list[Bump]:
    """The bump of every sha pin that is behind; with `without`, the newest revision before the
    first one that brings a change at that severity or above (no bump if that is the first);
    with `min_age`, never to a revision committed less than that long before `now` (a
    cool-down, as Renovate's minimumReleaseAge: a revision pulled soon after upload is skipped)."""
    cutoff = (now or datetime.now().astimezone()) - min_age
    bumps = []
    for report in reports:
        if report.status is not PinStatus.BEHIND or report.sha is None or report.pin.at is None:
            continue
        repo = report.pin.repo or ""
        changed = {rc.revision.sha: rc for rc in report.changes}
        taken: list[CommitSha] = []
        for revision in _after(store, repo, report.sha):
            rc = changed.get(revision.sha)
            if without and rc and any(c.severity.rank >= without.rank for c in rc.changes):
                break
            if min_age and revision.date > cutoff:
                break  # too recent: neither it nor any after it
            taken.append(revision.sha)
        if taken:
            new = taken[-1]
            kept = tuple(changed[s] for s in taken if s in changed)
            bumps.append(Bump(report.pin, report.sha, new, kept))
    return bumps


def _after(store: RevisionStore, repo: str, sha: CommitSha) -> list[StoredRevision]:
    """The reachable revisions stored after `sha`, oldest first."""
    history = [r for r in store.history(repo) if r.reachable]
    shas = [r.sha for r in history]
    return history[shas.index(sha) + 1 :] if sha in shas else []


def rewrite(bumps: Sequence[Bump]) -> dict[str, tuple[bytes, bytes]]:
    """Each touched file's bytes before and after; a pin keeps its length (an abbreviated sha
    stays as short). Pins sharing one literal (a constant) are written once."""
    by_path: dict[str, dict[tuple[int, int], Bump]] = defaultdict(dict)
    for bump in bumps:
        assert bump.pin.at is not None  # plan() keeps only pins that can be rewritten
        by_path[bump.pin.path].setdefault(bump.pin.at, bump)
    edited = {}
    for path, edits in by_path.items():
        before = Path(path).read_bytes()
        lines = before.splitlines(keepends=True)
        for (number, column), bump in edits.items():
            old = (bump.pin.ref or "").encode()
            line = lines[number - 1] if number <= len(lines) else b""
            if line[column : column + len(old)] != old:
                raise PinMoved(f"{path}:{number}: {bump.pin.ref} is no longer there; scan again")
            new = bump.new[: len(old)].encode()
            lines[number - 1] = line[:column] + new + line[column + len(old) :]
        edited[path] = (before, b"".join(lines))
    return edited


def unified_diff(edited: dict[str, tuple[bytes, bytes]]) -> str:
    """The edits as one unified diff (what `--write` would do)."""
    out: list[str] = []
    for path, (before, after) in edited.items():
        old = before.decode("utf-8", "surrogateescape").splitlines(keepends=True)
        new = after.decode("utf-8", "surrogateescape").splitlines(keepends=True)
        out += difflib.unified_diff(old, new, f"a/{path}", f"b/{path}")
    return "".join(out)


def write(edited: dict[str, tuple[bytes, bytes]]) -> None:
    """Write the edited files."""
    for path, (_, after) in edited.items():
        Path(path).write_bytes(after)
