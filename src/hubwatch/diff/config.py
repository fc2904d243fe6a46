"""config.json: DeepDiff finds what moved, then each group of keys says what it means to users."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping
from typing import Any

from deepdiff import DeepDiff

from hubwatch.diff.code.repo import config_reads, had_class
from hubwatch.diff.precision import PRECISION, memory_note
from hubwatch.diff.sections import (
    arrow,
    changed_keys,
    listing,
    other_settings,
    pair,
    same_blob,
    show,
    unread,
)
from hubwatch.formats.view import RevisionView
from hubwatch.models import Change, Severity

# (kind, severity, what it is called, the keys): the first group that claims a key reports it.
GROUPS: tuple[tuple[str, Severity, str, tuple[str, ...]], ...] = (
    ("config.architecture", Severity.BREAKING, "architecture", ("architectures", "model_type")),
    (
        "config.dimensions",
        Severity.BREAKING,
        "dimensions",
        (
            "hidden_size",
            "num_hidden_layers",
            "num_attention_heads",
            "num_key_value_heads",
            "head_dim",
            "intermediate_size",
            "moe_intermediate_size",
            "num_local_experts",
            "num_experts",
            "n_routed_experts",
            "num_experts_per_tok",
            "n_layer",
            "n_head",
            "n_embd",
            "d_model",
            "encoder_layers",
            "decoder_layers",
        ),
    ),  # fmt: skip
    ("config.vocab_size", Severity.BREAKING, "vocabulary size", ("vocab_size",)),
    (
        "config.context",
        Severity.BEHAVIOR,
        "context",
        (
            "max_position_embeddings",
            "rope_scaling",
            "rope_theta",
            "rope_parameters",
            "sliding_window",
            "max_window_layers",
            "use_sliding_window",
            "n_positions",
            # custom-code configs (ChatGLM, Qwen-1…): the length rotary caches are built to
            "seq_length",
            "max_sequence_length",
            "max_seq_len",
            "n_ctx",
        ),
    ),  # fmt: skip
    # bf16 / fp16 / fp32: Qwen-1 style precision switches its own code reads
    ("config.dtype", Severity.BEHAVIOR, "default dtype", ("torch_dtype", "dtype", *PRECISION)),
    (
        "config.special_token_ids",
        Severity.BEHAVIOR,
        "special token ids",
        ("bos_token_id", "eos_token_id", "pad_token_id", "decoder_start_token_id"),
    ),
    ("config.tie_word_embeddings", Severity.BREAKING, "tied embeddings", ("tie_word_embeddings",)),
    ("config.quantization", Severity.BREAKING, "quantization", ("quantization_config",)),
    (
        "config.attention",
        Severity.BEHAVIOR,
        "attention implementation",
        (
            "attn_implementation",
            "_attn_implementation",
            "attention_implementation",
            "use_flash_attn",
        ),
    ),
)
_QUIET = frozenset({"transformers_version", "_name_or_path"})
_SPECIAL_IDS = "config.special_token_ids"
# NOTE: an auto_map value may point into another repo: "org/repo--modeling.Class"
# (transformers.dynamic_module_utils.get_class_from_dynamic_module).
_EXTERNAL = re.compile(r"^([\w.-]+/[\w.-]+)--")


def diff_config(old: RevisionView, new: RevisionView) -> list[Change]:
    """Changes to every `config.json` (top level and sub-model folders)."""
    changes: list[Change] = []
    for path in sorted(p for p in old.files.keys() | new.files.keys() if _is_config(p)):
        if same_blob(old, new, path):
            continue
        if unread(new, path) and (path not in old.files or not unread(old, path)):
            changes.append(_unread(new, path))
            continue
        before, after = pair(old, new, path)
        reads = config_reads(new) if "/" not in path else {}
        changes += compare(before, after, path, reads=reads, views=(old, new))
    return changes


def _unread(view: RevisionView, path: str) -> Change:
    """A config.json that could not be read: its settings unknown, never said to be unset."""
    why = view.read_error(path) or "not a JSON object"
    why = why.removeprefix(f"{path}: ").removeprefix(path).strip()
    return Change(
        "config.unread",
        Severity.INFO,
        f"{path} could not be read ({why[:120]}): its settings are unknown; once it can be, "
        "it is compared with the last version that was read.",
        path,
    )


def _is_config(path: str) -> bool:
    return path == "config.json" or path.endswith("/config.json")


def compare(
    before: dict[str, Any],
    after: dict[str, Any],
    path: str,
    tower: str = "",
    reads: Mapping[str, str] | None = None,
    views: tuple[RevisionView, RevisionView] | tuple[()] = (),
) -> list[Change]:
    """Config changes between two parsed configs; nested `*_config` towers one by one.
    `reads`: the keys the repo's own code reads (`code.repo.config_reads`), graded by that use;
    `views`: the two revisions, to tell what an auto_map entry points at."""
    keys = changed_keys(before, after)
    if not keys:
        return []
    claimed: set[str] = set()  # keys already reported, each by the first step that claims it
    changes = _towers(before, after, keys, path, tower, claimed)
    changes += _groups(before, after, keys, path, tower, claimed)
    if "auto_map" in keys:
        claimed.add("auto_map")
        changes += auto_map_changes(before.get("auto_map"), after.get("auto_map"), path, *views)
    changes += _read_by_code(before, after, keys, path, reads or {}, claimed)
    rest = [key for key in keys if key not in claimed and key not in _QUIET]
    if rest:
        changes.append(_other(before, after, rest, path, tower))
    return changes


def _read_by_code(
    before: dict[str, Any],
    after: dict[str, Any],
    keys: list[str],
    path: str,
    reads: Mapping[str, str],
    claimed: set[str],
) -> list[Change]:
    """Keys no group knows that the repo's code reads: sizing a weight (dimensions), or else
    changing what it does (config.custom)."""
    changes = []
    for use, kind, label in (
        ("shape", "config.dimensions", "dimensions its own code builds weights from"),
        ("value", "config.custom", "settings its own code reads"),
    ):
        moved = [k for k in keys if k not in claimed and k not in _QUIET and reads.get(k) == use]
        if not moved:
            continue
        claimed.update(moved)
        what = ", ".join(f"{k} {arrow(before.get(k), after.get(k))}" for k in moved)
        changes.append(
            Change(
                kind,
                Severity.BEHAVIOR,
                f"{path}: {label} changed: {what}.",
                path,
                {k: before.get(k) for k in moved},
                {k: after.get(k) for k in moved},
            )
        )
    return changes


def _towers(
    before: dict[str, Any],
    after: dict[str, Any],
    keys: list[str],
    path: str,
    tower: str,
    claimed: set[str],
) -> list[Change]:
    """Each nested `*_config` (a vision or text tower) compared as a config of its own."""
    changes: list[Change] = []
    for key in keys:
        b, a = before.get(key), after.get(key)
        if (
            key.endswith("_config")
            and key != "quantization_config"
            and (isinstance(b, dict) or isinstance(a, dict))
        ):
            claimed.add(key)
            changes += compare(
                b if isinstance(b, dict) else {},
                a if isinstance(a, dict) else {},
                path,
                f"{tower}{key}.",
            )
    return changes


def _groups(
    before: dict[str, Any],
    after: dict[str, Any],
    keys: list[str],
    path: str,
    tower: str,
    claimed: set[str],
) -> list[Change]:
    """One change per group of GROUPS with a key that moved and is not yet claimed."""
    changes: list[Change] = []
    for kind, severity, label, group in GROUPS:
        moved = [key for key in keys if _in(kind, group, key) and key not in claimed]
        if not moved:
            continue
        claimed.update(moved)
        what = ", ".join(f"{tower}{key} {arrow(before.get(key), after.get(key))}" for key in moved)
        if kind == "config.dtype":
            what += memory_note(before, after)
        changes.append(
            Change(
                kind,
                severity,
                f"{path}: {label} changed: {what}.",
                path,
                {f"{tower}{key}": before.get(key) for key in moved},
                {f"{tower}{key}": after.get(key) for key in moved},
            )
        )
    return changes


def _in(kind: str, group: tuple[str, ...], key: str) -> bool:
    """`key` belongs to the group; any `*_token_id` (mask, gmask, sep…) is a special token id."""
    return key in group or (kind == _SPECIAL_IDS and key.endswith("_token_id"))


def _other(
    before: dict[str, Any], after: dict[str, Any], rest: list[str], path: str, tower: str
) -> Change:
    """The keys no group claims, with DeepDiff's account of what moved inside them."""
    structure = DeepDiff(
        {key: before.get(key) for key in rest},
        {key: after.get(key) for key in rest},
        verbose_level=2,
    )
    return Change(
        "config.other",
        Severity.INFO,
        other_settings(path, rest, before, after, tower),
        path,
        {f"{tower}{key}": before.get(key) for key in rest},
        {f"{tower}{key}": after.get(key) for key in rest},
        structure.pretty()[:4000],
    )


def auto_map_changes(
    before: Any,
    after: Any,
    path: str,
    old: RevisionView | None = None,
    new: RevisionView | None = None,
) -> list[Change]:
    """auto_map decides which custom code `trust_remote_code` runs. With the two revisions,
    each moved entry says what it does: an Auto class removed, mapped to code the repo did not
    have, or to a class it had (`moves`, which the policy grades)."""
    b = before if isinstance(before, dict) else {}
    a = after if isinstance(after, dict) else {}
    moved = [k for k in sorted(b.keys() | a.keys()) if b.get(k) != a.get(k)]
    moves = {k: _move(b, a, k, path, old, new) for k in moved}
    said = {  # {load}: "loads" after one Auto class, "load" after several
        "removed": "no longer mapped",
        "new code": "now {load} code the repo did not have",
        "retargeted": "now {load} another of the repo's classes",
        "existing": "added for classes the repo already had",
        "changed": "now {load} different custom code",  # without the revisions: new or not?
    }
    parts = []
    for status, words in said.items():
        keys = [k for k in moved if moves[k] == status]
        if not keys:
            continue
        part = f"{listing(keys)} {words.format(load='loads' if len(keys) == 1 else 'load')}"
        files = _files([ref for k in keys for ref in _refs({k: a.get(k)})], path)
        parts.append(f"{part} ({listing(files)})" if files and status != "removed" else part)
    changes = [
        Change(
            "config.auto_map",
            Severity.SECURITY,
            f"{path}: auto_map changed: {'; '.join(parts)}.",
            path,
            {"auto_map": before},
            {"auto_map": after, "moves": moves},
        )
    ]
    was = {ref for ref in _refs(b) if _EXTERNAL.match(ref)}
    now = sorted(ref for ref in _refs(a) if _EXTERNAL.match(ref) and ref not in was)
    if now:
        repos = sorted({m.group(1) for ref in now if (m := _EXTERNAL.match(ref))})
        changes.append(
            Change(
                "config.auto_map_external",
                Severity.SECURITY,
                f"{path}: auto_map now loads code from another repo: {listing(repos)} "
                f"({listing(show(ref) for ref in now)}).",
                path,
                sorted(was),
                now,
            )
        )
    return changes


def _move(
    b: dict[str, Any],
    a: dict[str, Any],
    key: str,
    path: str,
    old: RevisionView | None,
    new: RevisionView | None,
) -> str:
    if key not in a or not _refs({key: a[key]}):
        return "removed"
    if old is None or new is None:
        return "changed"
    folder = posixpath.dirname(path)
    fresh = [r for r in _refs({key: a[key]}) if r not in _refs(b)]
    if any(_EXTERNAL.match(r) or not had_class(old, new, r, folder) for r in fresh):
        return "new code"
    return "retargeted" if key in b else "existing"


def _files(refs: list[str], path: str) -> list[str]:
    """The files that auto_map references load: `modeling_x.Model` is `modeling_x.py` beside
    the config; `org/repo--modeling_x.Model` is `modeling_x.py in org/repo`."""
    folder, files = posixpath.dirname(path), []
    for ref in refs:
        repo, _, module = ref.rpartition("--")
        file = module.rpartition(".")[0] + ".py" if "." in module else f"{module}.py"
        shown = f"{file} in {repo}" if repo else posixpath.join(folder, file)
        if shown not in files:
            files.append(shown)
    return files


def _refs(auto_map: dict[str, Any]) -> list[str]:
    refs: list[str] = []
    for value in auto_map.values():
        values = value if isinstance(value, list) else [value]
        refs += [v for v in values if isinstance(v, str)]
    return refs
