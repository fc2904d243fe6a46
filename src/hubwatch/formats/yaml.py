"""Upstream YAML (model card front matter) read with a safe loader and bounded expansion.

PyYAML's SafeLoader builds plain data only, but it shares an aliased node rather than copying it:
a 355-byte card with ten aliases per level stands for megabytes once anything walks it (the
card kept, its JSON, every API answer). `BoundedLoader` counts what aliases add as if they were
copied and refuses past a limit; it bounds nesting before its recursive composer can exhaust
the stack, and the digits of a number before `int()` is quadratic.
"""

from __future__ import annotations

import math
from typing import Any

import yaml
from yaml.events import (
    AliasEvent,
    MappingStartEvent,
    NodeEvent,
    ScalarEvent,
    SequenceStartEvent,
)
from yaml.nodes import Node, ScalarNode

from hubwatch.errors import UnsafeContent
from hubwatch.formats.json import MAX_DEPTH, MAX_INT_DIGITS, NOT_FINITE, TOO_DEEP

MAX_FRONT_MATTER_BYTES = 512 * 1024
"""Largest front matter parsed (cards with a full MTEB model-index reach ~100 KB)."""
MAX_ALIAS_NODES = 10_000
"""Most nodes that aliases may add, counted as if each alias were a copy of its anchor."""
MAX_ALIAS_BYTES = 100_000
"""Most scalar bytes that aliases may add, counted likewise."""


class BoundedLoader(yaml.SafeLoader):
    """SafeLoader that refuses deep nesting, far-reaching aliases, and over-long numbers.

    Subclass it (as a SafeLoader) to change resolvers; the bounds stay.
    """

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0
        self._expanded = [0, 0]  # nodes and scalar bytes so far, aliases expanded
        self._by_aliases = [0, 0]  # of which aliases added
        self._sizes: dict[str, tuple[int, int]] = {}  # each finished anchor's expanded size

    def compose_node(self, parent: Node | None, index: int) -> Node | None:
        event: NodeEvent = self.peek_event()  # type: ignore[no-untyped-call]
        if isinstance(event, AliasEvent):
            self._alias(str(event.anchor))
            return super().compose_node(parent, index)
        nested = isinstance(event, SequenceStartEvent | MappingStartEvent)
        if nested:
            self._depth += 1
            if self._depth > MAX_DEPTH:
                raise UnsafeContent(TOO_DEEP)
        start = tuple(self._expanded)
        self._expanded[0] += 1
        if isinstance(event, ScalarEvent):
            self._expanded[1] += len(event.value)
        node = super().compose_node(parent, index)
        self._depth -= nested
        if event.anchor is not None:
            self._sizes[event.anchor] = (
                self._expanded[0] - start[0],
                self._expanded[1] - start[1],
            )
        return node

    def _alias(self, anchor: str) -> None:
        if anchor not in self._sizes:
            if anchor in self.anchors:  # open: the alias sits inside its own anchor
                raise UnsafeContent(f"alias {anchor[:40]!r} refers to its own node")
            return  # undefined: the composer says so
        nodes, size = self._sizes[anchor]
        for counter in (self._expanded, self._by_aliases):
            counter[0] += nodes
            counter[1] += size
        if self._by_aliases[0] > MAX_ALIAS_NODES:
            raise UnsafeContent(f"aliases expand too far (over {MAX_ALIAS_NODES} nodes)")
        if self._by_aliases[1] > MAX_ALIAS_BYTES:
            raise UnsafeContent(f"aliases expand too far (over {MAX_ALIAS_BYTES} bytes)")

    def construct_bounded_int(self, node: ScalarNode) -> int:
        _digits_within(str(self.construct_scalar(node)))
        value: int = self.construct_yaml_int(node)
        return value

    def construct_bounded_float(self, node: ScalarNode) -> float:
        _digits_within(str(self.construct_scalar(node)))
        value: float = self.construct_yaml_float(node)
        if not math.isfinite(value):
            raise UnsafeContent(NOT_FINITE)
        return value


BoundedLoader.add_constructor("tag:yaml.org,2002:int", BoundedLoader.construct_bounded_int)
BoundedLoader.add_constructor("tag:yaml.org,2002:float", BoundedLoader.construct_bounded_float)


def _digits_within(literal: str) -> None:
    digits = sum(c.isdigit() for c in literal) if len(literal) > MAX_INT_DIGITS else 0
    if digits > MAX_INT_DIGITS:
        raise UnsafeContent(f"number too large ({digits} digits; at most {MAX_INT_DIGITS})")


def load_bounded(
    text: str,
    loader: type[BoundedLoader] = BoundedLoader,
    max_bytes: int = MAX_FRONT_MATTER_BYTES,
) -> Any:
    """One YAML document as plain data; UnsafeContent saying why when it cannot be read."""
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > max_bytes:
        raise UnsafeContent(f"too large ({size} bytes; at most {max_bytes})")
    try:
        return yaml.load(text, Loader=loader)  # a SafeLoader subclass: plain data only
    except UnsafeContent:
        raise
    except yaml.MarkedYAMLError as exc:
        where = exc.problem_mark or exc.context_mark
        at = f" at line {where.line + 1} column {where.column + 1}" if where else ""
        raise UnsafeContent(f"not valid YAML: {_line(exc.problem or exc.context)}{at}") from None
    except yaml.YAMLError as exc:
        raise UnsafeContent(f"not valid YAML: {_line(exc)}") from None
    except Exception as exc:  # NOTE: constructors raise builtins (a date 2024-13-45: ValueError)
        raise UnsafeContent(f"not valid YAML: {type(exc).__name__}: {_line(exc)}") from None


def _line(problem: object) -> str:
    return " ".join(str(problem).split())[:200]


def load_front_matter(text: str) -> Any:
    """A README's YAML front matter (between `---` lines at its top) as plain data.

    None when the text has no front matter; UnsafeContent saying why when it cannot be read.
    """
    parts = split_front_matter(text)
    return None if parts is None else load_bounded(parts[0])


def split_front_matter(text: str) -> tuple[str, str] | None:
    """A README cut into its front matter's YAML and the body after it; None without front
    matter; UnsafeContent when it is not closed. Only the first lines are looked through (at
    most what a front matter may hold), so an unclosed one costs no more than a closed one."""
    if not text.startswith("---"):
        return None
    head = text[: MAX_FRONT_MATTER_BYTES + 1024]  # characters: at least as many as its bytes
    lines, kept = head.splitlines(), head.splitlines(keepends=True)
    whole = len(head) == len(text)
    complete = len(lines) if whole else len(lines) - 1  # the last line of a cut head may go on
    end = next((i for i in range(1, complete) if lines[i].strip() == "---"), None)
    if end is None:
        within = "" if whole else f" within its first {MAX_FRONT_MATTER_BYTES} bytes"
        raise UnsafeContent(f"not closed by '---'{within}")
    return "\n".join(lines[1:end]), "".join(kept[end + 1 :]) + text[len(head) :]
