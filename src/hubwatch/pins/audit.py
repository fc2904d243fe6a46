"""The advisories of the versions a codebase declares for itself, from the advisory service."""

from __future__ import annotations

from hubwatch.advisories.service import AdvisoryService
from hubwatch.errors import AdvisoryServiceError
from hubwatch.pins.declared import MODEL_PACKAGES, Declarations
from hubwatch.pins.findings import AdvisoryState, ProjectAudit, ProjectMatch


def wanted(packages: frozenset[str] | None) -> frozenset[str] | None:
    """The packages to match: the model-loading defaults (None), all (`*`: None) or those."""
    if packages is None:
        return MODEL_PACKAGES
    return None if "*" in packages else packages


def audit(
    found: Declarations, service: AdvisoryService | None, packages: frozenset[str] | None = None
) -> ProjectAudit:
    """Match each exact declared version against `service` (None: advisories are off).

    A service that cannot answer (no database, a damaged or stale one) is state UNKNOWN with
    its reason, never "no advisories".
    """
    names = wanted(packages)
    checked = tuple(found.pinned(names))
    unpinned = tuple(found.unpinned(names))
    problems = tuple(found.problems)
    if service is None:
        return ProjectAudit(AdvisoryState.OFF, checked, unpinned, problems=problems)
    try:
        service.ready()  # an empty codebase still says whether the data is there
        answers = service.query_all(list(dict.fromkeys(d.dependency for d in checked)))
    except AdvisoryServiceError as exc:
        return ProjectAudit(
            AdvisoryState.UNKNOWN,
            checked,
            unpinned,
            error=str(exc),
            service=service.name,
            problems=problems,
        )
    matches = tuple(
        ProjectMatch(match, declared)
        for declared in checked
        for match in answers.get(declared.dependency, [])
    )
    return ProjectAudit(
        AdvisoryState.OK, checked, unpinned, matches, service=service.name, problems=problems
    )
