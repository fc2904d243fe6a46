"""Model references in YAML, JSON and TOML: compose, Kubernetes, Helm values, CI workflows."""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterator, Sequence
from typing import Any

import yaml

from hubwatch.pins.model import Pin, locate, looks_like_repo, make_pin
from hubwatch.pins.scan.commands import words
from hubwatch.pins.scan.shell import EnvEntry, env_pins, logical_lines, pins_on

MODEL_KEYS = frozenset(
    {
        "model",
        "model_id",
        "model_name",
        "model_name_or_path",
        "pretrained_model_name_or_path",
        "base_model",
        "repo_id",
        "modelId",
        "modelID",
        "modelName",
        "modelURL",
        "tokenizer",
    }
)
REVISION_KEYS = ("revision", "model_revision", "modelRevision")
SCRIPT_KEYS = frozenset({"run", "script", "before_script", "after_script"})
"""Shell in CI YAML: GitHub Actions `run:`, GitLab `script:` (a string or a list)."""
CONTAINER_KEYS = ("entrypoint", "command", "args")
"""A container's command line (compose, Kubernetes), read as one: `args` follow `command`."""
ENV_KEYS = {"env": "yaml:env", "environment": "compose:environment"}
"""Variables: GitHub Actions and Kubernetes `env:` (mapping, or `name`/`value` list), compose."""
# NOTE: aliases make a node graph, not a tree; each node is visited once and at most this many,
# so a billion-laughs document costs a bounded walk.
MAX_NODES = 100_000


def scan_yaml(path: str, raw: bytes, spelling: str = "yaml") -> list[Pin]:
    """Model keys in every mapping; container command lines, CI scripts and variables.

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
        found += _container(dict(pairs), lines, path)
        for key, value in pairs:
            if key in SCRIPT_KEYS:
                found += _script(value, lines, path)
            elif key in ENV_KEYS:
                found += _environment(value, lines, path, ENV_KEYS[key])
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
        own = values.get(f"{key}_revision", values.get(f"{key}Revision", revision_node))
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


def _argv(node: yaml.Node) -> list[str]:
    if isinstance(node, yaml.ScalarNode):
        return words(node.value) or []
    argv: list[str] = []
    for item in node.value if isinstance(node, yaml.SequenceNode) else ():
        text = _scalar(item) or ""
        argv += (words(text) or [text]) if " " in text else [text]
    return argv


def _container(values: dict[str, yaml.Node], lines: list[bytes], path: str) -> list[Pin]:
    """`entrypoint` + `command` + `args` as one command line; model flags alone count (an
    image's entrypoint launches the server: `args: [--model, org/m, --revision, …]`)."""
    nodes = [values[k] for k in CONTAINER_KEYS if k in values]
    if not nodes:
        return []
    argv = [word for node in nodes for word in _argv(node)]
    first = min(_node_span(n)[0] for n in nodes)
    last = max(_node_span(n)[1] for n in nodes)
    return pins_on(lines, first, last, argv, path, bare=True)


def _script(node: yaml.Node, lines: list[bytes], path: str) -> list[Pin]:
    """A CI step's shell: each command of a block scalar at its own line."""
    if isinstance(node, yaml.SequenceNode):
        return [pin for item in node.value for pin in _script(item, lines, path)]
    if not isinstance(node, yaml.ScalarNode):
        return []
    first, last = _node_span(node)
    if node.style not in ("|", ">"):
        return pins_on(lines, first, last, words(node.value) or [], path)
    # NOTE: a block's content starts on the line after its `|`; end_mark sits at column 0 of
    # the line after it (or inside the last line at the end of the file).
    end = node.end_mark.line if node.end_mark.column == 0 else node.end_mark.line + 1
    body = b"\n".join(line.strip() for line in lines[node.start_mark.line + 1 : end])
    if node.style == ">":  # folded: the lines are one command
        return pins_on(lines, first + 1, end, words(node.value) or [], path)
    found = []
    for start, stop, text in logical_lines(body):
        offset = node.start_mark.line + 1
        found += pins_on(lines, start + offset, stop + offset, words(text) or [], path)
    return found


def _environment(node: yaml.Node, lines: list[bytes], path: str, spelling: str) -> list[Pin]:
    entries: list[EnvEntry] = []
    if isinstance(node, yaml.MappingNode):
        entries = [
            (_scalar(k) or "", _scalar(v) or "", k.start_mark.line + 1) for k, v in node.value
        ]
    elif isinstance(node, yaml.SequenceNode):
        for item in node.value:
            line = item.start_mark.line + 1
            if isinstance(item, yaml.MappingNode):  # Kubernetes: {name: MODEL_ID, value: …}
                fields = {_scalar(k): v for k, v in item.value}
                name, value = fields.get("name"), fields.get("value")
                if name is not None and value is not None:  # at the value's line, to bump it
                    entries.append(
                        (_scalar(name) or "", _scalar(value) or "", _node_span(value)[0])
                    )
            else:  # compose: "MODEL_ID=org/m"
                key, _, value = (_scalar(item) or "").partition("=")
                entries.append((key, value, line))
    return env_pins(lines, entries, path, spelling)


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
