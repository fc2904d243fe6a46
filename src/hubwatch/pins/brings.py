"""What a revision brings to whoever loads it: its own requirements, the imports of its custom
code, and the transformers version it was saved with (context, never matched)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from hubwatch.advisories.deps import saved_with
from hubwatch.models import AdvisoryReport, Dependency
from hubwatch.pins.declared import Declared


@dataclass(frozen=True, slots=True)
class Conflict:
    """A version a revision requires that the codebase's own declared version is outside of."""

    required: Dependency
    declared: Declared


@dataclass(frozen=True, slots=True)
class Brings:
    """One revision's own dependencies, split by what they mean for the user."""

    saved_with: tuple[Dependency, ...] = ()
    """The transformers version its config was saved with: context, not a dependency."""
    requires: tuple[Dependency, ...] = ()
    """Its requirements*.txt lines, its custom code's imports, its card's library."""
    conflicts: tuple[Conflict, ...] = ()
    """Requirements (a minimum transformers version…) the codebase's own pin does not meet."""


def _outside(spec: str, version: str) -> bool:
    try:
        return bool(spec) and not SpecifierSet(spec).contains(Version(version), prereleases=True)
    except (InvalidSpecifier, InvalidVersion):
        return False


def brings(report: AdvisoryReport | None, declared: Sequence[Declared] = ()) -> Brings:
    """What the revision of `report` brings, against the codebase's `declared` versions."""
    if report is None:
        return Brings()
    context = tuple(d for d in report.dependencies if saved_with(d))
    requires = tuple(d for d in report.dependencies if not saved_with(d))
    conflicts = tuple(
        Conflict(required, own)
        for required in requires
        for own in declared
        if own.dependency.name == required.name
        and own.dependency.version is not None
        and _outside(required.spec, own.dependency.version)
    )
    return Brings(context, requires, conflicts)
