"""Every skip in tests/ goes through `require`: it has a reason and a CI switch that fails it."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.support.require import SWITCHES

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
SKIPPING = {"skip", "skipif", "importorskip", "xfail"}


def _skips(path: Path) -> list[str]:
    """`pytest.skip(…)`, `pytest.mark.skipif(…)`, `pytest.importorskip(…)` and the like."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        f"{path.relative_to(ROOT)}:{node.lineno} {node.attr}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and node.attr in SKIPPING
    ]


def test_every_skip_goes_through_require() -> None:
    allowed = TESTS / "support" / "require.py"
    found = [s for p in sorted(TESTS.rglob("*.py")) if p != allowed for s in _skips(p)]
    assert found == []


def test_ci_sets_every_require_switch_and_contributing_names_it() -> None:
    ci, guide = (ROOT / ".ci" / "run").read_text(), (ROOT / "CONTRIBUTING.md").read_text()
    assert [s for s in SWITCHES if f"{s}=1" not in ci] == []
    assert [s for s in SWITCHES if s not in guide] == []
