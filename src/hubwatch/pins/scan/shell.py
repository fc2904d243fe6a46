"""Model references on command lines: shell scripts, Dockerfiles, Makefiles, `.env` files."""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterator, Sequence

from hubwatch.pins.model import Pin, locate, looks_like_repo, make_pin
from hubwatch.pins.scan.commands import CommandRef, command_refs, flag_refs, hub_repo, words

# Environment variables that name a model and its revision (TGI reads MODEL_ID and REVISION).
MODEL_VARS = frozenset({"MODEL_ID", "HF_MODEL_ID", "HF_HUB_MODEL_ID", "MODEL", "MODEL_NAME"})
REVISION_VARS = frozenset({"REVISION", "HF_REVISION", "HF_HUB_REVISION", "MODEL_REVISION"})
_DOCKER_COMMANDS = re.compile(r"(?i)\s*(RUN|CMD|ENTRYPOINT)\s+(.*)", re.DOTALL)
_DOCKER_ENV = re.compile(r"(?i)\s*(ENV|ARG)\s+(.*)", re.DOTALL)
_ASSIGNMENT = re.compile(r"\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*(?:\?=|:=|::=|\+=|=)\s*(.*)")
_MAKE_VAR = re.compile(r"\$\((\w+)\)|\$\{(\w+)\}")
_MODELFILE_FROM = re.compile(r"(?i)\s*FROM\s+(\S+)")

EnvEntry = tuple[str, str, int]
"""(name, value, line) of one variable set in a file."""


def logical_lines(raw: bytes) -> Iterator[tuple[int, int, str]]:
    """(first line, last line, text) of each line with its backslash continuations joined;
    comment lines are dropped, also inside a continued command."""
    # NOTE: bytes.splitlines, not str.splitlines: the latter also breaks at \x0b, \x1c, \u2028…
    # and the numbers must match the lines a bump rewrites.
    text = [line.decode("utf-8", "replace") for line in raw.splitlines()]
    number, start = 0, 0
    parts: list[str] = []
    for number, line in enumerate(text, start=1):
        if line.lstrip().startswith("#"):
            continue
        if not parts:
            start = number
        if line.endswith("\\"):
            parts.append(line[:-1])
            continue
        parts.append(line)
        yield start, number, " ".join(parts)
        parts = []
    if parts:
        yield start, number, " ".join(parts)


def _pins(
    lines: list[bytes], first: int, last: int, refs: Iterator[CommandRef], path: str
) -> list[Pin]:
    found = []
    for ref in refs:
        at = locate(lines, first, last, ref.revision) if ref.revision else None
        found.append(make_pin(ref.repo, ref.revision, path, first, ref.spelling, at))
    return found


def pins_on(
    lines: list[bytes], first: int, last: int, argv: Sequence[str], path: str, bare: bool = False
) -> list[Pin]:
    """The launcher pins in `argv`, a command found on lines `first`..`last` of the file; with
    `bare`, model flags alone count too when no launcher is named (container `args:`)."""
    found = _pins(lines, first, last, command_refs(argv), path)
    if not found and bare:
        found = _pins(lines, first, last, flag_refs(argv), path)
    return found


def scan_shell(path: str, raw: bytes) -> list[Pin]:
    """Launcher command lines in a shell script."""
    lines = raw.splitlines()
    found: list[Pin] = []
    for first, last, text in logical_lines(raw):
        argv = words(text)
        if argv:
            found += pins_on(lines, first, last, argv, path)
    return found


def scan_dockerfile(path: str, raw: bytes) -> list[Pin]:
    """RUN / CMD / ENTRYPOINT commands (shell or JSON form) and ENV / ARG model variables."""
    lines = raw.splitlines()
    found: list[Pin] = []
    for first, last, text in logical_lines(raw):
        if command := _DOCKER_COMMANDS.match(text):
            argv = _exec_form(command.group(2)) or words(command.group(2))
            if argv:
                found += pins_on(lines, first, last, argv, path)
        elif env := _DOCKER_ENV.match(text):
            found += _env_pins(lines, first, last, env.group(2), path)
    return found


def scan_makefile(path: str, raw: bytes) -> list[Pin]:
    """Recipe lines (tab-indented shell, `$(VAR)` taken from the file's own assignments) and
    model variables set in a Makefile."""
    lines = raw.splitlines()
    logical = list(logical_lines(raw))
    entries: list[EnvEntry] = [
        (m.group(1), m.group(2).strip(), first)
        for first, _, text in logical
        if not text.startswith("\t") and (m := _ASSIGNMENT.match(text))
    ]
    values = {name: (value, line) for name, value, line in entries}
    found: list[Pin] = []
    for first, last, text in logical:
        if not text.startswith("\t"):
            continue
        expanded = _MAKE_VAR.sub(lambda m: _value(values, m), text).lstrip("\t@-+")
        found += [
            _at_assignment(p, lines, values)
            for p in pins_on(lines, first, last, words(expanded) or [], path)
        ]
    return sorted(found + env_pins(lines, entries, path, "make:variable"), key=lambda p: p.line)


def _value(values: dict[str, tuple[str, int]], variable: re.Match[str]) -> str:
    name = variable.group(1) or variable.group(2)
    return values[name][0] if name in values else variable.group(0)


def _at_assignment(pin: Pin, lines: list[bytes], values: dict[str, tuple[str, int]]) -> Pin:
    """A revision that came from a variable is rewritten where the variable is set."""
    if pin.at is not None or pin.ref is None or pin.kind.value != "sha":
        return pin
    line = next((n for value, n in values.values() if value == pin.ref), None)
    at = locate(lines, line, line, pin.ref) if line else None
    return dataclasses.replace(pin, at=at)


def scan_dotenv(path: str, raw: bytes) -> list[Pin]:
    """`MODEL_ID=…` / `REVISION=…` pairs of a `.env` file (`export` and quotes allowed)."""
    entries: list[EnvEntry] = []
    for first, _, text in logical_lines(raw):
        if assignment := _ASSIGNMENT.match(text):
            value = words(assignment.group(2)) or [""]
            entries.append((assignment.group(1), value[0] if value else "", first))
    return env_pins(raw.splitlines(), entries, path, "dotenv")


def scan_modelfile(path: str, raw: bytes) -> list[Pin]:
    """An Ollama Modelfile's `FROM hf.co/org/name:tag` (Ollama pins no revision: floating)."""
    found: list[Pin] = []
    for first, _, text in logical_lines(raw):
        if base := _MODELFILE_FROM.match(text):
            repo = hub_repo(base.group(1))
            if repo != base.group(1) and looks_like_repo(repo):
                found.append(make_pin(repo, None, path, first, "modelfile:FROM"))
    return found


def _exec_form(text: str) -> list[str] | None:
    """`["vllm", "serve", …]` as its words; None when it is the shell form."""
    if not text.lstrip().startswith("["):
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        return None
    argv: list[str] = []
    for item in value:  # ["sh", "-c", "vllm serve …"]: the script's own words count
        argv += (words(item) or [item]) if " " in item else [item]
    return argv


def _env_pins(lines: list[bytes], first: int, last: int, text: str, path: str) -> list[Pin]:
    argv = words(text) or []
    if len(argv) == 2 and "=" not in argv[0]:  # the legacy `ENV KEY value` form
        pairs = [(argv[0], argv[1])]
    else:
        pairs = [(k, v) for k, _, v in (w.partition("=") for w in argv)]
    return env_pins(lines, [(k, v, first) for k, v in pairs], path, "dockerfile:env", last)


def _revision(entries: Sequence[EnvEntry]) -> tuple[int, str] | None:
    found = [(line, value) for name, value, line in entries if name in REVISION_VARS and value]
    return min(found, key=lambda f: f[0]) if found else None


def env_pins(
    lines: list[bytes],
    entries: Sequence[EnvEntry],
    path: str,
    spelling: str,
    last: int | None = None,
) -> list[Pin]:
    """Pins from model variables set together (each at its own line; one pin per repo), the
    revision located from the line that sets it to `last` (a continued line's end)."""
    revision = _revision(entries)
    found: dict[str, Pin] = {}
    for name, repo, line in sorted(entries, key=lambda e: (e[2], e[0])):
        if name not in MODEL_VARS or repo in found or not (looks_like_repo(repo) or "$" in repo):
            continue
        at, ref = None, None
        if revision is not None:
            ref = revision[1]
            at = locate(lines, revision[0], max(revision[0], last or 0), ref)
        found[repo] = make_pin(repo, ref, path, line, spelling, at)
    return list(found.values())
