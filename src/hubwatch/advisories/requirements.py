"""pip requirements files read as pip reads them, each requirement by packaging's grammar.

pip's own rules (pip/_internal/req/req_file.py), which no maintained library exposes: a byte-order
mark names the encoding; `\\` at the end of a line joins the next; `#` after whitespace (a space
or a tab) or at the start begins a comment; a line's options (`--hash=…`, `--config-settings`)
start at its first token beginning with `-`; a line that starts with `-` is only options (`-r`,
`-c`, `-e`, `--index-url`…). The requirement itself, markers included, is PEP 508 as
`packaging.requirements.Requirement` reads it.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Iterator
from dataclasses import dataclass

from packaging.requirements import InvalidRequirement, Requirement

_BOMS = (
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
)
_COMMENT = re.compile(r"(^|\s+)#.*$")
MAX_LINE = 10_000
"""Longer logical lines are refused: no requirement needs them, a hostile file might."""


@dataclass(frozen=True, slots=True)
class RequirementLine:
    """One requirement of a requirements file and the line it starts on."""

    number: int
    requirement: Requirement


@dataclass
class RequirementsFile:
    """The requirements of one file and what could not be read in it."""

    requirements: list[RequirementLine]
    problems: list[str]


def decode(data: bytes) -> tuple[str, str | None]:
    """The file's text (its BOM's encoding, else UTF-8, else Latin-1) and a note if not UTF-8.

    NOTE: Latin-1 maps every byte, so one stray byte (often in a comment) loses no pin.
    """
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            return data[len(bom) :].decode(encoding, errors="replace"), None
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError as exc:
        note = f"not UTF-8 ({exc.reason} at byte {exc.start}); read as Latin-1"
        return data.decode("latin-1"), note


def logical_lines(text: str) -> Iterator[tuple[int, str]]:
    """(first line number, text) of each logical line: comments removed, `\\` joins lines."""
    pending: list[str] = []
    start = 0
    for number, raw in enumerate(text.splitlines(), 1):
        line = _COMMENT.sub("", raw)
        if not pending:
            start = number
        if line.endswith("\\"):
            pending.append(line[:-1])
            continue
        pending.append(line)
        yield start, " ".join(pending).strip()
        pending = []
    if pending:
        yield start, " ".join(pending).strip()


def requirement_text(line: str) -> str:
    """The requirement part of a logical line: the tokens before its first option."""
    args = []
    for token in line.split():
        if token.startswith("-"):
            break
        args.append(token)
    return " ".join(args)


def parse(data: bytes, path: str) -> RequirementsFile:
    """Every requirement of a requirements file; lines that are not one become problems."""
    text, note = decode(data)
    found = RequirementsFile([], [f"{path}: {note}"] if note else [])
    for number, line in logical_lines(text):
        if not line or line.startswith("-"):  # blank, or options only (-r, -e, --index-url…)
            continue
        if len(line) > MAX_LINE:
            found.problems.append(f"{path}:{number}: a line over {MAX_LINE} characters")
            continue
        spec = requirement_text(line)
        try:
            requirement = Requirement(spec)
        except InvalidRequirement as exc:
            found.problems.append(f"{path}:{number}: not a requirement: {exc}")
            continue
        found.requirements.append(RequirementLine(number, requirement))
    return found


def pinned(requirement: Requirement) -> str | None:
    """The version a requirement pins exactly (`==1.2`, `===1.2`), else None (a range)."""
    specs = list(requirement.specifier)
    if len(specs) == 1 and specs[0].operator in ("==", "===") and "*" not in specs[0].version:
        return specs[0].version
    return None
