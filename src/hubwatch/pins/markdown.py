"""GitHub-flavoured Markdown: the check as a PR comment, a bump's changelog as a PR body.

A summary table first (one row per pin and revision, its move, the worst that counts, its
advisories), then each upstream revision once, its commit title and changes in a collapsed
`<details>`, however many pins reach it.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence

from hubwatch.models import Severity
from hubwatch.pins.bump import Bump
from hubwatch.pins.check import PinReport, PinStatus, Report
from hubwatch.pins.declared import Declared
from hubwatch.pins.findings import AdvisoryState
from hubwatch.pins.ignores import Ignore
from hubwatch.pins.links import Link
from hubwatch.pins.revisions import Described, described

_ORDER = sorted(Severity, key=lambda s: -s.rank)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _flat(text: object) -> str:
    return " ".join(_CONTROL.sub("", str(text)).split())


def cell(text: object) -> str:
    """Upstream text safe in a table cell or a heading: control characters (terminal escapes)
    dropped, one line, pipes, backticks, brackets and HTML characters escaped."""
    flat = _flat(text)
    for char in "\\|`*_[]<>#~":
        flat = flat.replace(char, "\\" + char)
    return flat


def code(text: object) -> str:
    """Text inside a code span, where backslash escapes do not apply: one line, no backticks,
    pipes escaped for tables (GFM unescapes them there first)."""
    return "`" + _flat(text).replace("`", "'").replace("|", "\\|") + "`"


def _rows(report: Report) -> list[list[PinReport]]:
    """Pins of one repo at one revision with one outcome, together (one row, its places)."""
    rows: dict[tuple[object, ...], list[PinReport]] = {}
    for p in report.pins:
        newest = p.newest.sha if p.newest else None
        key = (p.pin.repo, p.pin.expression, p.pin.ref, p.status, newest, p.severity)
        rows.setdefault(key, []).append(p)
    return list(rows.values())


def _move(p: PinReport) -> str:
    if p.status is PinStatus.UNRESOLVED:
        return f"{code(p.pin.expression or '')} (unresolved)"
    ref = code((p.pin.ref or p.pin.kind.value)[:12])
    newest = code(p.newest.sha[:12]) if p.newest else ""
    if p.status is PinStatus.BEHIND:
        return f"{ref} → {newest}"
    if p.status is PinStatus.FLOATING and p.newest:
        return f"{ref} (floating, now {newest})"
    return f"{ref} ({p.status.value})"


def _advisory_cell(p: PinReport) -> str:
    state = p.advisory_state
    if state is AdvisoryState.UNKNOWN:
        return "**unknown**"
    if state is AdvisoryState.OFF:
        return "off"
    own = p.own_advisories
    ids = [cell(m.advisory_id) for m in own.matches] if own is not None else []
    waived = {cell(a) for a in p.waived_advisories}
    shown = [f"{i} (ignored)" if i in waived else i for i in ids]
    return ", ".join(shown) if shown else ("none" if state is AdvisoryState.OK else "")


def _worst(p: PinReport) -> str:
    worst = p.severity.value if p.severity else "—"
    return worst + (f" ({len(p.waivers)} ignored)" if p.waivers else "")


def _counts(report: Report, threshold: Severity) -> str:
    """`10 pin(s), 3 at breaking or worse…, 1 advisory of your own versions`."""
    failing = [
        p for p in report.pins if p.severity is not None and p.severity.rank >= threshold.rank
    ]
    parts = [f"{len(report.pins)} pin(s)", f"{len(failing)} at {threshold.value} or worse"]
    unchecked = (PinStatus.UNKNOWN, PinStatus.UNREACHABLE, PinStatus.FAILED)
    broken = [p for p in report.pins if p.status in unchecked]
    if broken:
        parts.append(f"{len(broken)} that could not be checked")
    if report.project is not None:
        parts.append(f"{len(report.project.counted)} advisory(ies) of your own versions")
    return ", ".join(parts)


def _summary(report: Report, threshold: Severity) -> list[str]:
    code_ = report.exit_code(threshold)
    verdict = {0: "passes", 1: "fails"}.get(code_, "is incomplete")
    out = [
        f"**The check {verdict}** at `--fail-on {threshold.value}` (exit {code_}): "
        f"{_counts(report, threshold)}.",
        "",
    ]
    if report.advisory_state is AdvisoryState.UNKNOWN:
        out += ["> [!CAUTION]", "> Advisory data unknown, so no advisory verdict is given:"]
        out += [f"> - {cell(why)}" for why in report.unknown_reasons()] + [""]
    elif report.advisory_state is AdvisoryState.OFF:
        out += ["Advisories are off (`HUBWATCH_ADVISORY_SERVICE=off`): none were checked.", ""]
    out += ["| pin | from → to | worst | advisories it brings |", "|---|---|---|---|"]
    for group in _rows(report):
        first = group[0]
        name = code(first.pin.repo) if first.pin.repo else cell(first.pin.expression or "")
        where = ", ".join(code(f"{p.pin.path}:{p.pin.line}") for p in group)
        out.append(
            f"| {name} at {where} | {_move(first)} | {_worst(first)} | {_advisory_cell(first)} |"
        )
    return out


def _project(report: Report) -> list[str]:
    project = report.project
    if project is None:
        return []
    out = ["", "### Advisories of your own versions", ""]
    if project.state is AdvisoryState.UNKNOWN:
        return out + [f"Unknown: {cell(project.error)}"]
    if project.state is AdvisoryState.OFF:
        return out + ["Not checked: advisories are off."]
    names = ", ".join(
        sorted({f"{d.dependency.name} {d.dependency.version}" for d in project.checked})
    )
    out.append(f"Checked: {cell(names) if names else 'no exact version declared'}.")
    waived = {w.finding: w.entry for w in project.waivers}
    if project.matches:
        out += [
            "",
            "| advisory | package | declared at | fixed in | status |",
            "|---|---|---|---|---|",
        ]
    for found in project.matches:
        m, where = found.match, code(f"{found.declared.path}:{found.declared.line}")
        entry = waived.get(m.advisory_id)
        status = f"ignored: {cell(entry.reason)}" if entry else "**counts**"
        summary = f" — {cell(m.summary[:120])}" if m.summary else ""
        out.append(
            f"| {cell(m.advisory_id)}{summary} | {cell(m.package)} {cell(m.version)} "
            f"| {where} | {cell(', '.join(m.fixed) or '—')} | {status} |"
        )
    for d in project.unpinned:
        out.append(
            f"- {code(d.dependency.name + d.dependency.spec)} at "
            f"{code(f'{d.path}:{d.line}')}: a range, no version to match (pin it or "
            "add a lockfile)"
        )
    out += [f"- could not read {cell(problem)}" for problem in project.problems]
    return out


def _brings(entry: Described, declared: Sequence[Declared]) -> list[str]:
    found = entry.brings(declared)
    out = []
    requires = [d for d in found.requires if d.spec or d.version]
    imports = sorted({d.name for d in found.requires if not d.spec and not d.version})
    if requires:
        out.append(
            "- brings: requires "
            + ", ".join(f"{code(d.name + d.spec)} ({code(d.source)})" for d in requires)
        )
    if imports:
        out.append("- brings: its code imports " + ", ".join(code(i) for i in imports))
    for conflict in found.conflicts:
        own = conflict.declared
        out.append(
            f"- brings: needs {code(conflict.required.name + conflict.required.spec)}; "
            f"you declare {code(own.dependency.version)} at "
            f"{code(f'{own.path}:{own.line}')}"
        )
    out += [
        f"- context: saved with transformers {code(d.version)} ({code(d.source)}); "
        "not matched, your own version is"
        for d in found.saved_with
    ]
    if entry.report is not None and entry.report.matches:
        ids = ", ".join(cell(m.advisory_id) for m in entry.report.matches)
        out.append(f"- brings advisories (its own requirements): {ids}")
    return out


def revision_details(entry: Described, link: Link, declared: Sequence[Declared]) -> list[str]:
    """One upstream revision, collapsed: its commit title and worst change in the summary; its
    changes, worst first, and what it brings inside."""
    title = entry.revision.title if entry.revision else "(revision not stored)"
    worst = entry.worst.value if entry.worst else "no counted change"
    roles = f" · {', '.join(sorted(entry.roles))}" if entry.roles else ""
    summary = html.escape(f"{_flat(entry.repo)} {entry.sha[:12]} — {_flat(title)} · {worst}")
    url = link(entry.repo, entry.sha)
    out = ["<details>", f"<summary>{summary}{html.escape(roles)}</summary>", ""]
    if url:
        out += [f"[{code(entry.sha[:12])}]({url})", ""]
    ranked = sorted(entry.changes, key=lambda c: -c.severity.rank)
    for change in ranked:
        why = entry.waived.get(change.kind)
        note = f" (ignored: {cell(why)})" if why is not None else ""
        out.append(
            f"- **{change.severity.value}** {code(change.kind)}: {cell(change.summary)}{note}"
        )
    if not ranked and not entry.roles:
        out.append("- no recorded changes")
    return [*out, *_brings(entry, declared), "", "</details>"]


def _ignore_line(entry: Ignore) -> str:
    what = " ".join(
        f"{k}={code(v)}"
        for k, v in (
            ("id", entry.advisory),
            ("repo", entry.repo),
            ("sha", entry.sha),
            ("kind", entry.kind),
        )
        if v
    )
    until = f", until {entry.expires.isoformat()}" if entry.expires else ""
    return f"{what}: {cell(entry.reason)}{until} ({cell(entry.origin)})"


def _ignores(report: Report) -> list[str]:
    waivers = [w for p in report.pins for w in p.waivers]
    waivers += report.project.waivers if report.project is not None else []
    if not (waivers or report.expired or report.unused):
        return []
    out = ["", "### Ignore list" + (f" ({code(report.config)})" if report.config else ""), ""]
    accepted: dict[int, tuple[Ignore, list[str]]] = {}
    for w in waivers:
        accepted.setdefault(id(w.entry), (w.entry, []))[1].append(w.finding)
    for entry, findings in accepted.values():
        out.append(f"- accepts {len(findings)} finding(s): {_ignore_line(entry)}")
    out += [f"- **expired**, counts again: {_ignore_line(e)}" for e in report.expired]
    out += [
        f"- unused (it accepts nothing now; remove it): {_ignore_line(e)}" for e in report.unused
    ]
    return out


def _declared(report: Report) -> tuple[Declared, ...]:
    return report.project.checked if report.project is not None else ()


def report_markdown(report: Report, threshold: Severity, link: Link) -> str:
    """The check as a PR comment: the verdict, a summary table, your own versions' advisories,
    each upstream revision once (collapsed), the ignore list."""
    out = ["## hubwatch pins check", "", *_summary(report, threshold), *_project(report)]
    entries = described(report.pins)
    if entries:
        out += ["", "### Upstream revisions", ""]
        for entry in entries:
            out += [*revision_details(entry, link, _declared(report)), ""]
    out += _ignores(report)
    return "\n".join(out).rstrip("\n") + "\n"


def changelog_markdown(bumps: Sequence[Bump], link: Link) -> str:
    """A PR body: a table of the moves, then each revision they take in once, collapsed."""
    out = ["## Model pin bumps", ""]
    if not bumps:
        return "\n".join([*out, "Every pin is at its target already."]) + "\n"
    out += ["| pin | from → to | worst |", "|---|---|---|"]
    moves: dict[tuple[str, str, str], list[Bump]] = {}
    for bump in bumps:
        moves.setdefault((bump.pin.repo or "", bump.old, bump.new), []).append(bump)
    for (repo, old, new), group in moves.items():
        where = ", ".join(code(f"{b.pin.path}:{b.pin.line}") for b in group)
        found = [c.severity for rc in group[0].changes for c in rc.changes]
        worst = max(found, key=lambda s: s.rank).value if found else "—"
        out.append(f"| {code(repo)} at {where} | {code(old[:12])} → {code(new[:12])} | {worst} |")
    seen: set[tuple[str, str]] = set()
    out += ["", "### Upstream revisions taken in", ""]
    for (repo, _, _), group in moves.items():
        for rc in group[0].changes:
            if (repo, rc.revision.sha) in seen:
                continue
            seen.add((repo, rc.revision.sha))
            entry = Described(repo, rc.revision, rc.revision.sha, rc.changes)
            out += [*revision_details(entry, link, ()), ""]
    return "\n".join(out).rstrip("\n") + "\n"
