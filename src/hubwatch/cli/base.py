"""What every CLI command shares: the typer app, consoles, exit codes, settings, JSON output.

Only what `hubwatch --help` needs is imported here: settings (pydantic), logging (structlog)
and the store (SQLAlchemy, Alembic) are imported by the functions that use them, so a command
pays only for what it uses (issue 15: `--help` took 1 s, 94% of it imports).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, fields, is_dataclass
from datetime import datetime
from enum import Enum, StrEnum
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import orjson
import typer
from rich.console import Console
from rich.markup import escape

from hubwatch import __version__
from hubwatch.cli.hints import about_repo, with_next_step

# The exit codes are re-exported: commands and scripts name them from the CLI.
from hubwatch.errors import EXIT_AUTH as EXIT_AUTH
from hubwatch.errors import EXIT_ERROR as EXIT_ERROR
from hubwatch.errors import EXIT_NOT_FOUND as EXIT_NOT_FOUND
from hubwatch.errors import EXIT_UNREACHABLE as EXIT_UNREACHABLE
from hubwatch.errors import EXIT_USAGE as EXIT_USAGE
from hubwatch.errors import HubwatchError, NotTracked, UnknownRevision
from hubwatch.gcpause import paused_gc
from hubwatch.models import Severity, validate_repo_id

if TYPE_CHECKING:
    from hubwatch.settings import Settings
    from hubwatch.store.base import Store

app = typer.Typer(
    help="Watch model repositories on the Hugging Face Hub (or any git remote) revision by "
    "revision.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
db_app = typer.Typer(help="Database schema commands.", no_args_is_help=True)
app.add_typer(db_app, name="db")

# NOTE: emoji=False, or an upstream ":thumbs_up:" prints as an emoji, not as written.
out = Console(soft_wrap=True, emoji=False)
err = Console(stderr=True, soft_wrap=True, emoji=False)

# ECMA-48 sequences, each removed whole: CSI (ESC [ or C1 CSI) with its parameter, intermediate
# and final bytes; a terminated OSC, DCS, SOS, PM or APC string (ESC ] P X ^ _ or their C1
# forms, up to BEL or ST); any other escape (ESC, intermediates, final). An unterminated string
# loses only its introducer: what follows is shown as text rather than hidden.
_SEQUENCE = re.compile(
    r"(?:\x1b\[|\x9b)[\x30-\x3f]*[\x20-\x2f]*[\x40-\x7e]?"
    r"|(?:\x1b[\]PX^_]|[\x90\x98\x9d-\x9f])[^\x07\x1b\x90\x98\x9c-\x9f]*(?:\x07|\x1b\\|\x9c)"
    r"|\x1b[\x20-\x2f]*[\x30-\x7e]?"
)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # C0 but tab and newline, DEL, C1
_SURROGATE = re.compile(r"[\ud800-\udfff]")  # undecodable bytes kept by surrogateescape
_ONE_LINE = str.maketrans("\t\n", "  ")
_RAW_IN_JSON = re.compile(r"[\x7f-\x9f\ud800-\udfff]")

JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]
RepoArg = Annotated[str, typer.Argument(metavar="ORG/NAME", help="Repository id.")]
RevArg = Annotated[str, typer.Argument(metavar="REV", help="Full or abbreviated commit sha.")]
NewestFirstOption = Annotated[
    bool, typer.Option("--newest-first", help="The newest revision first (default: oldest).")
]
SeverityOption = Annotated[
    Severity | None,
    typer.Option("--severity", help="Only changes at this severity or above."),
]


def cleaned(text: object, *, lines: bool = False) -> str:
    """Upstream text without terminal escape sequences and control characters, for a rich
    `Text` (which reads no markup); tabs and newlines kept with `lines`, spaces without."""
    clean = _SEQUENCE.sub("", str(text))
    if not lines:
        clean = clean.replace("\r\n", " ").translate(_ONE_LINE)
    return _SURROGATE.sub("\N{REPLACEMENT CHARACTER}", _CONTROL.sub("", clean))


def shown(text: object, most: int | None = None, *, lines: bool = False) -> str:
    """Upstream text made safe to print with rich: terminal escape sequences and control
    characters removed, cut to its first `most` characters, rich markup escaped so that it
    prints as written (in a table cell, or followed by a space or the end of the line: a markup
    tag right after it would take a trailing backslash for an escape).

    Tabs and newlines are kept with `lines` (a multi-line detail) and become spaces without it.
    """
    clean = cleaned(text, lines=lines)
    # NOTE: rich's escape doubles a trailing backslash in case a tag follows; at the end of a
    # cell or line it would print twice, so it is escaped with the space that follows instead.
    return escape(clean[:most] + " ")[:-1]


def fail(exc: Exception) -> NoReturn:
    """Print one line, with the next step when there is one, and exit with the error's exit
    code (1 for anything not ours)."""
    code = exc.exit_code if isinstance(exc, HubwatchError) else EXIT_ERROR
    err.print(f"error: {shown(with_next_step(exc))}", highlight=False)
    raise typer.Exit(code)


@contextmanager
def exit_on_error(*also: type[Exception]) -> Iterator[None]:
    """Any HubwatchError (or one of `also`) inside ends the command through `fail`.

    A command is decorated with `@exit_on_error()`, or wraps a few lines in `with exit_on_error():`.
    """
    caught: tuple[type[Exception], ...] = (HubwatchError, *also)
    try:
        yield
    except caught as exc:
        fail(exc)


def settings() -> Settings:
    """The settings from the environment, logging configured with them; a bad one exits 2."""
    with loading():
        from pydantic import ValidationError

        from hubwatch.logging import configure_logging
        from hubwatch.settings import Settings
    try:
        loaded = Settings()
    except ValidationError as exc:
        first = exc.errors()[0]
        err.print(f"error: setting {'.'.join(map(str, first['loc']))}: {first['msg']}")
        raise typer.Exit(EXIT_USAGE) from None
    chosen = _logs.format.value if _logs.format else loaded.log_format
    as_json = chosen == "json" or (_logs.format is None and loaded.log_json)
    configure_logging(loaded.log_level, as_json, loaded.secret_values(), verbose=_logs.verbose)
    return loaded


_LEAVES = frozenset({str, int, float, bool, type(None)})
"""Types `plain` gives back as they are (exactly these: a StrEnum is a str too)."""


def plain(value: Any) -> Any:
    """Dataclasses, enums and datetimes as JSON-able values."""
    if type(value) in _LEAVES:  # most values: answered before any other check
        return value
    if is_dataclass(value) and not isinstance(value, type):
        # NOTE: not `asdict`, which deep-copies every value first (most of `list --json`'s time)
        return {f.name: plain(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, Enum):
        return value.value
    return value


def print_json(value: Any) -> None:
    """`value` as indented JSON, exact: DEL and C1 characters, which JSON may leave raw, are
    written as \\u escapes like the C0 ones, so no terminal acts on them."""
    text = json.dumps(plain(value), indent=2, ensure_ascii=False)
    out.print(_RAW_IN_JSON.sub(_json_escape, text), markup=False, highlight=False)


def _indented(value: Any) -> str:
    """`json.dumps(plain(value), indent=2, ensure_ascii=False)`, through orjson where it
    writes the same text: it reads slotted dataclasses, enums, tuples and datetimes as `plain`
    does, in C (the standard library indents in pure Python: seconds for 100k repos). What
    orjson refuses (a lone surrogate, an integer past 64 bits, a key that is no str) is left to
    the standard library. Only for values without NaN or infinities, which orjson writes null.
    """
    try:
        return orjson.dumps(value, option=orjson.OPT_INDENT_2).decode()
    except TypeError:  # orjson.JSONEncodeError is one
        return json.dumps(plain(value), indent=2, ensure_ascii=False)


def _compact(value: Any) -> str:
    """`json.dumps(value, ensure_ascii=False)` (its separators, ", " and ": ")."""
    return json.dumps(value, ensure_ascii=False)


def print_json_array(pages: Iterable[list[Any]]) -> None:
    """The items of `pages` as the indented JSON array `print_json` writes of their list,
    written a page at a time as they are read: memory bounded by a page, not the listing."""
    write = out.file.write
    opening = "[\n  "
    for page in pages:
        if not page:
            continue
        texts = (_indented(item) for item in page)
        body = ",\n".join(texts).replace("\n", "\n  ")
        write(opening + _escaped(body))
        opening = ",\n  "
    write("[]\n" if opening == "[\n  " else "\n]\n")
    out.file.flush()


def print_json_lines(pages: Iterable[list[Any]]) -> None:
    """The items of `pages` as JSON lines (one compact object a line), a page at a time."""
    for page in pages:
        lines = (_compact(plain(item)) + "\n" for item in page)
        out.file.write(_escaped("".join(lines)))
    out.file.flush()


def _escaped(text: str) -> str:
    """JSON `text` with DEL and C1 characters (and lone surrogates) as \\u escapes."""
    if text.isascii() and "\x7f" not in text:  # most listings: two C scans, no regex
        return text
    return _RAW_IN_JSON.sub(_json_escape, text)


def _json_escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


class LogFormat(StrEnum):
    """How log lines are written on stderr (HUBWATCH_LOG_FORMAT)."""

    CONSOLE = "console"
    JSON = "json"


@dataclass
class LogChoice:
    """The global logging options of this invocation, for `settings()` to apply."""

    format: LogFormat | None = None
    verbose: bool = False


_logs = LogChoice()


@app.callback(invoke_without_command=True)
def _root(
    version: Annotated[bool, typer.Option("--version", help="Print the version.")] = False,
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="Show the libraries' INFO log lines too.")
    ] = False,
    log_format: Annotated[
        LogFormat | None,
        typer.Option(
            "--log-format", help="Log lines as console text or JSON [HUBWATCH_LOG_FORMAT]."
        ),
    ] = None,
) -> None:
    _logs.format, _logs.verbose = log_format, verbose
    if version:
        out.print(f"hubwatch {__version__}")
        raise typer.Exit()


@contextmanager
def stored(repo_id: str | None = None) -> Iterator[Store]:
    """The configured store, started for one command and closed after it; `repo_id` is checked
    first, so a bad id never opens the database."""
    if repo_id is not None:
        validate_repo_id(repo_id)
    cfg = settings()
    with loading():
        from hubwatch.store.sql import open_store
    store = open_store(cfg)
    try:
        yield store
    except (NotTracked, UnknownRevision) as exc:
        raise about_repo(exc, repo_id) from None
    finally:
        store.close()


_freeze_after_loading = False
"""Set by the console entry point: objects made while importing are frozen there (tests that run
commands in process keep an ordinary heap)."""


@contextmanager
def loading() -> Iterator[None]:
    """Imports inside run with the garbage collector paused (`gcpause`); in the console process
    their objects are frozen after, so no later collection (nor the one at exit) walks them.

    Importing allocates tens of thousands of long-lived objects and no garbage: each collection
    it triggers is pure cost (issue 15: ~127k tracked objects, 74 ms a full collection).
    """
    with paused_gc(freeze=_freeze_after_loading):
        yield


def freeze_after_loading() -> None:
    """From now on `loading()` freezes what it imported (the console entry point calls this)."""
    global _freeze_after_loading
    _freeze_after_loading = True
