"""Guards of the code's shape: no helper written twice in src/ (the same body under two names),
one arrow in the text it writes for people."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "hubwatch"
MIN_BODY = 60
"""Bodies shorter than this (as dumped by ast) are too small to call a helper written twice."""


def _body(node: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    statements = node.body
    if (
        statements
        and isinstance(statements[0], ast.Expr)
        and isinstance(statements[0].value, ast.Constant)
    ):
        statements = statements[1:]  # the docstring says nothing about what the code does
    return "".join(ast.dump(s, annotate_fields=False) for s in statements)


def function_bodies() -> dict[str, list[str]]:
    """Every function body in src/ of some size, with the places it is written."""
    seen: dict[str, list[str]] = defaultdict(list)
    for path in sorted(SRC.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                body = _body(node)
                if len(body) >= MIN_BODY:
                    seen[body].append(f"{path.relative_to(SRC)}:{node.lineno} {node.name}")
    return seen


def test_no_function_body_is_written_twice() -> None:
    twice = [places for places in function_bodies().values() if len(places) > 1]
    assert twice == []


def _docstrings(tree: ast.Module) -> set[int]:
    """The ids of the strings that stand alone (docstrings, attribute docstrings): text for the
    code's readers, where `key -> value` describes a mapping."""
    return {
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
    }


def test_text_for_people_writes_before_and_after_with_one_arrow() -> None:
    """Summaries, details and messages write `a → b`, never `a -> b` beside it."""
    ascii_arrows = []
    for path in sorted(SRC.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skip = _docstrings(tree)
        for node in ast.walk(tree):
            is_text = isinstance(node, ast.Constant) and isinstance(node.value, str)
            if is_text and id(node) not in skip and " -> " in node.value:
                ascii_arrows.append(f"{path.relative_to(SRC)}:{node.lineno} {node.value!r}")
    assert ascii_arrows == []
