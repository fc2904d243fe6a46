"""A module cut into units (functions, methods, a class's own statements, module constants, the
rest of the module's statements), each with fingerprints before and after normalising."""

from __future__ import annotations

import ast
import hashlib
from collections.abc import Iterator
from dataclasses import dataclass

from hubwatch.diff.code.normalize import is_docstring, strip
from hubwatch.diff.code.risky import dotted

_DEF_TYPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
MODULE = "<module>"
"""The unit of the module's own statements that no other unit holds."""


@dataclass(frozen=True, slots=True)
class Param:
    """One parameter of a function: its name, kind and default (as code, or None)."""

    name: str
    kind: str
    """posonly, arg, vararg, kwonly or kwarg."""
    default: str | None


@dataclass(frozen=True, slots=True)
class Unit:
    """A function, a method, a class's own statements, a module constant, or `<module>`."""

    name: str
    """Qualified: `Class.method`, `Class`, `NAME`, `<module>`."""
    line: int
    bare: str
    """Fingerprint of the code as parsed (comments and whitespace never reach it) without
    docstrings, type hints and the text of log, warning and print calls."""
    words: tuple[str, str, str] = ("", "", "")
    """Fingerprints of what `bare` leaves out: its docstrings, its type hints, its log text."""
    params: tuple[Param, ...] | None = None
    """A function's parameters; None for other units."""

    @property
    def raw(self) -> tuple[str, tuple[str, str, str]]:
        """All of it: two units with equal `raw` differ at most in comments and whitespace."""
        return self.bare, self.words


def top(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Module-level statements, looking into `if`, `try` and `with` blocks (a class defined
    inside `try:` is still module level)."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, ast.If | ast.Try | ast.TryStar | ast.With):
            inner = list(stmt.body)
            if isinstance(stmt, ast.If):
                inner += stmt.orelse
            elif isinstance(stmt, ast.Try | ast.TryStar):
                inner += stmt.orelse + stmt.finalbody
                for handler in stmt.handlers:
                    inner += handler.body
            yield from top(inner)


def _own(tree: ast.Module) -> Iterator[tuple[str, list[ast.AST]]]:
    """(name, the nodes it covers) of every unit; a class covers its header and plain
    statements (its methods are units of their own)."""
    module: list[ast.AST] = []
    seen: set[str] = set()
    for stmt in top(tree.body):
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef) and stmt.name not in seen:
            seen.add(stmt.name)
            yield stmt.name, [stmt]
        elif isinstance(stmt, ast.ClassDef) and stmt.name not in seen:
            seen.add(stmt.name)
            plain = [s for s in stmt.body if not isinstance(s, _DEF_TYPES)]
            header = ast.ClassDef(stmt.name, stmt.bases, stmt.keywords, plain, stmt.decorator_list)
            yield stmt.name, [header]
            for member in stmt.body:
                if isinstance(member, _DEF_TYPES):
                    yield f"{stmt.name}.{member.name}", [member]
    for stmt in tree.body:
        if isinstance(stmt, (*_DEF_TYPES, ast.Import, ast.ImportFrom)) or is_docstring(stmt):
            continue
        names = _constant_names(stmt)
        key = ",".join(names)
        if names and key not in seen:
            seen.add(key)
            yield key, [stmt]
        else:
            module.append(stmt)
    yield MODULE, module


def _constant_names(stmt: ast.stmt) -> list[str]:
    if isinstance(stmt, ast.Assign) and all(isinstance(t, ast.Name) for t in stmt.targets):
        return [t.id for t in stmt.targets if isinstance(t, ast.Name)]
    if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
        return [stmt.target.id]
    return []


def _fingerprint(nodes: list[ast.AST]) -> str:
    text = "\n".join(ast.dump(n) for n in nodes)
    return hashlib.blake2b(text.encode(), digest_size=12).hexdigest()


def units(tree: ast.Module) -> dict[str, Unit]:
    """Every unit of `tree`. Strips docstrings, hints and log text from the tree as it goes."""
    found = {}
    for name, nodes in list(_own(tree)):
        words = strip(nodes)
        first = nodes[0] if nodes else None
        found[name] = Unit(
            name,
            getattr(first, "lineno", 1),
            _fingerprint(nodes),
            words,
            _params(first) if isinstance(first, ast.FunctionDef | ast.AsyncFunctionDef) else None,
        )
    return found


def _params(node: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[Param, ...]:
    a = node.args
    positional = [*a.posonlyargs, *a.args]
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(a.defaults))
    defaults += list(a.defaults)
    out = [
        Param(p.arg, "posonly" if i < len(a.posonlyargs) else "arg", _code(d))
        for i, (p, d) in enumerate(zip(positional, defaults, strict=True))
    ]
    if a.vararg:
        out.append(Param(a.vararg.arg, "vararg", None))
    out += [
        Param(p.arg, "kwonly", _code(d)) for p, d in zip(a.kwonlyargs, a.kw_defaults, strict=True)
    ]
    if a.kwarg:
        out.append(Param(a.kwarg.arg, "kwarg", None))
    return tuple(out)


def _code(node: ast.expr | None) -> str | None:
    return None if node is None else ast.unparse(node)


def decorators(node: ast.AST) -> list[str]:
    return [dotted(d) or "?" for d in getattr(node, "decorator_list", ())]
