"""The render worker from a private install (a venv in a 0700 directory) run as root: it drops to
nobody, whose reads of that install fail, and still tells every sandbox escape, every
`raise_exception` and every limit apart (issue 29: they all read as ModuleNotFoundError)."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import venv
from pathlib import Path
from typing import Any

import pytest

from tests.support.require import REQUIRE_ROOT, require
from tests.test_chat_template_sandbox import ESCAPES
from tests.test_security_units import WORKER

MESSAGES = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]
CASES: dict[str, tuple[str, str]] = {
    **{name: (payload, "sandbox violation") for name, payload in ESCAPES.items()},
    "raise_exception": ("{{ raise_exception('no system') }}", "error: TemplateError: no system"),
    "undefined": ("{{ messages[5].content }}", "error: UndefinedError"),
    "syntax": ("{% for %}", "syntax error"),
    "output_limit": ("{{ 'x' * 1000000000 }}", "output limit"),
    "recursion": ("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}", "recursion too deep"),
    "filters": ("{{ 'a b'|wordwrap(1) }}|{{ '<b>x</b>'|striptags }}", "text: a\nb|x"),
}
"""Name → (template, what its answer starts with: a failure's reason, or a conversation's)."""


@pytest.fixture(scope="module")
def private(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(python, render_worker.py) of a venv holding jinja2, inside a directory only root reads."""
    if os.geteuid() != 0:
        require(
            REQUIRE_ROOT,
            "needs root: the worker drops root only when it has it, and only the user it drops "
            "to is kept out of a private install",
        )
    root = tmp_path_factory.mktemp("private")
    root.chmod(0o700)
    venv.create(root / "venv", with_pip=False, symlinks=True)
    [site] = (root / "venv" / "lib").glob("python3*/site-packages")
    for package in ("jinja2", "markupsafe"):
        spec = importlib.util.find_spec(package)
        assert spec is not None and spec.origin is not None
        shutil.copytree(Path(spec.origin).parent, site / package)
    worker = root / "render_worker.py"
    shutil.copy(WORKER, worker)
    return root / "venv" / "bin" / "python", worker


def _request(template: str, marker: Path) -> dict[str, Any]:
    return {
        "template": template.replace("{marker}", str(marker)),
        "conversations": [{"name": "c", "context": {"messages": MESSAGES}}],
        "max_output_chars": 100_000,
        "max_memory_bytes": 1 << 30,
        "cpu_s": 5,
    }


def _said(answer: dict[str, Any]) -> str:
    """The failure's reason, else the conversation's output as `text: …` or `error: …`."""
    if answer["failure"]:
        return str(answer["failure"])
    [(kind, value)] = answer["outputs"]["c"].items()
    return f"{kind}: {value}"


def test_the_forking_worker_renders_every_case_from_a_private_install(
    private: tuple[Path, Path], tmp_path: Path
) -> None:
    python, worker = private
    marker = tmp_path / "pwned"
    lines = "".join(json.dumps(_request(t, marker)) + "\n" for t, _ in CASES.values())
    done = subprocess.run(
        [python, "-I", worker, "--serve"],
        input=lines,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    replies = [json.loads(line) for line in done.stdout.splitlines()]
    said = {
        name: _said(json.loads(reply["answer"])) if reply["status"] == 0 else str(reply)
        for name, reply in zip(CASES, replies, strict=True)
    }
    assert {n: s for n, s in said.items() if not s.startswith(CASES[n][1])} == {}
    assert not marker.exists()


@pytest.mark.parametrize("name", ["mro_subclasses", "raise_exception", "syntax"])
def test_the_one_shot_worker_renders_from_a_private_install(
    private: tuple[Path, Path], tmp_path: Path, name: str
) -> None:
    python, worker = private
    template, expected = CASES[name]
    done = subprocess.run(
        [python, "-I", worker],
        input=json.dumps(_request(template, tmp_path / "pwned")),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert _said(json.loads(done.stdout)).startswith(expected)
