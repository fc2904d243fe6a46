"""The compare page of the real granite history in headless Chromium: the chat template's renders
side by side at 1440 px, stacked at 390 px, the changed span marked."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hubwatch.models import StoredRevision
from tests.support.browser import CHROMIUM_ARGS, GRANITE, chromium_or_skip, granite_store, serving

# The fix of "Updated chat template": the loop runs over loop_messages, so a system message is
# no longer rendered a second time.
SYSTEM_TURN = "<|start_of_role|>system<|end_of_role|>You are a helpful assistant.<|end_of_text|>\n"


@pytest.fixture(scope="module")
def granite(
    granite_git: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, StoredRevision]]:
    """The granite history served, and its "Updated chat template" revision."""
    work = tmp_path_factory.mktemp("compare")
    store = granite_store(work / "hubwatch.db", granite_git, work / "mirrors")
    [fix] = [r for r in store.history(GRANITE) if r.title == "Updated chat template"]
    try:
        with serving(store) as base:
            yield base, fix
    finally:
        store.close()


@pytest.fixture
def page(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    chromium = chromium_or_skip()
    monkeypatch.setenv("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1")  # never fetch a browser
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(chromium), args=CHROMIUM_ARGS)
        try:
            yield browser.new_page()
        finally:
            browser.close()


def _open(page: Any, granite: tuple[str, StoredRevision], width: int) -> tuple[Any, Any]:
    """The fix's compare page at `width`: the before and after renders of its first pair."""
    base, fix = granite
    page.set_viewport_size({"width": width, "height": 900})
    page.goto(f"{base}/repos/{GRANITE}/compare/{fix.parents[0][:12]}..{fix.sha[:12]}")
    pair = page.locator(".cmp-pair").first
    assert "system + user, generation prompt" in pair.inner_text()
    return pair.locator(".cmp-before pre"), pair.locator(".cmp-after pre")


def test_granite_template_fix_renders_side_by_side_with_the_span_marked(
    page: Any, granite: tuple[str, StoredRevision]
) -> None:
    before, after = _open(page, granite, 1440)
    was, now = before.bounding_box(), after.bounding_box()
    assert was["x"] + was["width"] <= now["x"]  # before on the left, after on the right
    assert abs(was["y"] - now["y"]) < 1 and was["width"] > 400
    was_text, now_text = before.inner_text(), after.inner_text()
    assert was_text.count(SYSTEM_TURN) == 2 and now_text.count(SYSTEM_TURN) == 1
    [marked] = before.locator("del").all_inner_texts()
    assert after.locator("ins").count() == 0  # nothing was added, only the repeat removed
    # the marked text is the difference: the system turn (as aligned), and nothing else
    assert len(marked) == len(SYSTEM_TURN) and marked in SYSTEM_TURN * 2
    assert was_text.replace(marked, "", 1) == now_text
    assert page.locator(".cmp-diff mark").first.inner_text() == "loop_"  # in the JSON line


def test_compare_page_fits_a_phone_with_the_renders_stacked(
    page: Any, granite: tuple[str, StoredRevision]
) -> None:
    before, after = _open(page, granite, 390)
    was, now = before.bounding_box(), after.bounding_box()
    assert now["y"] >= was["y"] + was["height"]  # after below before
    assert now["x"] + now["width"] <= 390
    assert page.evaluate("document.documentElement.scrollWidth") <= 390  # no sideways scroll
