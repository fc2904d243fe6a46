"""Custom code read as Python with `ast` (parsed, never compiled, imported or run): its units
and their fingerprints, signatures, imports, risky calls and the names it defines and uses."""

from __future__ import annotations

import ast
import builtins
import threading
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field

from hubwatch.diff.code.reads import config_reads
from hubwatch.diff.code.risky import Risk, aliases_of, dotted, risky_calls
from hubwatch.diff.code.units import Unit, top, units

MAX_AST_BYTES = 512 * 1024
"""Sources up to this size are read as Python; `ast` costs about 40 times the source in memory
and a larger file (generated tables, embedded kernels) is compared as text only."""
BUILTINS = frozenset(dir(builtins)) | {"__file__", "__name__", "__doc__", "__spec__"}
_DEF_TYPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


@dataclass(frozen=True)
class Module:
    """What one Python file holds, as far as reading it (never running it) tells."""

    lines: int
    error: str | None = None
    """Why it could not be read as Python (a syntax error and its line, too large)."""
    units: dict[str, Unit] = field(default_factory=dict)
    imports: frozenset[tuple[str, str]] = frozenset()
    """(bound name, what it is bound to) of each module-level import."""
    packages: frozenset[str] = frozenset()
    """Top-level packages imported anywhere (absolute imports)."""
    siblings: frozenset[str] = frozenset()
    """Modules of the same repo it imports (`from .x import`, `from . import x`): x."""
    module_names: frozenset[str] = frozenset()
    """Names bound by module-level statements."""
    bound: frozenset[str] = frozenset()
    """Every name bound anywhere (assignments, parameters, imports, defs…)."""
    loaded: frozenset[str] = frozenset()
    """Every name read anywhere."""
    attributes: frozenset[str] = frozenset()
    """Every attribute read anywhere (`x.attr`), config keys left out (`config_reads`)."""
    on_self: frozenset[str] = frozenset()
    """Attributes read on `self` or `cls`: the class's own helpers."""
    static_self: frozenset[str] = frozenset()
    """Methods marked @staticmethod whose first parameter is `self` (called on an instance,
    they get one argument too few)."""
    classes: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Each class with the names of its bases."""
    members: dict[str, frozenset[str]] = field(default_factory=dict)
    """Each class with the names its body defines (methods, properties, attributes)."""
    risks: tuple[Risk, ...] = ()
    vocab_files: dict[str, str] = field(default_factory=dict)
    """A tokenizer class's `vocab_files_names`: key → file name."""
    config_reads: dict[str, str] = field(default_factory=dict)
    """config.json keys it reads, each `shape` (sizes a weight) or `value` (`reads.py`)."""
    id_offsets: frozenset[str] = frozenset()
    """Names (or `self.` attributes) added to or taken from a value in a function about ids or
    tokens (`_convert_token_to_id`, `encode`…): settings that move every token id."""

    @property
    def ok(self) -> bool:
        return self.error is None


def read_module(source: str) -> Module:
    """What `source` defines and uses; a Module with `error` set when it is not Python."""
    lines = source.count("\n") + (0 if source.endswith("\n") or not source else 1)
    if len(source) > MAX_AST_BYTES:
        return Module(lines, f"not read as Python: {len(source):,} characters, over the limit")
    try:
        tree = _parse(source)
    except (SyntaxError, ValueError) as exc:
        where = f" (line {exc.lineno})" if isinstance(exc, SyntaxError) and exc.lineno else ""
        return Module(lines, f"does not parse as Python: {type(exc).__name__}{where}")
    except RecursionError:  # nesting past the parser's (or the interpreter's) depth
        return Module(lines, "not read as Python: nested too deeply")
    try:
        return _read(tree, lines)
    except RecursionError:  # ast.dump recurses: an expression of thousands of terms
        return Module(lines, "not read as Python: nested too deeply")


def _read(tree: ast.Module, lines: int) -> Module:
    nodes = list(ast.walk(tree))
    names = _names(nodes)
    classes = [s for s in top(tree.body) if isinstance(s, ast.ClassDef)]
    facts = (
        frozenset(_module_imports(tree)),
        frozenset(_packages(nodes)),
        frozenset(_siblings(nodes)),
        frozenset(_module_bound(tree)),
        names.bound,
        names.loaded,
        names.attributes,
        names.on_self,
        frozenset(_static_self(classes)),
        {c.name: tuple(dotted(b) or "?" for b in c.bases) for c in classes},
        {c.name: frozenset(_class_members(c)) for c in classes},
        tuple(risky_calls(tree, nodes, aliases_of(nodes))),
        _vocab_files(tree, classes),
        config_reads(nodes),
        frozenset(_id_offsets(nodes)),
    )
    return Module(lines, None, units(tree), *facts)  # units last: they strip the tree


_ABOUT_IDS = ("id", "token", "encode", "decode")


def _id_offsets(nodes: list[ast.AST]) -> set[str]:
    """What `Module.id_offsets` holds: the operands of `+` and `-` in functions named for ids."""
    found: set[str] = set()
    for node in nodes:
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        if not any(word in node.name.lower() for word in _ABOUT_IDS):
            continue
        for inner in ast.walk(node):
            if isinstance(inner, ast.BinOp) and isinstance(inner.op, ast.Add | ast.Sub):
                for side in (inner.left, inner.right):
                    if isinstance(side, ast.Name):
                        found.add(side.id)
                    elif isinstance(side, ast.Attribute) and dotted(side.value) in ("self", "cls"):
                        found.add(side.attr)
    return found


_PARSING = threading.Lock()


def _parse(source: str) -> ast.Module:
    """`ast.parse`, its warnings (an invalid escape sequence in a string) silenced: upstream's
    code is read, not judged for style, and a process that turns warnings into errors would
    read it as a syntax error."""
    with _PARSING, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ast.parse(source)


# -- names ------------------------------------------------------------------------------------


@dataclass
class _Names:
    bound: frozenset[str]
    loaded: frozenset[str]
    attributes: frozenset[str]
    on_self: frozenset[str]


def _names(nodes: list[ast.AST]) -> _Names:
    bound: set[str] = set()
    loaded: set[str] = set()
    attributes: set[str] = set()
    on_self: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.Name):
            (loaded if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, ast.Attribute):
            owner = node.value
            reads = isinstance(node.ctx, ast.Load)
            if reads and not (dotted(owner) or "").endswith("config"):  # keys: `config_reads`
                attributes.add(node.attr)
            if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
                on_self.add(node.attr)
        elif isinstance(node, _DEF_TYPES):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.alias):
            bound.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
        elif isinstance(node, ast.Global | ast.Nonlocal):
            bound.update(node.names)
        elif isinstance(node, ast.MatchAs | ast.MatchStar) and node.name:
            bound.add(node.name)
        elif isinstance(node, ast.Call) and dotted(node.func) in ("getattr", "hasattr"):
            if len(node.args) > 1 and isinstance(node.args[1], ast.Constant):
                attributes.add(str(node.args[1].value))
    return _Names(frozenset(bound), frozenset(loaded), frozenset(attributes), frozenset(on_self))


def _module_bound(tree: ast.Module) -> Iterator[str]:
    for stmt in top(tree.body):
        if isinstance(stmt, _DEF_TYPES):
            yield stmt.name
        elif isinstance(stmt, ast.Import | ast.ImportFrom):
            yield from ((a.asname or a.name).split(".")[0] for a in stmt.names)
        elif isinstance(stmt, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            for target in targets:
                yield from (n.id for n in ast.walk(target) if isinstance(n, ast.Name))


def _module_imports(tree: ast.Module) -> Iterator[tuple[str, str]]:
    for stmt in top(tree.body):
        if isinstance(stmt, ast.Import):
            yield from ((a.asname or a.name, a.name) for a in stmt.names)
        elif isinstance(stmt, ast.ImportFrom):
            base = "." * stmt.level + (stmt.module or "")
            yield from ((a.asname or a.name, f"{base}:{a.name}") for a in stmt.names)


def _packages(nodes: list[ast.AST]) -> Iterator[str]:
    for node in nodes:
        if isinstance(node, ast.Import):
            yield from (a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module.split(".")[0]


def _siblings(nodes: list[ast.AST]) -> Iterator[str]:
    for node in nodes:
        if isinstance(node, ast.ImportFrom) and node.level > 0:
            if node.module:
                yield node.module
            else:
                yield from (a.name for a in node.names)


def _class_members(node: ast.ClassDef) -> Iterator[str]:
    for stmt in node.body:
        if isinstance(stmt, _DEF_TYPES):
            yield stmt.name
        elif isinstance(stmt, ast.Assign):
            yield from (t.id for t in stmt.targets if isinstance(t, ast.Name))
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            yield stmt.target.id


def _static_self(classes: list[ast.ClassDef]) -> Iterator[str]:
    for cls in classes:
        for stmt in cls.body:
            if not isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            static = any(dotted(d) == "staticmethod" for d in stmt.decorator_list)
            first = (stmt.args.posonlyargs + stmt.args.args)[:1]
            if static and first and first[0].arg in ("self", "cls"):
                yield f"{cls.name}.{stmt.name}"


def _vocab_files(tree: ast.Module, classes: list[ast.ClassDef]) -> dict[str, str]:
    """`vocab_files_names` of the module's classes: a dict literal, or a module constant."""
    constants = {
        t.id: stmt.value
        for stmt in tree.body
        if isinstance(stmt, ast.Assign)
        for t in stmt.targets
        if isinstance(t, ast.Name)
    }
    found: dict[str, str] = {}
    for cls in classes:
        for stmt in cls.body:
            if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1):
                continue
            target, value = stmt.targets[0], stmt.value
            if not (isinstance(target, ast.Name) and target.id == "vocab_files_names"):
                continue
            if isinstance(value, ast.Name):
                value = constants.get(value.id, value)
            if isinstance(value, ast.Dict):
                for key, item in zip(value.keys, value.values, strict=True):
                    if isinstance(key, ast.Constant) and isinstance(item, ast.Constant):
                        found[str(key.value)] = str(item.value)
    return found
