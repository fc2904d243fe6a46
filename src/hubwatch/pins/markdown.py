"""GitHub-flavoured Markdown: the check as a PR comment, a bump's changelog as a PR body."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from hubwatch.models import Change, RevisionChanges, Severity
from hubwatch.pins.bump import Bump
from hubwatch.pins.check import PinReport, Report
from hubwatch.pins.links import Link

_ORDER = sorted(Severity, key=lambda s: -s.rank)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def cell(text: object) -> str:
    """Upstream text safe in a table cell or a heading: control characters (terminal escapes)
    dropped, one line, pipes, backticks, brackets and HTML characters escaped."""
    flat = " ".join(_CONTROL.sub("", str(text)).split())
    for char in "\\|`*_[]<>#":
        flat = flat.replace(char, "\\" + char)
    return flat


def code(text: object) -> str:
    """Text inside a code span, where backslash escapes do not apply: one line, no backticks,
    pipes escaped for tables (GFM unescapes them there first)."""
    flat = " ".join(_CONTROL.sub("", str(text)).split())
    return "`" + flat.replace("`", "'").replace("|", "\\|") + "`"


def _where(report: PinReport) -> str:
    return code(f"{report.pin.path}:{report.pin.line}")


def report_markdown(report: Report, threshold: Severity, link: Link) -> str:
    """A summary line, one table row per pin, then what each behind pin misses by severity."""
    verdict = "fails" if report.fails(threshold) else "passes"
    out = [
        "## hubwatch pins check",
        "",
        f"{len(report.pins)} pin(s); the check {verdict} at `--fail-on {threshold.value}`.",
        "",
        "| where | repo | pinned | status | worst | newest |",
        "|---|---|---|---|---|---|",
    ]
    for p in report.pins:
        newest = p.newest.sha[:12] if p.newest else ""
        out.append(
            f"| {_where(p)} | {cell(p.pin.repo or p.pin.expression or '')} "
            f"| {cell(p.pin.ref or p.pin.kind.value)} | {p.status.value} "
            f"| {p.severity.value if p.severity else ''} | {newest} |"
        )
    for p in report.pins:
        if p.changes and p.pin.repo:
            out += ["", f"### {cell(p.pin.repo)} since {cell(p.pin.ref)} ({_where(p)})", ""]
            out += changes_by_severity(p.pin.repo, p.changes, link)
        for label, found in (("pinned", p.advisories), ("newest", p.newest_advisories)):
            if found and found.matches:
                ids = ", ".join(cell(m.advisory_id) for m in found.matches)
                out += ["", f"Advisories of the {label} revision of {cell(p.pin.repo)}: {ids}"]
    return "\n".join(out) + "\n"


def changes_by_severity(repo: str, revisions: Iterable[RevisionChanges], link: Link) -> list[str]:
    """Bullet lists under one heading per severity, worst first, each change linking to the
    revision that made it."""
    grouped: dict[Severity, list[tuple[RevisionChanges, Change]]] = {s: [] for s in _ORDER}
    for rc in revisions:
        for change in rc.changes:
            grouped[change.severity].append((rc, change))
    out: list[str] = []
    for severity in _ORDER:
        if not grouped[severity]:
            continue
        out += [f"#### {severity.value}", ""]
        for rc, change in grouped[severity]:
            sha = rc.revision.sha
            url = link(repo, sha)
            ref = f"[`{sha[:12]}`]({url})" if url else f"`{sha[:12]}`"
            out.append(f"- {ref} {code(change.kind)}: {cell(change.summary)}")
        out.append("")
    return out


def changelog_markdown(bumps: Sequence[Bump], link: Link) -> str:
    """A PR body: each repo's move, then every change it brings, grouped by severity."""
    out = ["## Model pin bumps", ""]
    seen: set[tuple[str, str, str]] = set()
    for bump in bumps:
        repo = bump.pin.repo or ""
        if (repo, bump.old, bump.new) in seen:
            continue  # the same move pinned in several files: one changelog
        seen.add((repo, bump.old, bump.new))
        where = sorted({code(f"{b.pin.path}:{b.pin.line}") for b in bumps if b.pin.repo == repo})
        out += [
            f"### {cell(repo)} {bump.old[:12]} → {bump.new[:12]}",
            "",
            "In " + ", ".join(where),
            "",
        ]
        out += changes_by_severity(repo, bump.changes, link) or ["No recorded changes.", ""]
    if not bumps:
        out.append("Every pin is at its target already.")
    return "\n".join(out).rstrip("\n") + "\n"
