"""Model references in YAML, JSON and TOML configs, compose files included."""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterator, Sequence
from typing import Any

import yaml

from hubwatch.pins.model import Pin, locate, looks_like_repo, make_pin
from hubwatch.pins.scan.shell import env_pins, pins_on, words

MODEL_KEYS = frozenset(
    {
        "model",
        "model_id",
        "model_name",
        "model_name_or_path",
        "pretrained_model_name_or_path",
        "base_model",
        "repo_id",
    }
)
REVISION_KEYS = ("revision", "model_revision")
# NOTE: aliases make a node graph, not a tree; each node is visited once and at most this many,
# so a billion-laughs document costs a bounded walk.
MAX_NODES = 100_000


def scan_yaml(path: str, raw: bytes, spelling: str = "yaml") -> list[Pin]:
    """Model keys in every mapping, and compose `command:` / `environment:` entries.

    JSON is read the same way (it is YAML's flow style), so its keys have lines too.
    """
    try:
        documents = list(yaml.compose_all(raw.decode("utf-8", "replace"), Loader=yaml.SafeLoader))
    except yaml.YAMLError:
        return []  # not a config we can read: nothing found, nothing guessed
    lines = raw.splitlines()
    found: list[Pin] = []
    for mapping in _mappings(documents):
        pairs = [(k.value, v) for k, v in mapping.value if isinstance(k, yaml.ScalarNode)]
        found += _keyed(pairs, lines, path, spelling)
        for key, value in pairs:
            if key in ("command", "entrypoint"):
                found += _command(value, lines, path)
            elif key == "environment":
                found += _environment(value, lines, path)
    return sorted(found, key=lambda p: p.line)


def _mappings(documents: Sequence[yaml.Node | None]) -> Iterator[yaml.MappingNode]:
    seen: set[int] = set()
    todo: list[yaml.Node] = [d for d in documents if d is not None]
    while todo and len(seen) < MAX_NODES:
        node = todo.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, yaml.MappingNode):
            yield node
            todo += [n for pair in reversed(node.value) for n in reversed(pair)]
        elif isinstance(node, yaml.SequenceNode):
            todo += reversed(node.value)


def _scalar(node: yaml.Node) -> str | None:
    return node.value if isinstance(node, yaml.ScalarNode) and node.value else None


def _keyed(
    pairs: list[tuple[str, yaml.Node]], lines: list[bytes], path: str, spelling: str
) -> list[Pin]:
    values = dict(pairs)
    revision_node = next((values[k] for k in REVISION_KEYS if k in values), None)
    found = []
    for key, node in pairs:
        repo = _scalar(node)
        if key not in MODEL_KEYS or repo is None or not (looks_like_repo(repo) or "$" in repo):
            continue
        own = values.get(f"{key}_revision", revision_node)
        revision = _scalar(own) if own is not None else None
        at = None
        if own is not None and revision:
            line = own.start_mark.line + 1
            at = locate(lines, line, own.end_mark.line + 1, revision)
        found.append(
            make_pin(repo, revision, path, node.start_mark.line + 1, f"{spelling}:{key}", at)
        )
    return found


def _node_span(node: yaml.Node) -> tuple[int, int]:
    return node.start_mark.line + 1, node.end_mark.line + 1


def _command(node: yaml.Node, lines: list[bytes], path: str) -> list[Pin]:
    if isinstance(node, yaml.ScalarNode):
        argv = words(node.value)
    elif isinstance(node, yaml.SequenceNode):
        argv = []
        for item in node.value:
            text = _scalar(item) or ""
            argv += (words(text) or [text]) if " " in text else [text]
    else:
        return []
    first, last = _node_span(node)
    return pins_on(lines, first, last, argv or [], path)


def _environment(node: yaml.Node, lines: list[bytes], path: str) -> list[Pin]:
    pairs: list[tuple[str, str]] = []
    if isinstance(node, yaml.MappingNode):
        pairs = [(_scalar(k) or "", _scalar(v) or "") for k, v in node.value]
    elif isinstance(node, yaml.SequenceNode):
        pairs = [((_scalar(i) or "").partition("=")[::2]) for i in node.value]
    first, last = _node_span(node)
    return env_pins(lines, first, last, pairs, path, "compose:environment")


def scan_toml(path: str, raw: bytes) -> list[Pin]:
    """Model keys in every TOML table (arrays of tables included)."""
    try:
        data = tomllib.loads(raw.decode("utf-8", "replace"))
    except tomllib.TOMLDecodeError:
        return []
    lines = raw.splitlines()
    found: list[Pin] = []
    for table in _tables(data):
        for key in sorted(MODEL_KEYS & table.keys()):
            repo = table[key]
            if not isinstance(repo, str) or not (looks_like_repo(repo) or "$" in repo):
                continue
            revision = table.get(
                f"{key}_revision", next((table[k] for k in REVISION_KEYS if k in table), None)
            )
            revision = revision if isinstance(revision, str) else None
            line = _key_line(lines, key, repo)
            at = _value_at(lines, revision, line) if revision else None
            found.append(make_pin(repo, revision, path, line, f"toml:{key}", at))
    return sorted(found, key=lambda p: p.line)


def _tables(value: Any) -> Iterator[dict[str, Any]]:
    if isinstance(value, dict):
        yield value
        for item in value.values():
            yield from _tables(item)
    elif isinstance(value, list):
        for item in value:
            yield from _tables(item)


def _key_line(lines: list[bytes], key: str, value: str) -> int:
    """The line of `key = "value"` (tomllib keeps no positions); 0 when not found."""
    pattern = re.compile(
        rb"^\s*[\"']?"
        + re.escape(key.encode())
        + rb"[\"']?\s*=\s*[\"']"
        + re.escape(value.encode())
    )
    return next((n for n, line in enumerate(lines, start=1) if pattern.match(line)), 0)


def _value_at(lines: list[bytes], value: str, near: int) -> tuple[int, int] | None:
    """Where the string `value` is assigned (`= "value"`) closest to line `near`, for rewriting
    it in place."""
    pattern = re.compile(rb"=\s*[\"']" + re.escape(value.encode()) + rb"[\"']")
    found: list[tuple[int, int, int]] = []
    for number, line in enumerate(lines, start=1):
        match = pattern.search(line)
        if match and not line.lstrip().startswith(b"#"):
            found.append((abs(number - near), number, match.end() - 1 - len(value.encode())))
    return min(found)[1:] if found else None
