"""Every page in Chromium at a phone's width and a desktop's: no horizontal overflow, no console
error, no serious accessibility violation (axe-core); screenshots of the showcase pages."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from hubwatch.models import CommitSha
from hubwatch.store.sql import SqlStore
from tests.support.browser import (
    CHROMIUM,
    CHROMIUM_ARGS,
    blocking_violations,
    fill_every_page,
    overflow,
    serving,
)
from tests.support.require import REQUIRE_BROWSER, require

BROWSER_PAGES: list[tuple[str, str]] = [
    ("index", "/"),
    ("repo-charts", "/repos/org/growing?severity=breaking"),
    ("repo", "/repos/org/model"),
    ("lineage", "/repos/other/thing"),
    ("revision", "/repos/org/model/revisions/{revision}"),
    ("compare", "/repos/org/model/compare/{base}..{head}"),
    ("error", "/repos/org/unknown"),
]
"""(name, URL) of each page checked; `{revision}`, `{base}` and `{head}` in a URL are filled
with shas of `fill_every_page` (org/model's newest; its oldest and newest)."""
WIDTHS = (390, 1440)
"""A phone (iPhone 12 to 15) and a desktop."""
SCREENSHOTS = frozenset({"repo-charts", "revision"})
"""The pages whose screenshots docs/screenshots/ keeps, as NAME-WIDTH.png
(HUBWATCH_SCREENSHOT_DIR=docs/screenshots: tests/support/screenshots.py)."""


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, dict[str, CommitSha]]]:
    """One server for every page and width: the pages only read."""
    store = SqlStore(f"sqlite:///{tmp_path_factory.mktemp('site') / 'hubwatch.db'}")
    store.start()
    shas = fill_every_page(store)
    with serving(store) as base:
        yield base, shas
    store.close()


@pytest.fixture(scope="module")
def browser(site: object) -> Iterator[object]:
    if not CHROMIUM.exists():
        require(REQUIRE_BROWSER, f"needs Debian's chromium at {CHROMIUM} (apt install chromium)")
    os.environ["PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD"] = "1"  # never fetch a browser
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize(("name", "url"), BROWSER_PAGES, ids=[n for n, _ in BROWSER_PAGES])
def test_page_fits_has_no_errors_and_no_serious_violations(
    browser: object,
    site: tuple[str, dict[str, CommitSha]],
    name: str,
    url: str,
    width: int,
    tmp_path: Path,
) -> None:
    base, shas = site
    page = browser.new_page(viewport={"width": width, "height": 900})  # type: ignore[attr-defined]
    try:
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        response = page.goto(base + url.format(**shas))
        assert response is not None
        assert response.status == (404 if name == "error" else 200)
        assert overflow(page) == 0, f"{name} is wider than {width} px"
        assert blocking_violations(page) == []
        # the error page's 404 is the one console line a browser writes for it
        assert [e for e in errors if "404" not in e or name != "error"] == []
        shot = tmp_path / f"{name}-{width}.png"
        page.screenshot(path=str(shot), full_page=True)
        assert shot.stat().st_size > 5_000
        if name in SCREENSHOTS and (keep := os.environ.get("HUBWATCH_SCREENSHOT_DIR")):
            shutil.copy(shot, Path(keep) / shot.name)
    finally:
        page.close()
