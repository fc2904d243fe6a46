"""Checks that no module in src/ is over 400 lines and no function over 60; prints the worst."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60
SHOWN = 10


def measure(root: Path) -> tuple[list[tuple[int, str]], list[tuple[int, str]]]:
    """Every module's line count and every function's, each as (lines, where)."""
    modules: list[tuple[int, str]] = []
    functions: list[tuple[int, str]] = []
    for path in sorted(root.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        modules.append((len(text.splitlines()), str(path)))
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                length = (node.end_lineno or node.lineno) - start + 1
                functions.append((length, f"{path}:{node.lineno} {node.name}"))
    return sorted(modules, reverse=True), sorted(functions, reverse=True)


def main(argv: list[str]) -> int:
    root = Path(argv[1] if len(argv) > 1 else "src")
    modules, functions = measure(root)
    bad = False
    for title, rows, limit in (
        ("modules", modules, MAX_MODULE_LINES),
        ("functions", functions, MAX_FUNCTION_LINES),
    ):
        over = [row for row in rows if row[0] > limit]
        bad |= bool(over)
        print(f"largest {title} (limit {limit} lines; {len(over)} over):")
        for lines, where in rows[: max(SHOWN, len(over))]:
            print(f"  {'OVER ' if lines > limit else '     '}{lines:5d}  {where}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
