"""Whether an OSV record applies to one package version: PEP 440 ordering over every range.

Follows the OSV schema's evaluation rules (ossf/osv-schema, "Evaluation"): every affected entry
of the package and every range in it count, plus the explicit `versions` list. GIT ranges name
commits, not releases, so they are skipped — without hiding an ECOSYSTEM range after them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from hubwatch.advisories.cvss import base_score
from hubwatch.models import AdvisoryId, AdvisoryMatch, Dependency, MatchStatus, SeverityScore

_ORDERED_RANGES = ("ECOSYSTEM", "SEMVER")


class Verdict(StrEnum):
    """The outcome of evaluating one record against one version."""

    AFFECTED = "affected"
    NOT_AFFECTED = "not_affected"
    UNDETERMINED = "undetermined"


@dataclass(frozen=True, slots=True)
class Evaluation:
    """A verdict with the reason and the fixed versions of the entries that concern the package."""

    verdict: Verdict
    reason: str
    fixed: tuple[str, ...]


def normalize(name: str) -> str:
    """A package name in PEP 503 normal form (`Jinja2` → `jinja2`, `Foo_Bar` → `foo-bar`)."""
    return str(canonicalize_name(name))


def packages(record: Mapping[str, Any]) -> set[tuple[str, str]]:
    """(ecosystem, normalised name) of every package the record has an affected entry for."""
    return {key for entry in _entries(record) if (key := _entry_package(entry))}


def evaluate(record: Mapping[str, Any], ecosystem: str, name: str, version: str) -> Evaluation:
    """Whether `version` of the package is affected by `record`.

    A version that is not PEP 440 gives UNDETERMINED, never NOT_AFFECTED. Local versions
    (`2.5.1+cu121`) are compared as their public release: the build of a release has that
    release's vulnerabilities.
    """
    name = normalize(name)
    entries = [e for e in _entries(record) if _entry_package(e) == (ecosystem, name)]
    if not entries:
        return Evaluation(Verdict.NOT_AFFECTED, f"no affected entry for {name}", ())
    fixed = tuple(dict.fromkeys(f for e in entries for f in _fixed(e)))
    try:
        parsed = Version(version)
    except InvalidVersion:
        return Evaluation(
            Verdict.UNDETERMINED,
            f"{name} {version!r} is not a PEP 440 version; cannot rule the advisory out",
            fixed,
        )
    public = Version(parsed.public)
    undetermined: str | None = None
    for entry in entries:
        ranges = entry.get("ranges")
        for rng in ranges if isinstance(ranges, list) else ():
            if not isinstance(rng, dict) or rng.get("type") not in _ORDERED_RANGES:
                continue
            verdict, why = _in_range(public, rng.get("events"))
            if verdict is Verdict.AFFECTED:
                return Evaluation(Verdict.AFFECTED, f"{name} {version} is in {why}", fixed)
            if verdict is Verdict.UNDETERMINED:
                undetermined = why
        listed = entry.get("versions")
        if isinstance(listed, list) and _listed(public, listed):
            return Evaluation(Verdict.AFFECTED, f"{name} {version} is listed as affected", fixed)
    if undetermined:
        return Evaluation(Verdict.UNDETERMINED, f"{name} {version}: {undetermined}", fixed)
    return Evaluation(Verdict.NOT_AFFECTED, f"{name} {version} is outside every range", fixed)


def withdrawn(record: Mapping[str, Any]) -> bool:
    """Whether the record is withdrawn (OSV `withdrawn`: it should no longer be used).

    A `withdrawn` that is set but not a timestamp still counts: the publisher meant it.
    """
    return bool(record.get("withdrawn"))


def match(record: Mapping[str, Any], dependency: Dependency) -> AdvisoryMatch | None:
    """The AdvisoryMatch of `record` for a pinned dependency, or None if it does not apply."""
    if dependency.version is None or withdrawn(record):
        return None
    result = evaluate(record, dependency.ecosystem, dependency.name, dependency.version)
    if result.verdict is Verdict.NOT_AFFECTED:
        return None
    status = (
        MatchStatus.AFFECTED if result.verdict is Verdict.AFFECTED else MatchStatus.UNDETERMINED
    )
    return to_match(record, dependency, status, f"{result.reason} ({dependency.reason})")


def to_match(
    record: Mapping[str, Any], dependency: Dependency, status: MatchStatus, reason: str
) -> AdvisoryMatch:
    """An AdvisoryMatch carrying the record's id, aliases, summary, severity and fixes."""
    key = (dependency.ecosystem, dependency.name)
    entries = [e for e in _entries(record) if _entry_package(e) == key]
    aliases = record.get("aliases")
    summary = record.get("summary") or record.get("details") or ""
    modified = record.get("modified")
    return AdvisoryMatch(
        advisory_id=AdvisoryId(str(record["id"])),
        aliases=tuple(a for a in aliases if isinstance(a, str))
        if isinstance(aliases, list)
        else (),
        summary=str(summary).strip().splitlines()[0][:500] if str(summary).strip() else "",
        severity=severities(record),
        fixed=tuple(dict.fromkeys(f for e in entries for f in _fixed(e))),
        package=dependency.name,
        version=dependency.version,
        status=status,
        reason=reason,
        modified=modified if isinstance(modified, str) else "",
    )


def severities(record: Mapping[str, Any]) -> tuple[SeverityScore, ...]:
    """The record's severity entries (top level, else per affected entry), v3 scores computed."""
    found: list[SeverityScore] = []
    sources: list[Any] = [record.get("severity")]
    sources += [e.get("severity") for e in _entries(record)]
    for source in sources:
        for item in source if isinstance(source, list) else ():
            if isinstance(item, dict) and isinstance(item.get("score"), str):
                kind, vector = str(item.get("type", "")), item["score"]
                entry = SeverityScore(kind, vector, base_score(vector))
                if entry not in found:
                    found.append(entry)
        if found:
            break
    return tuple(found)


def _entries(record: Mapping[str, Any]) -> list[dict[str, Any]]:
    affected = record.get("affected")
    return [e for e in affected if isinstance(e, dict)] if isinstance(affected, list) else []


def _fixed(entry: Mapping[str, Any]) -> list[str]:
    found: list[str] = []
    ranges = entry.get("ranges")
    for rng in ranges if isinstance(ranges, list) else ():
        if not isinstance(rng, dict) or rng.get("type") not in _ORDERED_RANGES:
            continue
        events = rng.get("events")
        found.extend(
            event["fixed"]
            for event in (events if isinstance(events, list) else ())
            if isinstance(event, dict) and isinstance(event.get("fixed"), str)
        )
    return found


def _entry_package(entry: Mapping[str, Any]) -> tuple[str, str] | None:
    package = entry.get("package")
    if isinstance(package, dict):
        ecosystem, name = package.get("ecosystem"), package.get("name")
        if isinstance(ecosystem, str) and isinstance(name, str):
            return ecosystem.split(":", 1)[0], normalize(name)
    return None


def _listed(public: Version, listed: Sequence[Any]) -> bool:
    for item in listed:
        try:
            if isinstance(item, str) and Version(item) == public:
                return True
        except InvalidVersion:
            continue
    return False


def _in_range(version: Version, events: Any) -> tuple[Verdict, str]:
    """Evaluate one ECOSYSTEM/SEMVER range's events, sorted by version as the schema says."""
    if not isinstance(events, list):
        return Verdict.UNDETERMINED, "a range without events"
    points: list[tuple[Version | None, str, str]] = []
    for event in events:
        if not isinstance(event, dict) or len(event) != 1:
            return Verdict.UNDETERMINED, f"a malformed range event {event!r:.60}"
        ((kind, raw),) = event.items()
        if kind not in ("introduced", "fixed", "last_affected", "limit") or not isinstance(
            raw, str
        ):
            return Verdict.UNDETERMINED, f"a malformed range event {event!r:.60}"
        if kind == "introduced" and raw == "0":
            points.append((None, kind, raw))
            continue
        try:
            points.append((Version(raw), kind, raw))
        except InvalidVersion:
            return Verdict.UNDETERMINED, f"a range with the unparseable version {raw!r:.40}"
    # BeforeLimits (OSV schema, "Evaluation"): with limit events, the version must be below
    # at least one of them; limits play no part in the walk over the other events.
    limits = [p for p, kind, _ in points if kind == "limit" and p is not None]
    if limits and not any(version < limit for limit in limits):
        return Verdict.NOT_AFFECTED, ""
    points = [p for p in points if p[1] != "limit"]
    points.sort(key=lambda p: (p[0] is not None, p[0] or Version("0")))
    affected, start, why = False, "", ""
    for point, kind, raw in points:
        if kind == "introduced" and (point is None or version >= point):
            affected, start = True, raw
        elif kind == "fixed" and point is not None and version >= point:
            affected = False
        elif kind == "last_affected" and point is not None and version > point:
            affected = False
    if affected:
        bounds = [(p, kind, raw) for p, kind, raw in points if kind != "introduced"]
        bounds += [(limit, "limit", str(limit)) for limit in limits]
        bound = next(
            (
                f", {raw})" if kind != "last_affected" else f", {raw}]"
                for p, kind, raw in sorted(bounds, key=lambda b: b[0] or Version("0"))
                if p is not None and p > version
            ),
            ", ∞)",
        )
        why = f"[{start}{bound}"
    return (Verdict.AFFECTED if affected else Verdict.NOT_AFFECTED), why


def _preference(advisory_id: str) -> tuple[int, str]:
    # PyPI advisories first: PYSEC records carry the PyPI ranges OSV matches on.
    order = ("PYSEC-", "GHSA-", "CVE-")
    rank = next((i for i, prefix in enumerate(order) if advisory_id.startswith(prefix)), 3)
    return rank, advisory_id


def _rank(match: AdvisoryMatch) -> int:
    return 0 if match.status is MatchStatus.AFFECTED else 1


def dedupe(matches: Sequence[AdvisoryMatch]) -> list[AdvisoryMatch]:
    """One match per advisory: records that alias each other (PYSEC-… and GHSA-…) become one.

    The kept record is the PYSEC one when there is one; the others' ids join its aliases.
    """
    kept: list[AdvisoryMatch] = []
    for candidate in sorted(matches, key=lambda m: (m.package, _preference(m.advisory_id))):
        names = {candidate.advisory_id, *candidate.aliases}
        for i, other in enumerate(kept):
            if other.package == candidate.package and names & {other.advisory_id, *other.aliases}:
                aliases = tuple(
                    dict.fromkeys((*other.aliases, *sorted(names - {other.advisory_id})))
                )
                fixed = tuple(dict.fromkeys((*other.fixed, *candidate.fixed)))
                kept[i] = replace(other, aliases=aliases, fixed=fixed)
                # the most definite result wins: a pin elsewhere that is certainly affected
                # is not hidden by a version (`latest`) that cannot be compared
                if _rank(candidate) < _rank(other):
                    kept[i] = replace(
                        kept[i],
                        status=candidate.status,
                        reason=candidate.reason,
                        version=candidate.version,
                    )
                break
        else:
            kept.append(candidate)
    return sorted(kept, key=lambda m: (m.package, m.advisory_id))
