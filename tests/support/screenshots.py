"""Writes the screenshots docs/screenshots/ keeps (repo-charts-390.png, revision-1440.png…):
the browser checks of tests/api/test_browser.py, run on their showcase pages only.

    python -m tests.support.screenshots
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def main() -> int:
    """Run the showcase pages' checks with HUBWATCH_SCREENSHOT_DIR set; pytest's exit code."""
    from tests.api.test_browser import SCREENSHOTS

    target = ROOT / "docs" / "screenshots"
    os.environ["HUBWATCH_SCREENSHOT_DIR"] = str(target)
    os.environ["HUBWATCH_REQUIRE_BROWSER"] = "1"  # a missing chromium fails, never skips
    chosen = " or ".join(sorted(SCREENSHOTS))  # the test ids hold the page names
    test = str(ROOT / "tests" / "api" / "test_browser.py")
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", test, "-k", chosen]
    return subprocess.run(command, cwd=ROOT, check=False).returncode


if __name__ == "__main__":
    sys.exit(main())
