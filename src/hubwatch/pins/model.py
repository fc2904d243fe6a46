"""What a scan finds: one model reference (a pin) at a file and line."""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

_SHA = re.compile(r"[0-9a-f]{7,40}")
# Hub ids are `org/name`; a local path (./m, /models/m, ~/m) or a bare legacy name is not a pin.
_REPO = re.compile(r"[A-Za-z0-9][\w.-]{0,95}/[A-Za-z0-9][\w.-]{0,95}", re.ASCII)


class RefKind(StrEnum):
    """How a reference names its revision."""

    SHA = "sha"
    """A commit sha, full or abbreviated (7 hex digits or more)."""
    BRANCH = "branch"
    """A branch or tag name: it moves without the code changing."""
    UNPINNED = "unpinned"
    """No revision at all: whatever `main` is at load time."""
    UNRESOLVED = "unresolved"
    """The repo or revision is an expression a scan cannot evaluate (an f-string, `$VAR`)."""


@dataclass(frozen=True, slots=True)
class Pin:
    """One model reference found in a file."""

    repo: str | None
    """`org/name`; None when the repo itself is unresolved."""
    ref: str | None
    """The revision as written (a sha, a branch or tag); None when unpinned or unresolved."""
    kind: RefKind
    path: str
    """The file, as reached from the scanned path."""
    line: int
    """1-based line of the reference (the call, the command, the key)."""
    spelling: str
    """How it was written, e.g. `python:from_pretrained`, `shell:vllm serve`, `yaml:model`."""
    at: tuple[int, int] | None = None
    """Where the sha literal sits, (1-based line, 0-based byte column), when it can be rewritten
    in place; a constant's sha sits on the constant's line, not the call's."""
    expression: str | None = None
    """The source text that could not be resolved (UNRESOLVED only)."""
    url: str | None = None
    """A git URL or path to read the repo from (lockfile `source = "git"`); None: the Hub."""
    reason: str | None = None
    """Why it is pinned there (lockfile `reason`)."""


def looks_like_repo(text: str) -> bool:
    """Whether `text` reads as a Hub repo id `org/name` (not a path, not a URL)."""
    return _REPO.fullmatch(text) is not None and ".." not in text


def classify_ref(ref: str | None) -> RefKind:
    """SHA for hex of 7 to 40 digits, UNPINNED for None, a branch or tag otherwise."""
    if ref is None:
        return RefKind.UNPINNED
    if "$" in ref or "{" in ref:
        return RefKind.UNRESOLVED
    return RefKind.SHA if _SHA.fullmatch(ref) else RefKind.BRANCH


def make_pin(
    repo: str | None,
    ref: str | None,
    path: str,
    line: int,
    spelling: str,
    at: tuple[int, int] | None = None,
) -> Pin:
    """A Pin whose kind follows from `repo` and `ref`; a `$VAR` in either is UNRESOLVED."""
    if repo is None or "$" in repo or "{" in repo:
        return Pin(None, None, RefKind.UNRESOLVED, path, line, spelling, expression=repo)
    kind = classify_ref(ref)
    if kind is RefKind.UNRESOLVED:
        return Pin(repo, None, kind, path, line, spelling, expression=ref)
    return Pin(repo, ref, kind, path, line, spelling, at if kind is RefKind.SHA else None)


def locate(lines: list[bytes], first: int, last: int, token: str) -> tuple[int, int] | None:
    """The first (line, byte column) of `token` standing alone in lines `first`..`last` (1-based).

    Standing alone: not inside a longer run of letters and digits, so a short sha is not found
    inside a longer one.
    """
    raw = token.encode()
    pattern = re.compile(rb"(?<![0-9A-Za-z])" + re.escape(raw) + rb"(?![0-9A-Za-z])")
    for number in range(max(first, 1), min(last, len(lines)) + 1):
        found = pattern.search(lines[number - 1])
        if found:
            return number, found.start()
    return None
