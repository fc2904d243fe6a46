"""The pages: rendered on SQLite and PostgreSQL, upstream text escaped, checked in Chromium."""

from __future__ import annotations

import dataclasses
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from hubwatch.api import create_app
from hubwatch.api.routes.pages import after_path
from hubwatch.models import Change, CommitSha, Severity
from hubwatch.settings import Settings
from hubwatch.store.sql import SqlStore
from tests.support.asgi import InProcess
from tests.support.browser import CHROMIUM_ARGS, chromium_or_skip, serving
from tests.support.served import CONFIG, REPO, SCRIPT, fill
from tests.test_store import sha, snapshot

ESCAPED = "&lt;script&gt;document.title=&#39;pwned&#39;&lt;/script&gt;"


@pytest.fixture
def shas(store: SqlStore) -> list[CommitSha]:
    return fill(store)


@pytest.fixture
def api(store: SqlStore, shas: list[CommitSha]) -> InProcess:
    return InProcess(create_app(store, Settings()))


def test_index_lists_the_tracked_repos(api: InProcess) -> None:
    page = api.get("/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert 'href="/repos/org/model"' in page.text and 'href="/repos/other/thing"' in page.text


def test_timeline_shows_each_change_with_its_severity(api: InProcess, shas: list[str]) -> None:
    page = api.get("/repos/org/model").text
    at = [page.index(f"/revisions/{sha}") for sha in shas]
    assert at[2] < at[1] < at[0]  # newest first
    assert 'class="sev sev-breaking">breaking</span> <code>generation.stop_tokens</code>' in page
    assert "org/model became gated" in page


def test_revision_page_has_diffs_estimate_and_advisories(api: InProcess, shas: list[str]) -> None:
    page = api.get(f"/repos/org/model/revisions/{shas[2]}").text
    assert 'id="estimate"' in page and "H100" in page
    assert "PYSEC-2024-227" in page and 'href="/api/v1/advisories/PYSEC-2024-227.json"' in page
    assert '<pre class="detail">' in page and "tokenizer_config.json" in page


def test_upstream_markup_is_escaped_everywhere(api: InProcess, shas: list[str]) -> None:
    for url in ("/repos/org/model", f"/repos/org/model/revisions/{shas[2]}"):
        response = api.get(url)
        assert SCRIPT not in response.text
        assert ESCAPED in response.text
        assert "default-src 'none'" in response.headers["content-security-policy"]


def test_a_change_names_its_file_once(store: SqlStore, shas: list[str]) -> None:
    located = Change(
        "chat_template.rendered",
        Severity.BEHAVIOR,
        "tokenizer_config.json: the chat template renders 2 of 6 conversations differently",
        "tokenizer_config.json",
    )
    snap = snapshot(4, {"config.json": CONFIG, "tokenizer_config.json": b"[]"}, parent=3)
    store.add_revision(REPO.repo_id, dataclasses.replace(snap, changes=(located,), base=sha(3)))
    page = InProcess(create_app(store, Settings())).get(f"/repos/org/model/revisions/{sha(4)}")
    assert (
        "<code>chat_template.rendered</code> in <code>tokenizer_config.json</code>: the chat "
        "template renders 2 of 6 conversations differently" in page.text
    )
    assert page.text.count("tokenizer_config.json: ") == 0


@pytest.mark.parametrize(
    ("summary", "path", "shown"),
    [
        ("config.json: eos 1 → 2", "config.json", "eos 1 → 2"),
        ("Weights changed: 2 file(s)", "model.safetensors", "Weights changed: 2 file(s)"),
        ("config.json: x", None, "config.json: x"),
        ("sub/config.json: x", "config.json", "sub/config.json: x"),  # another file: kept
        (None, "config.json", ""),
    ],
)
def test_a_summary_loses_only_the_path_the_page_shows(
    summary: str | None, path: str | None, shown: str
) -> None:
    assert after_path(summary, path) == shown


def test_unknown_pages_answer_404(api: InProcess) -> None:
    assert api.get("/repos/org/unknown").status_code == 404
    assert api.get("/repos/org/model/revisions/abc123").status_code == 404


# -- headless Chromium -------------------------------------------------------------------------


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, list[CommitSha]]]:
    store = SqlStore(f"sqlite:///{tmp_path / 'hubwatch.db'}")
    store.start()
    shas = fill(store)
    with serving(store) as base:
        yield base, shas
    store.close()


@pytest.fixture
def chromium() -> Path:
    return chromium_or_skip()


def test_pages_render_in_headless_chromium(
    chromium: Path,
    served: tuple[str, list[CommitSha]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1")  # never fetch a browser
    from playwright.sync_api import sync_playwright

    base, shas = served
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(chromium), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1200, "height": 900})
            errors: list[str] = []
            page.on("pageerror", lambda exc: errors.append(str(exc)))

            page.goto(f"{base}/")
            assert page.locator("#repos tr").count() == 3  # the header and two repos
            assert page.title() == "hubwatch: tracked repos"

            page.goto(f"{base}/repos/org/model")
            assert page.locator("#timeline .rev").count() == 3
            assert SCRIPT in page.locator("#timeline").inner_text()  # shown as text
            assert page.title() == "org/model: timeline"  # the upstream script did not run

            page.goto(f"{base}/repos/org/model/revisions/{shas[2]}")
            detail = page.locator("pre.detail").first.inner_text()
            assert SCRIPT in detail
            assert page.locator("#changes script").count() == 0
            assert "pwned" not in page.title()
            assert page.locator("#estimate tr").count() >= 5  # header + four workloads
            assert page.locator("#advisories").inner_text().count("PYSEC-2024-227") == 1
            shot = tmp_path / "revision.png"
            page.screenshot(path=str(shot), full_page=True)
            assert shot.stat().st_size > 10_000
            if keep := os.environ.get("HUBWATCH_SCREENSHOT_DIR"):
                shutil.copy(shot, Path(keep) / "revision.png")
            assert errors == []
        finally:
            browser.close()
