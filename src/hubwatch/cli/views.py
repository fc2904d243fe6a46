"""CLI commands that read a repo's stored revisions: its history, and one revision whole."""

from __future__ import annotations

import json
import re
from datetime import UTC, date, datetime, timedelta
from typing import Annotated, Any

import typer

from hubwatch.cli.base import (
    JsonOption,
    NewestFirstOption,
    RepoArg,
    RevArg,
    app,
    exit_on_error,
    out,
    plain,
    print_json,
    shown,
    stored,
)
from hubwatch.cli.render import changes_grid, folding, gb
from hubwatch.models import (
    AdvisoryReport,
    AdvisoryStatus,
    Change,
    Estimate,
    RepoEvent,
    StoredRevision,
)
from hubwatch.models.timestamps import now, to_minute, utc

_FILES_SHOWN = 6
_AGE = re.compile(r"(\d{1,6})([hdw])")
_UNITS = {"h": "hours", "d": "days", "w": "weeks"}

LimitOption = Annotated[
    int | None,
    typer.Option("--limit", metavar="N", min=1, help="Only the N newest revisions."),
]
SinceOption = Annotated[
    str | None,
    typer.Option(
        "--since",
        metavar="DATE",
        help="Only revisions committed since DATE: 2024-12-01, 2024-12-01T12:00 (UTC unless "
        "it says), or an age: 12h, 30d, 2w.",
    ),
]


def since_date(value: str | None) -> datetime | None:
    """`--since` as a UTC time: an ISO date or time, or an age (hours, days, weeks) ago."""
    if value is None:
        return None
    text = value.strip().lower()
    if age := _AGE.fullmatch(text):
        try:
            return now() - timedelta(**{_UNITS[age[2]]: int(age[1])})
        except OverflowError:  # before year 1: every revision is since then
            return datetime.min.replace(tzinfo=UTC)
    try:
        parsed = datetime.fromisoformat(text.upper())
    except ValueError:
        try:
            parsed = datetime.combine(date.fromisoformat(text), datetime.min.time())
        except ValueError:
            raise typer.BadParameter(
                f"{value[:40]!r} is not a date (2024-12-01, 2024-12-01T12:00) or an age "
                "(12h, 30d, 2w)",
                param_hint="--since",
            ) from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


@app.command()
@exit_on_error()
def history(
    repo_id: RepoArg,
    limit: LimitOption = None,
    since: SinceOption = None,
    newest_first: NewestFirstOption = False,
    as_json: JsonOption = False,
) -> None:
    """Show a repo's stored revisions, oldest first, with the files each one changed."""
    start = since_date(since)
    with stored(repo_id) as store:
        revisions = store.history(repo_id)
        events = store.events(repo_id)
    if start is not None:
        revisions = [rev for rev in revisions if utc(rev.date) >= start]
    if limit is not None:
        revisions = revisions[-limit:]
    # the events of the same span: since the first revision kept, or since --since
    first = utc(revisions[0].date) if revisions and limit is not None else start
    if first is not None:
        events = [e for e in events if e.at is not None and utc(e.at) >= first]
    if newest_first:
        revisions, events = revisions[::-1], events[::-1]
    if as_json:
        print_json({"repo": repo_id, "revisions": revisions, "events": events})
        return
    _history_table(revisions, events)


def _history_table(revisions: list[StoredRevision], events: list[RepoEvent]) -> None:
    table = folding("sha", "date", "title", "changed files", whole=("sha", "date"))
    for rev in revisions:
        title = shown(rev.title) + ("" if rev.reachable else r" \[unreachable]")
        changed = ", ".join(rev.changed[:_FILES_SHOWN])
        if len(rev.changed) > _FILES_SHOWN:
            changed += f" and {len(rev.changed) - _FILES_SHOWN} more"
        table.add_row(rev.sha[:12], to_minute(rev.date), title, shown(changed))
    out.print(table if revisions else "no stored revisions match")
    for event in events:
        out.print(
            f"{to_minute(event.at)} {event.kind.value}: {shown(event.detail)}",
            highlight=False,
            soft_wrap=False,
            overflow="fold",
        )


@app.command()
@exit_on_error()
def show(
    repo_id: RepoArg,
    rev: RevArg,
    as_json: JsonOption = False,
) -> None:
    """Show one stored revision: metadata, model card keys, and every file with its read status.

    Also the changes recorded for it, its estimate (short) and its known advisories.
    """
    with stored(repo_id) as store:
        revision = store.revision(repo_id, rev)
        files = store.files(repo_id, revision.sha)
        found = store.revision_changes(repo_id, revision.sha).changes
        estimate = store.estimate(repo_id, revision.sha)
        advisories = store.advisory_report(repo_id, revision.sha)
    if as_json:
        print_json(
            {
                "revision": revision,
                "files": files,
                "changes": [_without_detail(c) for c in found],
                "estimate": estimate,
                "advisories": plain(advisories) | {"status": advisories.status.value},
            }
        )
        return
    _show_revision(repo_id, revision, found, estimate, advisories)
    table = folding("path", "size", "changed", "content", "header", "note")
    changed = set(revision.changed)
    for f in files:
        note = f.content_error or f.header_error or ""
        table.add_row(
            shown(f.path),
            str(f.size),
            "yes" if f.path in changed else "",
            f.content_status.value if f.content_status else "",
            f.header_status.value if f.header_status else "",
            shown(note),
        )
    out.print(table)


def _without_detail(change: Change) -> dict[str, Any]:
    """A change as JSON, its detail (which `changes --json --detail` prints) left out."""
    body: dict[str, Any] = {k: v for k, v in plain(change).items() if k != "detail"}
    return body | ({} if change.detail is None else {"detail_chars": len(change.detail)})


def _show_revision(
    repo_id: str,
    revision: StoredRevision,
    found: tuple[Change, ...],
    estimate: Estimate | None,
    advisories: AdvisoryReport,
) -> None:
    """What `show` prints before the file table."""
    sha = revision.sha
    lines = [
        f"[bold]{shown(repo_id)}[/] {sha}",
        f"date:       {to_minute(revision.date)}",
        f"authors:    {shown(', '.join(revision.authors))}",
        f"title:      {shown(revision.title)}",
    ]
    if revision.card:
        lines.append(f"card:       {shown(json.dumps(revision.card))}")
    lines.append(f"estimate:   {_estimate_line(estimate)}")
    lines.append(f"advisories: {_advisories_line(advisories)}")
    lines.append(f"changes:    {len(found) or 'none recorded'}")
    for line in lines:
        out.print(line, soft_wrap=False, overflow="fold", highlight=False)
    if found:
        out.print(changes_grid((None, c) for c in found), highlight=False)
    more = f"more: `hubwatch estimate {shown(repo_id)}@{sha[:12]}`, "
    more += f"`hubwatch osv show {shown(repo_id)} {sha[:12]}`"
    out.print(more, soft_wrap=False, overflow="fold", highlight=False)


def _estimate_line(estimate: Estimate | None) -> str:
    """The stored estimate, short: family, parameters, serving and training memory."""
    if estimate is None:
        return "none (no config.json)"
    if not estimate.ok:
        return shown(estimate.error or "cannot estimate")
    params = estimate.params
    parts = [shown(estimate.family or "model")]
    if params.get("total"):
        active = params.get("active", params["total"])
        told = f"{params['total'] / 1e9:,.2f}B parameters"
        parts.append(
            told + (f" ({active / 1e9:,.2f}B active)" if active != params["total"] else "")
        )
    if serving := estimate.serving.get("total"):
        # NOTE: sized at 4,096 tokens (or a shorter maximum); older estimates at the maximum
        tokens = estimate.serving.get("assumptions", {}).get("context tokens", estimate.context)
        parts.append(f"serving {gb(serving)} (bf16, {tokens:,} tokens)")
    trained = [
        f"{name} {gb(memory['total'])}"
        for name, memory in estimate.training.items()
        if memory.get("total")
    ]
    if trained:
        parts.append("training " + ", ".join(trained))
    if estimate.gguf:
        parts.append(f"{len(estimate.gguf)} GGUF model(s)")
    return "; ".join(parts)


def _advisories_line(report: AdvisoryReport) -> str:
    """The revision's known advisories, short: how many apply, which, or why unknown."""
    if report.checked_at is None:
        return "not checked yet (`hubwatch osv sync` checks every revision)"
    named = ", ".join(
        f"{m.advisory_id} ({m.package} {m.version})" if m.version else f"{m.advisory_id}"
        for m in report.matches
    )
    if report.status is AdvisoryStatus.DEGRADED:
        kept = f" ({len(report.matches)} at the last good check: {shown(named)})" if named else ""
        return f"[red]unknown[/]: the last check failed: {shown(report.error)}{kept}"
    said = f"{len(report.matches)} apply: {shown(named)}" if named else "none known apply"
    return f"{said} (checked {to_minute(report.checked_at)} by {shown(report.service)})"
