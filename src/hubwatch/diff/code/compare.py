"""Two versions of one custom-code module compared as Python: what changed, and what that does
(breaks a loader, reaches something risky, changes behaviour, or only its words)."""

from __future__ import annotations

import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from hubwatch.diff.code.python import BUILTINS, Module
from hubwatch.diff.code.repo import Target
from hubwatch.diff.code.units import MODULE, Param, Unit

LIBRARY_MEMBERS = frozenset(
    {"forward", "generate", "prepare_inputs_for_generation", "get_input_embeddings",
     "set_input_embeddings", "get_output_embeddings", "set_output_embeddings", "tie_weights",
     "resize_token_embeddings", "post_init", "init_weights", "can_generate", "from_pretrained",
     "save_pretrained", "push_to_hub", "decode", "batch_decode", "encode", "encode_plus",
     "batch_encode_plus", "tokenize", "get_vocab", "save_vocabulary", "vocab_size",
     "build_inputs_with_special_tokens", "get_special_tokens_mask", "convert_tokens_to_string",
     "create_token_type_ids_from_sequences", "num_special_tokens_to_add", "pad",
     "apply_chat_template", "to_dict", "to_json_string", "__call__"}
)  # fmt: skip
"""Members the transformers base classes define: removing an override leaves the library's."""
INSTALLED = frozenset(
    {"__future__", "transformers", "huggingface_hub", "tokenizers", "safetensors", "numpy",
     "packaging", "regex", "requests", "tqdm", "filelock", "yaml"}
)  # fmt: skip
"""Packages every trust_remote_code load has (transformers and what it requires)."""
_HINTS = ("docstrings", "type hints", "log and warning text")


@dataclass
class Findings:
    """What one file's change does, as the severity policy reads it (`after["findings"]`)."""

    breaks: list[str] = field(default_factory=list)
    """What stops working: a name the loader or the code uses is gone, a signature broke."""
    risky: list[str] = field(default_factory=list)
    """Risky calls newly reached: capability, call, where, line."""
    changed: list[str] = field(default_factory=list)
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    """Behaviour worth naming (a default changed, an override dropped, a new package)."""
    cosmetic: list[str] = field(default_factory=list)
    """What changed without changing what runs: docstrings, type hints, log text, unused names."""
    reachable: bool | None = None
    """Whether a trust_remote_code load imports the file (None: nothing says which files run)."""
    first: bool = False
    """The repo's first custom code."""
    unread: str | None = None
    """Why the file could not be read as Python."""

    @property
    def runs_differently(self) -> bool:
        return bool(self.changed or self.added or self.removed or self.notes)

    def as_json(self, limit: int = 40) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name, value in vars(self).items():
            if isinstance(value, list):
                if value:
                    out[name] = value[:limit]
            elif value is not None and (value is not False or name == "reachable"):
                out[name] = value
        return out


def compare_modules(
    path: str,
    old: Module,
    new: Module,
    old_targets: Iterable[Target],
    used: frozenset[str],
    known: frozenset[str] = frozenset(),
) -> Findings:
    """`old` → `new` of `path`. `old_targets`: what the old revision's loader configs name;
    `used`: every name (`x`) and attribute (`.x`) the new revision's code reads; `known`: the
    packages the old revision's code imported already (and transformers' own)."""
    found = Findings()
    if not new.ok:
        if old.ok and new.error and new.error.startswith("does not parse"):
            found.breaks.append(f"it {new.error}: importing it fails")
        else:
            found.unread = new.error
        return found
    if not old.ok:
        found.notes.append(f"it was not read before ({old.error})")
    _units_moved(old, new, found, used)
    gone = (old.module_names - new.bound) & new.loaded - BUILTINS
    found.breaks += [f"{name} is used but no longer defined (NameError)" for name in sorted(gone)]
    found.breaks += [
        f"{name} is a @staticmethod taking self: called on an instance it gets one argument "
        "too few (TypeError)"
        for name in sorted(new.static_self - old.static_self)
    ]
    was = {r.key for r in old.risks}
    found.risky += [r.describe() for r in new.risks if r.key not in was]
    for target in old_targets:
        if target.path == path:
            _entry(target, old, new, found)
    _imports(old, new, found, known | INSTALLED)
    return found


def _units_moved(old: Module, new: Module, found: Findings, used: frozenset[str]) -> None:
    levels: set[str] = set()
    for name in sorted(old.units.keys() | new.units.keys()):
        a, b = old.units.get(name), new.units.get(name)
        shown = "module-level code" if name == MODULE else name
        if a is None:
            found.added.append(shown)
        elif b is None:
            found.removed.append(shown)
        elif a.raw != b.raw:
            if a.bare != b.bare:
                found.changed.append(shown)
            else:  # only what the normalising took away: which of it moved
                levels.update(h for h, x, y in zip(_HINTS, a.words, b.words, strict=True) if x != y)
    found.cosmetic += [level for level in _HINTS if level in levels]
    if not found.changed and not found.removed and found.added:
        inert = [n for n in found.added if _inert(n, new, used)]
        if len(inert) == len(found.added):
            found.cosmetic.append(f"adds {', '.join(inert)}, which nothing calls")
            found.added = []
    unused = [n for n in found.changed if _unused_constant(n, new, used)]
    if unused:
        found.cosmetic.append(f"constants nothing reads ({', '.join(unused)})")
        found.changed = [n for n in found.changed if n not in unused]


def _inert(name: str, new: Module, used: frozenset[str]) -> bool:
    """A new public function or method nothing in the repo reads, and no library hook."""
    if name not in new.units:
        return False
    member = name.rsplit(".", 1)[-1]
    read = f".{member}" in used if "." in name else member in used
    return (
        not member.startswith("_")
        and member not in LIBRARY_MEMBERS
        and not read
        and (new.units[name].params is not None or "." in name)
    )


def _unused_constant(name: str, new: Module, used: frozenset[str]) -> bool:
    unit = new.units.get(name)
    if unit is None or unit.params is not None or name.startswith("<") or "." in name:
        return False
    return name not in new.classes and not any(n in used for n in name.split(","))


def _imports(old: Module, new: Module, found: Findings, known: frozenset[str]) -> None:
    if old.imports == new.imports and old.packages == new.packages:
        return
    fresh = sorted(new.packages - old.packages)
    third_party = [p for p in fresh if p not in known and p not in sys.stdlib_module_names]
    if third_party:
        found.notes.append(f"imports {', '.join(third_party)} (must be installed)")
    if len(third_party) < len(fresh) or new.imports != old.imports:
        found.cosmetic.append("imports")


def _entry(target: Target, old: Module, new: Module, found: Findings) -> None:
    """What a caller of the class the old revision's config named loses."""
    named = f"named by {target.auto} in {target.config}"
    if target.name not in new.classes:
        found.breaks.append(f"{target.name} is gone ({named})")
        return
    before, after = _surface(old, target.name), _surface(new, target.name)
    for member, unit in sorted(before.items()):
        if member.startswith("_") and member not in ("__init__", "__call__"):
            continue
        helper = member in old.on_self
        now = after.get(member)
        if now is None:
            if member in LIBRARY_MEMBERS:
                found.notes.append(f"{target.name}.{member} override removed: the library's runs")
            elif helper:
                found.notes.append(f"helper {target.name}.{member} removed")
            else:
                found.breaks.append(f"{target.name}.{member} removed ({named})")
        elif unit.params is not None and now.params is not None:
            broken, notes = _signature(unit.params, now.params)
            where = f"{target.name}.{member}"
            if broken and not helper:
                found.breaks.append(f"{where}: {broken}")
            found.notes += [f"{where}: {note}" for note in ([broken] if broken and helper else [])]
            found.notes += [f"{where}: {note}" for note in notes]


def _surface(module: Module, cls: str, seen: frozenset[str] = frozenset()) -> dict[str, Unit]:
    """A class's members with their units, its in-module bases' included (theirs first)."""
    out: dict[str, Unit] = {}
    for base in module.classes.get(cls, ()):
        if base in module.classes and base not in seen:
            out.update(_surface(module, base, seen | {cls}))
    for member in module.members.get(cls, ()):
        unit = module.units.get(f"{cls}.{member}")
        out[member] = unit if unit is not None else Unit(member, 0, "")
    return out


def _signature(before: tuple[Param, ...], after: tuple[Param, ...]) -> tuple[str, list[str]]:
    """How a caller of `before` fares with `after`: what breaks (or ""), and what else moved."""
    b = [p for p in before if p.name not in ("self", "cls")]
    a = [p for p in after if p.name not in ("self", "cls")]
    named_b = {p.name: p for p in b if p.kind not in ("vararg", "kwarg")}
    named_a = {p.name: p for p in a if p.kind not in ("vararg", "kwarg")}
    gone = [n for n in named_b if n not in named_a]
    required = [p.name for p in a if p.name not in named_b and p.default is None
                and p.kind in ("arg", "kwonly", "posonly")]  # fmt: skip
    lost = [p.kind for p in b if p.kind in ("vararg", "kwarg")]
    lost = [k for k in lost if k not in {p.kind for p in a}]
    problems = []
    if gone:
        problems.append(f"parameter {', '.join(gone)} removed")
    if required:
        problems.append(f"new required parameter {', '.join(required)}")
    if lost:
        problems.append(
            f"no longer takes {' or '.join('*args' if k == 'vararg' else '**kwargs' for k in lost)}"
        )
    notes = []
    order_b = [p.name for p in b if p.kind in ("posonly", "arg") and p.name in named_a]
    order_a = [p.name for p in a if p.kind in ("posonly", "arg") and p.name in named_b]
    positions_a = [p.name for p in a if p.kind in ("posonly", "arg")]
    if order_b != order_a or positions_a[: len(order_a)] != order_a:
        notes.append("positional parameters moved (positional callers shift)")
    defaults = [n for n in named_b if n in named_a and named_b[n].default != named_a[n].default]
    notes += [f"default of {n} {named_b[n].default} → {named_a[n].default}" for n in defaults]
    added = [p.name for p in a if p.name not in named_b and p.name not in required
             and p.kind not in ("vararg", "kwarg")]  # fmt: skip
    if added:
        notes.append(f"new parameter {', '.join(added)}")
    return "; ".join(problems), notes
