"""The absolute imports of custom code, found without running it, cached by blob.

Small files are parsed with `ast` (exact). A large file is scanned line by line instead: `ast`
takes about 0.2 GB of memory and seconds per MB of source, and one 5 MB file shared by every
revision of a repo was parsed again for each (issue 19). The scan keeps what matters here: the
top-level module of each `import` / `from … import` statement and whether it sits in a `try`.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from hubwatch.caching import BoundedCache

MAX_AST_BYTES = 256 * 1024
"""Sources up to this size are parsed with `ast`; larger ones are scanned by lines."""
MAX_ENTRIES = 4096
"""Blobs whose imports the cache remembers (least recently used dropped first)."""
MAX_MODULES = 1000
"""Imports kept per file: a file importing more is cut here (and says so)."""

Imports = tuple[tuple[str, bool], ...]
"""(module, inside a try) of each absolute import, in order of first appearance."""

_IMPORT = re.compile(r"^([ \t]*)(import|from)[ \t\\(]")
_TRY = re.compile(r"^([ \t]*)try[ \t]*:")
_HANDLER = re.compile(r"^[ \t]*(except|else|finally)\b")
_QUOTES = re.compile(r"\\.|\"\"\"|'''|\"|'|#")
_WORDS = re.compile(r"import|from|try|\"\"\"|'''")


def imported_modules(source: str) -> list[tuple[str, bool]]:
    """Top-level names of the absolute imports in `source`, with whether each sits in a `try`.

    The code is parsed with `ast`, never compiled to bytecode, imported or executed.
    Raises SyntaxError (or ValueError) for what is not Python.
    """
    return _from_tree(ast.parse(source))


def _from_tree(tree: ast.AST) -> list[tuple[str, bool]]:
    found: dict[str, bool] = {}

    def visit(node: ast.AST, guarded: bool) -> None:
        for child in ast.iter_child_nodes(node):
            inner = guarded or isinstance(child, ast.Try | ast.TryStar)
            if isinstance(child, ast.Import):
                for alias in child.names:
                    found.setdefault(alias.name, inner)
            elif isinstance(child, ast.ImportFrom) and child.level == 0 and child.module:
                found.setdefault(child.module, inner)
            visit(child, inner)

    visit(tree, False)
    return list(found.items())


def scanned_modules(source: str) -> list[tuple[str, bool]]:
    """What `imported_modules` finds, by a line scan in linear time and constant memory.

    Each import statement (with its continuation lines) is parsed alone with `ast`; text
    inside triple-quoted strings is skipped; a `try:` guards the lines indented under it and
    its handlers. Unlike `ast`, a file with a syntax error elsewhere still gives its imports.
    """
    found: dict[str, bool] = {}
    tries: list[int] = []  # indents of the open `try` blocks
    lines = source.splitlines()
    quote: str | None = None  # the open triple quote, if inside one
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if quote is None and not tries and not _WORDS.search(line):
            continue  # the common line: it can neither import, open a try, nor open a string
        if quote is not None or not line.strip() or line.lstrip().startswith("#"):
            quote = _after_quotes(line, quote)
            continue
        indent = len(line) - len(line.lstrip())
        if not _HANDLER.match(line):
            while tries and indent <= tries[-1]:
                tries.pop()
        if (opened := _TRY.match(line)) is not None:
            tries.append(len(opened.group(1)))
        elif _IMPORT.match(line):
            statement, i = _statement(lines, i - 1)
            for module in _modules(statement):
                found.setdefault(module, bool(tries))
            continue
        elif "import" in line:  # `if not re: import re`, `x = 1; import y`
            for module in _modules(line.strip()):
                found.setdefault(module, bool(tries))
        quote = _after_quotes(line, None)
    return list(found.items())


def _after_quotes(line: str, quote: str | None) -> str | None:
    """The triple quote still open after `line`, given the one open before it.

    One-line strings, escapes and comments are skipped: triple quotes inside a one-line
    string or a comment open nothing.
    """
    single: str | None = None
    for match in _QUOTES.finditer(line):
        token = match.group()
        if token[0] == "\\":
            continue
        if quote is not None:
            quote = None if token == quote else quote
        elif single is not None:
            single = None if token == single else single
        elif token == "#":
            break
        elif len(token) == 3:
            quote = token
        else:
            single = token
    return quote


def _statement(lines: list[str], start: int) -> tuple[str, int]:
    """The import statement starting at `lines[start]` and the index after it."""
    parts = [lines[start]]
    end = start + 1
    depth = lines[start].count("(") - lines[start].count(")")
    while end < len(lines) and (depth > 0 or parts[-1].rstrip().endswith("\\")):
        parts.append(lines[end])
        depth += lines[end].count("(") - lines[end].count(")")
        end += 1
    return "\n".join(p.strip() for p in parts), end


def _modules(statement: str) -> list[str]:
    for text in (statement, statement.split(";", 1)[0]):
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        return [module for module, _ in _from_tree(tree)]
    return []


@dataclass(frozen=True, slots=True)
class Scanned:
    """What one .py blob imports, or why it could not be read."""

    imports: Imports
    problem: str | None = None


def scan(data: bytes) -> Scanned:
    """The imports of one .py file's bytes: `ast` when small, the line scan when large."""
    try:
        source = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return Scanned((), f"cannot parse as Python: not UTF-8: {exc}")
    if len(data) > MAX_AST_BYTES:
        modules = scanned_modules(source)
    else:
        try:
            modules = imported_modules(source)
        except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
            return Scanned((), f"cannot parse as Python: {type(exc).__name__}: {exc}")
    if len(modules) > MAX_MODULES:
        kept = tuple(modules[:MAX_MODULES])
        return Scanned(kept, f"over {MAX_MODULES} imports; the rest skipped")
    return Scanned(tuple(modules))


class ImportCache(BoundedCache[Scanned]):
    """The imports of each .py blob by content sha, so shared custom code is read once.

    Bounded: at most `max_entries` blobs (each at most MAX_MODULES names), least recently
    used dropped first. One cache lives as long as its AdvisoryAttacher (a daemon, a sync).
    """

    def __init__(self, max_entries: int = MAX_ENTRIES) -> None:
        super().__init__(max_entries)
