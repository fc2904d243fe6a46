"""Model references in Python source, read with `ast` (never imported or run)."""

from __future__ import annotations

import ast
from dataclasses import dataclass

from hubwatch.pins.model import Pin, RefKind, locate, looks_like_repo, make_pin

# callee name -> (keyword naming the repo, position of the repo among positional arguments)
CALLS: dict[str, tuple[str, int]] = {
    "from_pretrained": ("pretrained_model_name_or_path", 0),
    "hf_hub_download": ("repo_id", 0),
    "snapshot_download": ("repo_id", 0),
    "SentenceTransformer": ("model_name_or_path", 0),
    "pipeline": ("model", 1),
    "LLM": ("model", 0),
}


@dataclass(frozen=True, slots=True)
class _Value:
    """A string argument as resolved: its text, or why it could not be."""

    text: str | None
    line: int
    unresolved: str | None = None


def scan_python(path: str, raw: bytes) -> list[Pin]:
    """Every recognised call with a repo argument; a file that does not parse finds nothing."""
    try:
        tree = ast.parse(raw, filename=path)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []  # not Python we can read (or a template): nothing to find, nothing to run
    lines = raw.splitlines()
    constants = _constants(tree)
    found: list[Pin] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and (name := _callee(node.func)) in CALLS:
            pin = _pin(node, name, path, lines, constants)
            if pin is not None:
                found.append(pin)
    return sorted(found, key=lambda p: p.line)


def _callee(func: ast.expr) -> str | None:
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else None


def _constants(tree: ast.Module) -> dict[str, ast.Constant]:
    """Module-level `NAME = "text"` (or `NAME: str = "text"`), the last assignment winning."""
    found: dict[str, ast.Constant] = {}
    for stmt in tree.body:
        target: ast.expr | None = None
        value: ast.expr | None = None
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            target, value = stmt.targets[0], stmt.value
        elif isinstance(stmt, ast.AnnAssign):
            target, value = stmt.target, stmt.value
        if isinstance(target, ast.Name) and isinstance(value, ast.Constant):
            if isinstance(value.value, str):
                found[target.id] = value
            else:
                found.pop(target.id, None)
    return found


def _argument(call: ast.Call, keyword: str, position: int | None) -> ast.expr | None:
    for kw in call.keywords:
        if kw.arg == keyword:
            return kw.value
    if position is not None and len(call.args) > position:
        arg = call.args[position]
        return None if isinstance(arg, ast.Starred) else arg
    return None


def _resolve(node: ast.expr, constants: dict[str, ast.Constant]) -> _Value:
    if isinstance(node, ast.Name) and node.id in constants:
        node = constants[node.id]
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return _Value(node.value, node.lineno)
    try:
        shown = ast.unparse(node)
    except RecursionError:  # an expression nested past the stack: named, not printed
        shown = type(node).__name__
    return _Value(None, node.lineno, shown[:200])


def _pin(
    call: ast.Call, name: str, path: str, lines: list[bytes], constants: dict[str, ast.Constant]
) -> Pin | None:
    keyword, position = CALLS[name]
    repo_node = _argument(call, keyword, position)
    if name == "pipeline" and repo_node is None:
        return None  # pipeline("text-generation") picks the task's default model
    if repo_node is None:
        return None
    spelling = f"python:{name}"
    repo = _resolve(repo_node, constants)
    if repo.text is None:
        return Pin(
            None, None, RefKind.UNRESOLVED, path, call.lineno, spelling, None, repo.unresolved
        )
    if not looks_like_repo(repo.text):
        return None  # a local directory or a legacy single-name id
    rev_node = _argument(call, "revision", None)
    if rev_node is None:
        return make_pin(repo.text, None, path, call.lineno, spelling)
    rev = _resolve(rev_node, constants)
    if rev.text is None:
        return Pin(
            repo.text, None, RefKind.UNRESOLVED, path, call.lineno, spelling, None, rev.unresolved
        )
    at = locate(lines, rev.line, rev.line, rev.text)
    return make_pin(repo.text, rev.text, path, call.lineno, spelling, at)
