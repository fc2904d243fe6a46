"""Pure parsers of git output that untrusted bytes cannot forge: raw commits, `ls-tree -z`, batches.

Every field here is either fixed-width (hex object ids), length-prefixed (`cat-file --batch`) or
NUL-terminated (`ls-tree -z`), so no byte a commit message, author or file name may hold can start
a new record. The parsers raise `UnexpectedResponse` only, and the commit parser never raises.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from hubwatch.errors import UnexpectedResponse
from hubwatch.models import CommitInfo, CommitSha

# git-lfs pointer spec: https://github.com/git-lfs/git-lfs/blob/main/docs/spec.md
# Pointers are small (spec: < 1024 bytes) text files with a version line, an oid and a size.
LFS_POINTER_MAX = 1024
_LFS_POINTER = re.compile(
    rb"^version https://git-lfs\.github\.com/spec/v1\n(?:[a-z0-9.-]+ [^\n]*\n)*?"
    rb"oid sha256:(?P<oid>[0-9a-f]{64})\n(?:[a-z0-9.-]+ [^\n]*\n)*?size (?P<size>\d+)\n"
)
_OID = re.compile(rb"[0-9a-f]{40}|[0-9a-f]{64}")
_TIMESTAMP = re.compile(rb"-?[0-9]+")
_SIZE = re.compile(rb"[0-9]{1,20}")
_TIMESTAMP_DIGITS = 30
"""Longer timestamps are clamped without being read as numbers (an int of 5,000 digits is slow)."""
# Codecs that transform rather than decode text, or whose decoder is slow on hostile input.
_REFUSED_CODECS = frozenset({"idna", "punycode", "unicode_escape", "raw_unicode_escape"})
MIN_DATE = datetime(1, 1, 1, tzinfo=UTC)
MAX_DATE = datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC)
_DAY = 86400


def parse_lfs_pointer(data: bytes) -> tuple[str, int] | None:
    """(sha256, size) if `data` is a git-lfs pointer file, else None."""
    if len(data) >= LFS_POINTER_MAX:
        return None
    match = _LFS_POINTER.match(data)
    if match is None:
        return None
    return match["oid"].decode(), int(match["size"])


# -- git cat-file --batch ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class BatchObject:
    """One object of a `git cat-file --batch` (or `--batch-check`) answer."""

    name: str
    """The name asked for."""
    kind: str | None
    """`blob`, `tree`, `commit`, `tag`; None when git answered `missing` (or `ambiguous`)."""
    data: bytes = b""
    """The object's bytes (none from `--batch-check`)."""
    size: int = 0


def read_batch(out: bytes, names: Sequence[str], *, with_data: bool = True) -> list[BatchObject]:
    """Split the answer of `git cat-file --batch` to `names` (one line each), in order.

    Each object is `<oid> <type> <size>\\n<size bytes>\\n` (no bytes from `--batch-check`), so
    content never needs escaping.
    """
    objects: list[BatchObject] = []
    pos = 0
    for name in names:
        end = out.find(b"\n", pos)
        if end < 0:
            raise _unreadable("cat-file --batch", pos)
        found = batch_header(out[pos:end])
        pos = end + 1
        if found is None:
            raise _unreadable("cat-file --batch", end)
        kind, size = found
        if kind is None:
            objects.append(BatchObject(name, None))
            continue
        if not with_data:
            objects.append(BatchObject(name, kind, size=size))
            continue
        if out[pos + size : pos + size + 1] != b"\n":
            raise _unreadable("cat-file --batch", pos)
        objects.append(BatchObject(name, kind, out[pos : pos + size], size))
        pos += size + 1
    if pos != len(out):
        raise _unreadable("cat-file --batch", pos)
    return objects


def batch_header(line: bytes) -> tuple[str | None, int] | None:
    """(type, size) from one `cat-file --batch` header line (without its newline); (None, 0)
    for a missing or ambiguous object; None when the line is not a header."""
    fields = line.split(b" ")
    if len(fields) == 2 and fields[1] in (b"missing", b"ambiguous"):
        return None, 0
    if len(fields) != 3 or not _OID.fullmatch(fields[0]) or not _SIZE.fullmatch(fields[2]):
        return None
    return fields[1].decode("ascii", "replace"), int(fields[2])


def _unreadable(command: str, pos: int) -> UnexpectedResponse:
    return UnexpectedResponse(f"git {command} answered something unreadable at byte {pos}")


# -- git ls-tree -r -l -z ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TreeRow:
    """One entry of `git ls-tree -r -l -z`."""

    mode: str
    kind: str
    """`blob` (files and symlinks), `commit` (submodules) or `tree`."""
    oid: str
    size: int | None
    """None where git could not read the object (`BAD` or `-` for a blob: it is missing)."""
    path: bytes
    problem: str | None = None
    """Why the path cannot be taken as named, when reading the trees showed it (`path_problem`
    judges the rest by the path alone)."""


def parse_tree(out: bytes) -> list[TreeRow]:
    """The rows of `git ls-tree -r -l -z`: `<mode> <type> <oid> <size>\\t<path>\\0` each."""
    rows: list[TreeRow] = []
    pos = 0
    for item in out.split(b"\0"):
        if item:
            meta, tab, path = item.partition(b"\t")
            fields = meta.split()
            if not tab or len(fields) != 4 or not _OID.fullmatch(fields[2]):
                raise _unreadable("ls-tree", pos)
            mode, kind, oid = (f.decode("ascii", "replace") for f in fields[:3])
            size = int(fields[3]) if _SIZE.fullmatch(fields[3]) else None
            rows.append(TreeRow(mode, kind, oid, size, path))
        pos += len(item) + 1
    return rows


def parse_raw_tree(data: bytes, oid_bytes: int = 20) -> list[tuple[str, bytes, str]]:
    """(mode, name, oid) of each entry of a raw tree object: `<mode> <name>\\0<binary oid>`."""
    entries = []
    pos = 0
    while pos < len(data):
        space = data.find(b" ", pos, pos + 8)
        nul = data.find(b"\0", space + 1)
        if space < 0 or nul < 0 or nul + 1 + oid_bytes > len(data):
            raise _unreadable("cat-file tree", pos)
        mode = data[pos:space].decode("ascii", "replace")
        oid = data[nul + 1 : nul + 1 + oid_bytes].hex()
        entries.append((mode, data[space + 1 : nul], oid))
        pos = nul + 1 + oid_bytes
    return entries


def path_problem(path: bytes) -> str | None:
    """Why a tree path cannot be stored as named (`..`, absolute, empty parts, `.git`), if so."""
    parts = path.split(b"/")
    if not path or b"\0" in path or any(p in (b"", b".", b"..") or _is_dot_git(p) for p in parts):
        return f"invalid file name '{shown_path(path)}'"
    return None


def slash_in_name(path: bytes) -> str:
    """The problem of a path one of whose tree entries holds a `/` in its name: a git tree never
    does (git fsck refuses it); read as is, `a/b` in one entry would pass for a folder `a`."""
    return f"invalid file name '{shown_path(path)}' (a tree entry's name holds '/')"


def _is_dot_git(part: bytes) -> bool:
    # git refuses .git in any case (verify_path): on case-insensitive disks .GIT is .git
    return part.lower() == b".git"


def shown_path(path: bytes, limit: int = 200) -> str:
    """A path as text fit for a one-line reason: undecodable bytes and controls replaced."""
    text = path[: limit * 4].decode("utf-8", "replace")[:limit]
    return "".join("\ufffd" if ord(c) < 32 or ord(c) == 127 else c for c in text)


# -- raw commit objects -----------------------------------------------------------------------


def parse_commit(sha: str, raw: bytes) -> CommitInfo:
    """A commit object's metadata, as `git cat-file commit` prints it; never raises.

    What cannot be read as is (a date outside 0001-9999, bytes that are not text) is replaced by
    the nearest value that can, and said in `problems`.
    """
    # the message starts after the first empty line, as git reads it (pretty.c)
    head, _, body = (b"", b"", raw[1:]) if raw.startswith(b"\n") else raw.partition(b"\n\n")
    headers = _headers(head)
    problems: list[str] = []
    codec = _codec(headers.get(b"encoding", [b""])[0])
    parents = []
    for value in headers.get(b"parent", []):
        if _OID.fullmatch(value):
            parents.append(CommitSha(value.decode()))
        else:
            problems.append("commit has a parent line that is not an object id; ignored")
    authors: tuple[str, ...] = ()
    if b"author" in headers:
        author, _ = _ident(headers[b"author"][0])
        authors = (_text(author, codec, "author name", problems),)
    date_ident = headers.get(b"committer", headers.get(b"author", [b""]))[0]
    date = _commit_date(_ident(date_ident)[1], problems)
    text = _text(body, codec, "commit message", problems)
    title, _, message = text.partition("\n")
    return CommitInfo(
        sha=CommitSha(sha),
        parents=tuple(parents),
        date=date,
        authors=authors,
        title=title.strip(),
        message=message.strip("\n"),
        problems=tuple(problems),
    )


def _headers(head: bytes) -> dict[bytes, list[bytes]]:
    """Header lines by key; continuation lines (a signature, a merged tag) are skipped."""
    headers: dict[bytes, list[bytes]] = {}
    for line in head.split(b"\n"):
        if line.startswith(b" "):
            continue
        key, _, value = line.partition(b" ")
        headers.setdefault(key, []).append(value)
    return headers


def _ident(value: bytes) -> tuple[bytes, bytes]:
    """(`Name <email>`, the date after it) of an author or committer line, as git splits it."""
    lt = value.find(b"<")
    gt = value.find(b">", lt + 1) if lt >= 0 else -1
    if gt < 0:
        return value.strip(), b""
    name = value[:lt].rstrip(b" \t\n\r")  # git's isspace(); the name keeps leading blanks
    return name + b" <" + value[lt + 1 : gt] + b">", value[value.rfind(b">") + 1 :]


def _codec(name: bytes) -> str:
    """The codec an `encoding` header names when Python has it as a text codec; else UTF-8."""
    try:
        info = codecs.lookup(name.decode("ascii"))
    except (LookupError, UnicodeDecodeError, ValueError):
        return "utf-8"
    if not getattr(info, "_is_text_encoding", True) or info.name in _REFUSED_CODECS:
        return "utf-8"
    return info.name


def _text(raw: bytes, codec: str, what: str, problems: list[str]) -> str:
    try:
        return raw.decode(codec)
    except UnicodeDecodeError as exc:
        shown = "UTF-8" if codec == "utf-8" else codec
        problems.append(f"{what} is not {shown} (byte {exc.start}); stored with replacements")
        return raw.decode(codec, "replace")


def _commit_date(raw: bytes, problems: list[str]) -> datetime:
    """The commit date in UTC (the time zone only says how to show it), clamped to 0001-9999."""
    fields = raw.split()
    if not fields or not _TIMESTAMP.fullmatch(fields[0]):
        problems.append("commit date is missing or not a number; stored as 1970-01-01T00:00:00Z")
        return datetime(1970, 1, 1, tzinfo=UTC)
    digits = fields[0].lstrip(b"-")
    if len(digits.lstrip(b"0")) > _TIMESTAMP_DIGITS:
        seconds = (-1 if fields[0].startswith(b"-") else 1) * 10**_TIMESTAMP_DIGITS
    else:
        seconds = int(fields[0])
    days, rest = divmod(seconds, _DAY)
    year, month, day = _civil(days)
    if 1 <= year <= 9999:
        return datetime(year, month, day, tzinfo=UTC).replace(
            hour=rest // 3600, minute=rest // 60 % 60, second=rest % 60
        )
    stored = MAX_DATE if year > 9999 else MIN_DATE
    shown = f"{'-' if year < 0 else ''}{abs(year):04d}-{month:02d}-{day:02d}"
    problems.append(
        f"commit date {shown} is outside 0001–9999; stored as {stored:%Y-%m-%dT%H:%M:%SZ}"
    )
    return stored


def _civil(days: int) -> tuple[int, int, int]:
    """(year, month, day) of a day count since 1970-01-01, for any integer (proleptic Gregorian).

    H. Hinnant's `civil_from_days` (http://howardhinnant.github.io/date_algorithms.html).
    """
    z = days + 719468
    era = z // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day = doy - (153 * mp + 2) // 5 + 1
    month = mp + 3 if mp < 10 else mp - 9
    return yoe + era * 400 + (month <= 2), month, day
