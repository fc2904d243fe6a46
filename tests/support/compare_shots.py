"""Screenshots of the compare page for the docs: the granite history from the chat template fix to
the bf16 upload, full page at 390 and 1440 px wide.

    python -m tests.support.compare_shots [DIR]   # default docs/screenshots
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.conftest import GRANITE_BUNDLE
from tests.support.browser import CHROMIUM, CHROMIUM_ARGS, GRANITE, granite_store, serving

WIDTHS = (390, 1440)


def main(out: Path) -> None:
    os.environ["PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD"] = "1"  # never fetch a browser
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as work:
        clone = Path(work) / "granite"
        subprocess.run(["git", "clone", "-q", str(GRANITE_BUNDLE), str(clone)], check=True)
        store = granite_store(Path(work) / "hubwatch.db", clone, Path(work) / "mirrors")
        by_title = {r.title: r for r in store.history(GRANITE)}
        start = by_title["Updated chat template"].parents[0]
        end = by_title["Added bf16 tensors"].sha
        try:
            with serving(store) as base, sync_playwright() as p:
                browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
                page = browser.new_page()
                for width in WIDTHS:
                    page.set_viewport_size({"width": width, "height": 900})
                    page.goto(f"{base}/repos/{GRANITE}/compare/{start[:12]}..{end[:12]}")
                    shot = out / f"compare-{width}.png"
                    page.screenshot(path=str(shot), full_page=True)
                    print(shot)
                browser.close()
        finally:
            store.close()


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "docs/screenshots"))
