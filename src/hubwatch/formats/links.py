"""The other repos whose code a model's config.json makes a load run: external `auto_map`
targets and Hub kernel repos."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from hubwatch.errors import InvalidRepoId
from hubwatch.models.refs import LinkKind
from hubwatch.models.repo import validate_repo_id

# NOTE: an auto_map value may point into another repo: "org/repo--modeling.Class"
# (transformers.dynamic_module_utils.get_class_from_dynamic_module splits on "--").
_EXTERNAL = re.compile(r"^([\w.-]+/[\w.-]+)--[\w.]+$")
# A kernel named by repo, as the `kernels` package takes it: "org/name", optionally with the
# layer (`org/name:Layer`) or a revision (`org/name@v1`) after it.
_KERNEL = re.compile(r"^([\w.-]+/[\w.-]+)(?:[:@][\w.@:/-]*)?$")
_DEPTH = 4
_MAX_LINKS = 32
"""A config naming more is cut there: each link is a tracked repo."""


def code_links(config: Mapping[str, Any]) -> list[tuple[str, LinkKind, str]]:
    """(other repo, kind, the value naming it) for each repo a config loads code from, each
    repo once (the first value naming it), in the config's order; at most `_MAX_LINKS`."""
    found: dict[str, tuple[str, LinkKind, str]] = {}
    for repo, kind, via in (*_auto_map(config.get("auto_map")), *_kernels(config, 0)):
        if repo not in found and _valid(repo):
            found[repo] = (repo, kind, via)
    return list(found.values())[:_MAX_LINKS]


def _auto_map(auto_map: Any) -> Iterator[tuple[str, LinkKind, str]]:
    if not isinstance(auto_map, Mapping):
        return
    for value in auto_map.values():
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, str) and (match := _EXTERNAL.match(item)):
                yield match.group(1), LinkKind.AUTO_MAP, item


def _kernels(node: Any, depth: int, named: bool = False) -> Iterator[tuple[str, LinkKind, str]]:
    """Strings under a key naming kernels (`kernels`, `kernel_config`, `kernel_mapping`…)."""
    if depth > _DEPTH:
        return
    if isinstance(node, str):
        if named and (match := _KERNEL.match(node)):
            yield match.group(1), LinkKind.KERNEL, node
    elif isinstance(node, Mapping):
        for key, value in node.items():
            inside = named or (isinstance(key, str) and "kernel" in key.lower())
            yield from _kernels(value, depth + 1, inside)
    elif isinstance(node, list):
        for value in node:
            yield from _kernels(value, depth + 1, named)


def _valid(repo: str) -> bool:
    try:
        validate_repo_id(repo)
    except InvalidRepoId:
        return False
    return True
