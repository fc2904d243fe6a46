"""A revision's custom code as a whole: each module read once per content, what `auto_map`
names, which modules a `trust_remote_code` load reaches, what config keys they read."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from hubwatch.caching import Slot
from hubwatch.diff.code.python import Module, read_module
from hubwatch.diff.renames import renamed
from hubwatch.formats.view import RevisionView

LOADER_CONFIGS = (
    "config.json", "tokenizer_config.json", "preprocessor_config.json", "processor_config.json",
    "image_processor_config.json", "feature_extractor_config.json",
    "video_preprocessor_config.json",
)  # fmt: skip
"""The files whose `auto_map` tells transformers which of a repo's classes to load."""
# NOTE: "org/repo--module.Class" is code from another repo
# (transformers.dynamic_module_utils.get_class_from_dynamic_module).
_EXTERNAL = re.compile(r"^[\w.-]+/[\w.-]+--")

MODULES: Slot[Module] = Slot("code.modules", 256)
"""Modules read, by git blob id (their content), in the views' memo: a backfill reads each
version once."""


@dataclass(frozen=True, slots=True)
class Target:
    """One class a loader config names: `AutoModel` → `modeling_x.py`, `XForCausalLM`."""

    auto: str
    """The auto_map key (`AutoModel`), or `architectures` for config.json's list."""
    path: str
    name: str
    config: str
    """The file that names it."""


def is_code(path: str) -> bool:
    return path.endswith(".py")


def module(view: RevisionView, path: str) -> Module | None:
    """`path` read as Python (cached by blob), or None when its text was not stored."""
    entry = view.files.get(path)
    if entry is None:
        return None
    read = view.memo[MODULES]
    found = read.get(entry.blob_id)
    if found is None:
        text = view.text(path)
        if text is None:
            return None
        found = read_module(text)
        read.put(entry.blob_id, found)
    return found


def modules(view: RevisionView) -> dict[str, Module]:
    """Every Python file of the revision that could be read."""
    return {p: m for p in sorted(view.files) if is_code(p) and (m := module(view, p))}


def targets(view: RevisionView) -> list[Target]:
    """Every class of this repo that a loader config names (other repos' classes left out)."""
    found = []
    for path in sorted(view.files):
        if posixpath.basename(path) not in LOADER_CONFIGS:
            continue
        parsed = view.json(path)
        if not isinstance(parsed, dict):
            continue
        folder = posixpath.dirname(path)
        for auto, ref in _auto_refs(parsed):
            if _EXTERNAL.match(ref) or "." not in ref:
                continue
            mod, _, name = ref.rpartition(".")
            found.append(Target(auto, _join(folder, mod.replace(".", "/") + ".py"), name, path))
    defined = _defined_by_targets(view, found)
    config = view.json("config.json")
    architectures = config.get("architectures") if isinstance(config, dict) else None
    names = architectures if isinstance(architectures, list) else []
    found += [
        Target("architectures", defined[name], name, "config.json")
        for name in names
        if isinstance(name, str) and name in defined
    ]
    return found


def _auto_refs(parsed: dict[str, Any]) -> Iterator[tuple[str, str]]:
    auto_map = parsed.get("auto_map")
    if isinstance(auto_map, dict):
        for auto, value in auto_map.items():
            for ref in value if isinstance(value, list) else [value]:
                if isinstance(ref, str):
                    yield str(auto), ref
    pipelines = parsed.get("custom_pipelines")
    if isinstance(pipelines, dict):
        for task, spec in pipelines.items():
            impl = spec.get("impl") if isinstance(spec, dict) else None
            if isinstance(impl, str):
                yield f"pipeline {task}", impl


def _join(folder: str, path: str) -> str:
    return posixpath.join(folder, path) if folder else path


def _defined_by_targets(view: RevisionView, found: Iterable[Target]) -> dict[str, str]:
    out: dict[str, str] = {}
    for path in sorted({t.path for t in found}):
        read = module(view, path)
        out.update(dict.fromkeys(read.classes if read else (), path))
    return out


def had_class(old: RevisionView, new: RevisionView, ref: str, folder: str = "") -> bool:
    """Whether `ref` (`module.Class`, as auto_map writes it) names a class the old revision
    already defined, at that module or at the one it was renamed from."""
    mod, _, name = ref.rpartition(".")
    path = _join(folder, mod.replace(".", "/") + ".py")
    moved = {b: a for a, b in renamed(old, new).items()}
    read = module(old, moved.get(path, path))
    return read is not None and name in read.classes


def reachable(view: RevisionView) -> set[str] | None:
    """The Python files a `trust_remote_code` load can import: those `auto_map` names and what
    they import from the repo, transitively. None when no loader config names any class (then
    nothing tells which files run)."""
    start = {t.path for t in targets(view) if t.auto != "architectures"}
    if not start:
        return None
    seen: set[str] = set()
    todo = [p for p in sorted(start) if p in view.files]
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        read = module(view, path)
        for sibling in read.siblings if read else ():
            todo += [p for p in sibling_paths(path, sibling) if p in view.files]
    return seen


def sibling_paths(importer: str, name: str) -> list[str]:
    """Where `from .name import …` in `importer` looks: name.py or name/__init__.py beside it."""
    base = _join(posixpath.dirname(importer), name.replace(".", "/"))
    return [f"{base}.py", f"{base}/__init__.py"]


def config_reads(view: RevisionView) -> dict[str, str]:
    """config.json keys the revision's code reads (`shape` wins over `value`), from the files
    a load reaches (every Python file when nothing says which)."""
    reach = reachable(view)
    reads: dict[str, str] = {}
    for path, read in modules(view).items():
        if reach is not None and path not in reach:
            continue
        for key, use in read.config_reads.items():
            if reads.get(key) != "shape":
                reads[key] = use
    return reads


def tokenizer_parameters(view: RevisionView) -> dict[str, str | None]:
    """The parameters of the __init__ of the tokenizer classes `auto_map` names in this repo,
    with their defaults (as code): the tokenizer_config.json keys the repo's own code takes."""
    found: dict[str, str | None] = {}
    for target in targets(view):
        if target.auto != "AutoTokenizer":
            continue
        read = module(view, target.path)
        unit = read.units.get(f"{target.name}.__init__") if read else None
        for param in unit.params or () if unit is not None else ():
            if param.kind not in ("vararg", "kwarg") and param.name != "self":
                found.setdefault(param.name, param.default)
    return found


def id_offsets(view: RevisionView) -> frozenset[str]:
    """Names the modules of the tokenizer classes `auto_map` names add to or take from token
    ids (`Module.id_offsets`): a setting among them moves every id."""
    found: set[str] = set()
    for target in targets(view):
        if target.auto == "AutoTokenizer" and (read := module(view, target.path)) is not None:
            found |= read.id_offsets
    return frozenset(found)
