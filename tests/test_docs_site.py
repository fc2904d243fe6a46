"""The documentation site (mkdocs.yml over docs/) builds with every warning an error."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import yaml

from tests.support.require import REQUIRE_DOCS, require

ROOT = Path(__file__).resolve().parents[1]


def _nav_pages(items: list[object]) -> list[str]:
    pages: list[str] = []
    for item in items:
        value = next(iter(item.values())) if isinstance(item, dict) else item
        pages.extend(_nav_pages(value) if isinstance(value, list) else [str(value)])
    return pages


def test_every_page_of_docs_is_in_the_nav() -> None:
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    pages = sorted(str(p.relative_to(ROOT / "docs")) for p in (ROOT / "docs").glob("*.md"))
    assert sorted(_nav_pages(config["nav"])) == pages
    assert config["strict"] is True
    assert set(config["validation"].values()) == {"warn"}  # strict turns each into an error


def test_the_site_builds_strictly(tmp_path: Path) -> None:
    if importlib.util.find_spec("mkdocs") is None:
        require(REQUIRE_DOCS, "needs MkDocs (pip install -e '.[test]' installs it)")
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert (tmp_path / "site" / "settings" / "index.html").exists()


def test_a_broken_link_fails_the_build(tmp_path: Path) -> None:
    if importlib.util.find_spec("mkdocs") is None:
        require(REQUIRE_DOCS, "needs MkDocs (pip install -e '.[test]' installs it)")
    docs = tmp_path / "docs"  # a check that cannot fail is no check
    docs.mkdir()
    (docs / "index.md").write_text("# Home\n\n[gone](settings.md#no-such-anchor)\n")
    (docs / "settings.md").write_text("# Settings\n")
    config = (ROOT / "mkdocs.yml").read_text().split("\nnav:")[0]
    (tmp_path / "mkdocs.yml").write_text(config + "\n")
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode != 0
    assert "no-such-anchor" in result.stderr
