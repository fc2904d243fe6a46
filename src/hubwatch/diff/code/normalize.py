"""Edits of parsed code, in place, that take away what cannot change what it does (docstrings,
type hints, the text of log, warning and print calls), keeping a fingerprint of each."""

from __future__ import annotations

import ast
import hashlib
from collections.abc import Iterable

LOG_METHODS = frozenset(
    {"debug", "info", "warning", "warn", "error", "exception", "critical", "fatal", "log"}
    | {"warning_once", "info_once", "warning_advice"}
)
"""Methods of a logger whose message is only text for people."""
_LOGGERS = frozenset({"logger", "log", "logging", "_logger", "LOGGER", "LOG", "_LOGGER"})
_SCOPES = (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)


def is_docstring(stmt: ast.stmt) -> bool:
    return (
        isinstance(stmt, ast.Expr)
        and isinstance(stmt.value, ast.Constant)
        and isinstance(stmt.value.value, str)
    )


def is_log_call(call: ast.Call) -> bool:
    """`logger.warning(...)`, `logging.info(...)`, `warnings.warn(...)`, `print(...)`."""
    func = call.func
    if isinstance(func, ast.Name):
        return func.id == "print"
    if not isinstance(func, ast.Attribute):
        return False
    owner = func.value
    if isinstance(owner, ast.Name) and owner.id == "warnings":
        return func.attr == "warn"
    name = owner.attr if isinstance(owner, ast.Attribute) else getattr(owner, "id", "")
    return func.attr in LOG_METHODS and (name in _LOGGERS or name.endswith("logger"))


def strip(roots: Iterable[ast.AST]) -> tuple[str, str, str]:
    """Remove docstrings and type hints and blank log text under `roots`, in place; return a
    fingerprint of each of the three, so that which of them changed can be told."""
    docs: list[str] = []
    hints: list[str] = []
    logs: list[str] = []
    for root in roots:
        for node in ast.walk(root):
            if isinstance(node, ast.arg):
                if node.annotation is not None:
                    hints.append(ast.dump(node.annotation))
                    node.annotation = None
            elif isinstance(node, ast.Call):
                if is_log_call(node):
                    logs += [ast.dump(a) for a in node.args]
                    node.args = [_blank(a) for a in node.args]
            elif type(node) in _BODIES:  # only statements hold docstrings and `x: T = v`
                _strip_statements(node, docs, hints)
    return _hash(docs), _hash(hints), _hash(logs)


def _strip_statements(node: ast.AST, docs: list[str], hints: list[str]) -> None:
    if isinstance(node, _SCOPES) and node.body and is_docstring(node.body[0]):
        docs.append(ast.dump(node.body[0]))
        node.body = node.body[1:] or [ast.Pass()]
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.returns:
        hints.append(ast.dump(node.returns))
        node.returns = None
    for field in ("body", "orelse", "finalbody"):
        statements = getattr(node, field, None)
        if isinstance(statements, list) and any(isinstance(s, ast.AnnAssign) for s in statements):
            hints += [ast.dump(s.annotation) for s in statements if isinstance(s, ast.AnnAssign)]
            setattr(node, field, [_unannotated(s) for s in statements])


_BODIES = frozenset(
    {ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.If, ast.For, ast.AsyncFor,
     ast.While, ast.With, ast.AsyncWith, ast.Try, ast.TryStar, ast.ExceptHandler,
     ast.match_case, ast.Module}
)  # fmt: skip


def _hash(parts: list[str]) -> str:
    return hashlib.blake2b("\n".join(parts).encode(), digest_size=8).hexdigest() if parts else ""


def _unannotated(stmt: ast.stmt) -> ast.stmt:
    if not isinstance(stmt, ast.AnnAssign):
        return stmt
    if stmt.value is None:
        return ast.Expr(ast.Name(ast.unparse(stmt.target), ast.Load()))
    return ast.Assign([stmt.target], stmt.value)


def _blank(node: ast.expr) -> ast.expr:
    if isinstance(node, ast.JoinedStr) or (
        isinstance(node, ast.Constant) and isinstance(node.value, str)
    ):
        return ast.Constant("")
    if isinstance(node, ast.BinOp):  # "text" + str(x), "%s" % x
        return ast.BinOp(_blank(node.left), node.op, _blank(node.right))
    return node
