"""Model references on command lines: shell scripts, Dockerfiles, compose `command:` values."""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterator, Sequence

from hubwatch.pins.model import Pin, locate, looks_like_repo, make_pin

# Launchers: (words that start the command, option naming the model or None: first operand).
LAUNCHERS: tuple[tuple[tuple[str, ...], str | None], ...] = (
    (("vllm", "serve"), None),
    (("huggingface-cli", "download"), None),
    (("hf", "download"), None),
    (("text-generation-launcher",), "--model-id"),
)
# Environment variables that name a model and its revision (TGI reads MODEL_ID and REVISION).
MODEL_VARS = frozenset({"MODEL_ID", "HF_MODEL_ID", "HF_HUB_MODEL_ID"})
REVISION_VARS = frozenset({"REVISION", "HF_REVISION", "HF_HUB_REVISION", "MODEL_REVISION"})
_SEPARATORS = frozenset({"&&", "||", ";", "|", "&", "(", ")"})
_DOCKER_COMMANDS = re.compile(r"(?i)\s*(RUN|CMD|ENTRYPOINT)\s+(.*)", re.DOTALL)
_DOCKER_ENV = re.compile(r"(?i)\s*(ENV|ARG)\s+(.*)", re.DOTALL)


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


def words(text: str) -> list[str] | None:
    """Shell words with `&&`, `;` and `|` as their own words; None if it does not split."""
    lexer = shlex.shlex(text, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = "#"
    try:
        return list(lexer)
    except ValueError:  # an unclosed quote: not a command we can read
        return None


def commands(argv: Sequence[str]) -> Iterator[list[str]]:
    """The simple commands in `argv`, split at `&&`, `;`, `|` and friends."""
    current: list[str] = []
    for word in argv:
        if word in _SEPARATORS:
            if current:
                yield current
            current = []
        else:
            current.append(word)
    if current:
        yield current


def _option(args: Sequence[str], name: str) -> str | None:
    for i, arg in enumerate(args):
        if arg == name and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith(name + "="):
            return arg[len(name) + 1 :]
    return None


def _operand(args: Sequence[str]) -> str | None:
    """The first word that is neither an option nor an option's value."""
    skip = False
    for arg in args:
        if skip:
            skip = False
        elif arg.startswith("-"):
            skip = "=" not in arg
        else:
            return arg
    return None


def command_refs(argv: Sequence[str]) -> Iterator[tuple[str, str, str | None]]:
    """(spelling, repo, revision) of each launcher in `argv`."""
    for command in commands(argv):
        for i in range(len(command)):
            for head, model_option in LAUNCHERS:
                if tuple(command[i : i + len(head)]) != head:
                    continue
                args = command[i + len(head) :]
                repo = _option(args, model_option) if model_option else _operand(args)
                if repo is not None and (looks_like_repo(repo) or "$" in repo):
                    yield f"shell:{' '.join(head)}", repo, _option(args, "--revision")


def env_refs(pairs: Sequence[tuple[str, str]]) -> Iterator[tuple[str, str | None]]:
    """(repo, revision) from MODEL_ID / REVISION style variables set together."""
    values = dict(pairs)
    for name in sorted(MODEL_VARS & values.keys()):
        repo = values[name]
        if looks_like_repo(repo) or "$" in repo:
            yield repo, next((values[v] for v in sorted(REVISION_VARS) if v in values), None)


def pins_on(lines: list[bytes], first: int, last: int, argv: Sequence[str], path: str) -> list[Pin]:
    """The launcher pins in `argv`, a command found on lines `first`..`last` of the file."""
    found = []
    for spelling, repo, revision in command_refs(argv):
        at = locate(lines, first, last, revision) if revision else None
        found.append(make_pin(repo, revision, path, first, spelling, at))
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
    return env_pins(lines, first, last, pairs, path, "dockerfile:env")


def env_pins(
    lines: list[bytes],
    first: int,
    last: int,
    pairs: Sequence[tuple[str, str]],
    path: str,
    spelling: str,
) -> list[Pin]:
    """Pins from model variables set on lines `first`..`last`."""
    found = []
    for repo, revision in env_refs(pairs):
        at = locate(lines, first, last, revision) if revision else None
        found.append(make_pin(repo, revision, path, first, spelling, at))
    return found
