"""Guards of the code's shape: no helper written twice in src/ (the same body under two names)."""

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
