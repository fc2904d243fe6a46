"""Differ plugins: found through the `hubwatch.differs` entry points, broken ones skipped."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from hubwatch.diff import DIFFERS
from hubwatch.diff.plugins import load_differs
from tests.support.gitrepo import CommitSpec, make_repo
from tests.test_cli import run

TOY = """
from hubwatch.models import Change, Severity

NOT_A_DIFFER = 42


def diff_toy(old, new):
    return [Change("toy.seen", Severity.INFO, "the toy differ saw this revision")]
"""
BROKEN = 'raise RuntimeError("this plugin is broken")\n'
MODULES = ("toy_differ", "broken_differ")


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A folder on sys.path where distributions are installed, as site-packages would be."""
    root = tmp_path / "site"
    root.mkdir()
    (root / "toy_differ.py").write_text(TOY)
    (root / "broken_differ.py").write_text(BROKEN)
    monkeypatch.syspath_prepend(str(root))
    yield root
    for module in MODULES:
        sys.modules.pop(module, None)


def install(site: Path, entry_points: str, name: str = "toy_differ") -> None:
    """Install a distribution named `name` whose metadata declares `entry_points`."""
    info = site / f"{name}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(entry_points)


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {"HUBWATCH_DATA_DIR": str(tmp_path / "data"), "HUBWATCH_LOG_LEVEL": "ERROR"}


@pytest.mark.parametrize(
    "broken",
    ["", "broken = broken_differ:diff\n"],
    ids=["alone", "beside-a-broken-plugin"],
)
def test_a_plugin_differ_shows_in_hubwatch_changes(
    site: Path, env: dict[str, str], tmp_path: Path, broken: str
) -> None:
    install(site, f"[hubwatch.differs]\n{broken}toy = toy_differ:diff_toy\n")
    make_repo(
        tmp_path / "up",
        [
            CommitSpec({"config.json": b"{}"}, message="one"),
            CommitSpec({"config.json": b'{"a": 1}'}, message="two"),
        ],
    )
    code, _, stderr = run(env, "track", "org/m", "--source", "git", "--url", str(tmp_path / "up"))
    assert code == 0, stderr  # a broken plugin never stops tracking
    code, stdout, stderr = run(env, "changes", "org/m")
    assert code == 0, stderr
    assert stdout.count("toy.seen") == 2  # one per revision
    assert "files.added" in stdout and "config.other" in stdout  # the built-ins run beside it
    assert "diff.failed" not in stdout


@pytest.mark.parametrize(
    ("entry_point", "error"),
    [
        ("broken = broken_differ:diff", "RuntimeError: this plugin is broken"),
        ("missing = toy_differ:no_such_name", "AttributeError"),
        ("absent = no_such_module:diff", "ModuleNotFoundError"),
        ("number = toy_differ:NOT_A_DIFFER", "int is not callable"),
        ("config = toy_differ:diff_toy", "already taken"),
    ],
)
def test_a_broken_plugin_is_skipped_and_logged(site: Path, entry_point: str, error: str) -> None:
    install(site, f"[hubwatch.differs]\n{entry_point}\ntoy = toy_differ:diff_toy\n")
    with capture_logs() as logs:
        differs = load_differs()
    name = entry_point.split(" = ")[0]
    assert differs == {**DIFFERS, "toy": differs["toy"]}  # built-ins kept, the toy added
    assert differs["toy"].__module__ == "toy_differ"
    failed = [e for e in logs if e["event"] == "differ_plugin_failed"]
    assert [e["plugin"] for e in failed] == [name]
    assert error in failed[0]["error"] and failed[0]["log_level"] == "warning"
    assert "toy_differ" in failed[0]["source"]


def test_without_plugins_the_built_ins_are_the_differs() -> None:
    differs = load_differs()
    assert differs == DIFFERS and differs is not DIFFERS
