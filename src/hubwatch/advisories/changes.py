"""`advisories.changed`: a change in which known advisories apply between two revisions."""

from __future__ import annotations

from collections.abc import Sequence

from hubwatch.models import AdvisoryMatch, Change, Severity

KIND = "advisories.changed"


def advisory_changes(
    old_matches: Sequence[AdvisoryMatch], new_matches: Sequence[AdvisoryMatch]
) -> list[Change]:
    """One `advisories.changed` Change when the advisories that apply differ, else none.

    Newly applying advisories make it a SECURITY change; advisories that only stop applying
    (a pin moved past the fix) make it INFO.
    """
    old = {(m.advisory_id, m.package): m for m in old_matches}
    new = {(m.advisory_id, m.package): m for m in new_matches}
    added = [new[key] for key in sorted(new.keys() - old.keys())]
    gone = [old[key] for key in sorted(old.keys() - new.keys())]
    if not added and not gone:
        return []
    parts = []
    if added:
        parts.append(
            f"{len(added)} known advisor{'y' if len(added) == 1 else 'ies'} now appl"
            f"{'ies' if len(added) == 1 else 'y'}: " + _list(added)
        )
    if gone:
        parts.append(
            f"{len(gone)} no longer appl{'ies' if len(gone) == 1 else 'y'}: " + _list(gone)
        )
    detail = "\n".join(
        [f"+ {m.advisory_id} ({m.package} {m.version or ''}): {m.reason}" for m in added]
        + [f"- {m.advisory_id} ({m.package} {m.version or ''}): {m.reason}" for m in gone]
    )
    return [
        Change(
            kind=KIND,
            severity=Severity.SECURITY if added else Severity.INFO,
            summary="; ".join(parts),
            path=None,
            before=sorted(f"{m.package}:{m.advisory_id}" for m in old.values()),
            after=sorted(f"{m.package}:{m.advisory_id}" for m in new.values()),
            detail=detail,
        )
    ]


def _list(matches: Sequence[AdvisoryMatch]) -> str:
    shown = ", ".join(f"{m.advisory_id} ({m.package} {m.version or '?'})" for m in matches[:5])
    return shown + (f" and {len(matches) - 5} more" if len(matches) > 5 else "")
