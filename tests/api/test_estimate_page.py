"""The revision page's estimate: the same table as `hubwatch estimate --markdown` for the seed-like
model, the checkpoint delta with its percentage and why, the custom-code warning, in Chromium."""

from __future__ import annotations

import dataclasses
import json
import os
import re
from pathlib import Path

import pytest

from hubwatch.api import create_app
from hubwatch.estimator import estimate_json, read_model
from hubwatch.models import RepoRef, SourceKind
from hubwatch.settings import Settings
from hubwatch.store.sql import SqlStore
from tests.estimator.test_table import SEED, SNAPSHOTS
from tests.support.asgi import InProcess
from tests.support.browser import CHROMIUM, CHROMIUM_ARGS
from tests.support.require import REQUIRE_BROWSER, require
from tests.test_store import sha, snapshot

REPO = RepoRef("org/seed", SourceKind.HUB)
SCREENSHOT = Path(__file__).parents[2] / "docs" / "screenshots" / "revision-estimate.png"


def _header() -> bytes:
    """A checkpoint holding the model's tensors and, as many exports do, the tied embedding
    again as lm_head."""
    model = read_model(json.loads(SEED.read_text()))
    text = model.text
    tensors = {f"model.{p.module}.weight": [p.numel] for p in text.before}
    tensors |= {f"model.layers.{i}.block.weight": [x.numel] for i, x in enumerate(text.layers)}
    tensors |= {f"model.{p.module}.weight": [p.numel] for p in text.after}
    tensors["lm_head.weight"] = [128_256, 2048]
    header = {k: {"dtype": "BF16", "shape": v, "data_offsets": [0, 0]} for k, v in tensors.items()}
    return json.dumps(header).encode()


@pytest.fixture
def page(tmp_path: Path) -> str:
    store = SqlStore(f"sqlite:///{tmp_path / 'hubwatch.db'}")
    store.start()
    store.add_repo(REPO)
    config = SEED.read_bytes()
    files = {"config.json": config, "modeling_seed.py": b"import torch\n"}
    snap = snapshot(1, files)
    estimate = estimate_json(config, {"model.safetensors": _header()})
    store.add_revision(REPO.repo_id, dataclasses.replace(snap, estimate=estimate))
    html = InProcess(create_app(store, Settings())).get(f"/repos/org/seed/revisions/{sha(1)}")
    store.close()
    assert html.status_code == 200
    return html.text


def _markdown_cells() -> list[list[str]]:
    lines = (SNAPSHOTS / "seed-table.md").read_text().splitlines()
    return [
        [c.strip() for c in line.strip("|").split("|")] for line in lines[:6] if "---" not in line
    ]


def _cells(html: str) -> list[list[str]]:
    table = html[html.index('<table id="estimate">') : html.index("</table>")]
    rows = []
    for row in re.findall(r"<tr.*?</tr>", table, re.S):
        cells = re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", row, re.S)
        rows.append([re.sub(r"<br>.*", "", c, flags=re.S).strip() for c in cells])
    return rows


def test_the_page_shows_the_clis_table(page: str) -> None:
    assert _cells(page) == _markdown_cells()


def test_the_page_shows_the_checkpoint_delta_custom_code_and_the_legend(page: str) -> None:
    assert "the config gives 1,235,814,400 (+262,668,288, +21.25%)" in page
    assert "the tied embedding is stored twice" in page
    assert 'id="custom-code"' in page and "<code>modeling_seed.py</code>" in page
    assert "4,096 tokens per sequence" in page and "maximum: 131,072" in page
    assert "conservative peak (estimate x1.17" in page and "priced job: 1 epoch(s)" in page
    assert "cost, full fine-tune: " in page and "no logits term" not in page


def test_the_revision_page_in_chromium(page: str, monkeypatch: pytest.MonkeyPatch) -> None:
    if not CHROMIUM.exists():
        require(REQUIRE_BROWSER, f"needs Debian's chromium at {CHROMIUM} (apt install chromium)")
    monkeypatch.setenv("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1")  # never fetch a browser
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            tab = browser.new_page(viewport={"width": 1280, "height": 900})
            tab.set_content(page)
            table = tab.locator("#estimate")
            shown = [
                [cell.split("\n")[0].strip() for cell in row.locator("th, td").all_inner_texts()]
                for row in table.locator("tr").all()
            ]
            assert shown == _markdown_cells()
            assert tab.locator('#estimate td[data-verdict="2 cards"]').count() == 2
            assert tab.locator("#custom-code").is_visible()
            top = tab.locator("h2", has_text="Estimate").bounding_box()
            end = tab.locator("#checkpoint-why").bounding_box()
            assert top is not None and end is not None
            height = end["y"] + end["height"] - top["y"] + 24
            clip = {"x": 0, "y": top["y"] - 12, "width": 1280, "height": height}
            shot = tab.screenshot(clip=clip, full_page=True)  # the estimate section alone
            assert len(shot) > 10_000
            if os.environ.get("HUBWATCH_UPDATE_SNAPSHOTS"):
                SCREENSHOT.write_bytes(shot)
        finally:
            browser.close()
