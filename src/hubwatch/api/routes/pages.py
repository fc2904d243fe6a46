"""Server-rendered pages: the tracked repos, a repo's timeline, one revision, two compared."""

from __future__ import annotations

from http import HTTPStatus
from typing import Annotated, Any

from fastapi import APIRouter, Depends, HTTPException, Query
from fastapi.responses import HTMLResponse, RedirectResponse
from jinja2 import Environment, PackageLoader
from markupsafe import Markup

from hubwatch.api.charts import line_chart
from hubwatch.api.compare_view import (
    batch_cell,
    batch_rows,
    by_severity,
    diff_lines,
    estimate_rows,
    gb,
    tensor_reports,
)
from hubwatch.api.convert import advisory_url
from hubwatch.api.deps import DiffersDep, StoreDep, repo_path, require_reader
from hubwatch.api.filters import FilterDep, query_string
from hubwatch.api.routes.lineage import derivative_public, missed_public
from hubwatch.api.trends import METRICS, shown, trend_rows, trend_series
from hubwatch.diff import char_pieces
from hubwatch.estimator.table import legend
from hubwatch.models import Severity, redact_url
from hubwatch.models.derivatives import worst_missed
from hubwatch.models.timestamps import to_minute
from hubwatch.store.lineage import LineageStore
from hubwatch.tracker.comparison import compare_stored

router = APIRouter(tags=["pages"], dependencies=[Depends(require_reader)])

# NOTE: a plain (not sandboxed) environment: these are our templates. Autoescape is on so
# everything from upstream (titles, paths, rendered chat templates) is shown as text.
_env = Environment(loader=PackageLoader("hubwatch.api", "templates"), autoescape=True)
# No script runs on these pages at all, whatever slips through.
_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; base-uri 'none'"


def _gib(value: Any) -> str:
    return f"{value / 2**30:,.2f} GiB" if isinstance(value, int | float) else "?"


def after_path(summary: str | None, path: str | None) -> str:
    """A change's summary without the `path: ` it opens with, where the page names the path
    beside it already (a summary names its file for the CLI, feeds and webhooks)."""
    summary = summary or ""
    return summary.removeprefix(f"{path}: ") if path else summary


_env.globals.update(
    when=to_minute,
    gb=gb,
    gib=_gib,
    batch=batch_cell,
    advisory_url=advisory_url,
    table_legend=legend,
)
_env.filters["redact_url"] = redact_url
_env.filters["after_path"] = after_path


def _page(template: str, code: int = 200, **context: Any) -> HTMLResponse:
    html = _env.get_template(template).render(**context)
    return HTMLResponse(html, code, headers={"content-security-policy": _CSP})


def error_page(status: int, detail: str, headers: dict[str, str] | None = None) -> HTMLResponse:
    """The page a browser is shown for an error `status` (404, 422, 500…), `detail` as text."""
    response = _page("error.html", status, status=status, phrase=_phrase(status), detail=detail)
    response.headers.update(headers or {})
    return response


def _phrase(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Error"


INDEX_PAGE_SIZE = 100
"""Repos on one page of the index."""


@router.get("/", response_class=HTMLResponse, include_in_schema=False)
def index(store: StoreDep, page: Annotated[int, Query(ge=1, le=1_000_000)] = 1) -> HTMLResponse:
    offset = (page - 1) * INDEX_PAGE_SIZE
    found = store.repos_page(None, INDEX_PAGE_SIZE + 1, offset)  # one more: is there a next?
    return _page(
        "index.html",
        repos=found[:INDEX_PAGE_SIZE],
        page=page,
        first=offset + 1,
        prev_url=f"?page={page - 1}" if page > 1 else None,
        next_url=f"?page={page + 1}" if len(found) > INDEX_PAGE_SIZE else None,
    )


PAGE_SIZE = 50
"""Revisions on one page of a repo's timeline."""


@router.get("/repos/{org}/{name}", response_class=HTMLResponse, include_in_schema=False)
def timeline(
    org: str,
    name: str,
    store: StoreDep,
    where: FilterDep,
    page: Annotated[int, Query(ge=1, le=1_000_000)] = 1,
) -> HTMLResponse:
    repo_id = repo_path(org, name)
    repo = store.get_repo(repo_id)
    found = store.timeline(repo_id, where, offset=(page - 1) * PAGE_SIZE, limit=PAGE_SIZE)
    points = store.trend(repo_id)
    return _page(
        "repo.html",
        repo=repo,
        revisions=[
            (rc.revision, sorted(rc.changes, key=lambda c: -c.severity.rank))
            for rc in found.revisions
        ],
        where=where,
        page=page,
        prev_url=query_string(where, page=page - 1) if page > 1 else None,
        next_url=query_string(where, page=page + 1) if found.more else None,
        severities=[s.value for s in Severity],
        charts=[(s.title, Markup(line_chart(s))) for s in trend_series(points)],
        rows=trend_rows(points),
        metrics=METRICS,
        shown=shown,
        events=store.events(repo_id),
        **_lineage(store, repo_id),
    )


def _lineage(store: LineageStore, repo_id: str) -> dict[str, Any]:
    """What the repo page shows of lineage: its own (a derivative), its derivatives (a base)."""
    lineage = store.lineage_of(repo_id)
    derivatives = [derivative_public(d) for d in store.derivatives_of(repo_id)]
    if lineage is None:
        return {"lineage": None, "missed": [], "worst": None, "derivatives": derivatives}
    missed = [missed_public(m) for m in lineage.missed]
    worst = worst_missed(lineage)
    return {"lineage": lineage, "missed": missed, "worst": worst, "derivatives": derivatives}


@router.get(
    "/repos/{org}/{name}/revisions/{rev}", response_class=HTMLResponse, include_in_schema=False
)
def revision_page(org: str, name: str, rev: str, store: StoreDep) -> HTMLResponse:
    repo_id = repo_path(org, name)
    revision = store.revision(repo_id, rev)
    recorded = store.revision_changes(repo_id, revision.sha)
    estimate = store.estimate(repo_id, revision.sha)
    gpus: list[str] = []
    if estimate is not None:
        for row in estimate.max_batch.values():
            gpus += [g for g in row if g not in gpus]
    files = store.files(repo_id, revision.sha)
    # NOTE: the code a config's auto_map names ships as .py files beside it
    custom_code = [f.path for f in files if f.path.endswith(".py")]
    return _page(
        "revision.html",
        repo_id=repo_id,
        revision=revision,
        base=recorded.base,
        changes=sorted(recorded.changes, key=lambda c: -c.severity.rank),
        estimate=estimate,
        gpus=gpus,
        advisories=store.advisory_report(repo_id, revision.sha),
        files=files,
        custom_code=custom_code,
        changed=set(revision.changed),
    )


# -- compare any two revisions ------------------------------------------------------------------

_env.globals.update(char_pieces=char_pieces, diff_lines=diff_lines)
Rev = Annotated[str, Query(min_length=4, max_length=64, pattern="^[0-9a-fA-F]+$")]


@router.get("/repos/{org}/{name}/compare", include_in_schema=False)
def compare_form(org: str, name: str, a: Rev, b: Rev) -> RedirectResponse:
    """Where the repo page's form (GET, no script) sends its two picks."""
    return RedirectResponse(f"/repos/{repo_path(org, name)}/compare/{a}..{b}", status_code=303)


@router.get(
    "/repos/{org}/{name}/compare/{spec}", response_class=HTMLResponse, include_in_schema=False
)
def compare_page(
    org: str, name: str, spec: str, store: StoreDep, differs: DiffersDep
) -> HTMLResponse:
    repo_id = repo_path(org, name)
    store.get_repo(repo_id)  # an unknown repo: 404
    rev_a, dots, rev_b = spec.partition("..")
    if not dots or not rev_a or not rev_b:
        raise HTTPException(404, "compare takes A..B: two revisions")
    found = compare_stored(store, repo_id, rev_a, rev_b, differs)
    before, after = found.estimates
    gpus, batches = batch_rows(before, after)
    return _page(
        "compare.html",
        c=found,
        groups=by_severity(found.changes),
        estimates=estimate_rows(before, after),
        gpus=gpus,
        batches=batches,
        tensors=tensor_reports(found.changes),
    )
