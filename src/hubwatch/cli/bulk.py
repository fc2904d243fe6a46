"""`track --from FILE` and `track --author NAME`: many repos registered at once, none polled."""

from __future__ import annotations

import sys
from collections.abc import Callable, Container, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, BinaryIO

import typer

from hubwatch.cli.base import EXIT_USAGE, err, loading, settings, shown, stored
from hubwatch.errors import HubwatchError, InvalidRepoId, RepoNotFound
from hubwatch.models import (
    FOLLOW_HEAD,
    RepoRef,
    SourceKind,
    strip_credentials,
    validate_owner,
)

if TYPE_CHECKING:
    from hubwatch.models.refs import RefWatch
    from hubwatch.settings import Settings
    from hubwatch.store.repos import RepoStore

CHUNK = 10_000
"""Repos handed to the store at a time: one progress line on stderr after each."""
SHOWN_INVALID = 20
"""Invalid lines reported one by one; the rest are counted."""

FromOption = Annotated[
    str | None,
    typer.Option(
        "--from",
        metavar="FILE",
        help="Track every repo FILE names (-: stdin), one ORG/NAME a line (with --source git: "
        "ORG/NAME URL); # comments and blank lines skipped. Registered only: the daemon's "
        "workers poll them.",
    ),
]
AuthorOption = Annotated[
    str | None,
    typer.Option(
        metavar="NAME",
        help="Track every model of this Hub user or organisation. Registered only, like --from.",
    ),
]


@dataclass(frozen=True, slots=True)
class Invalid:
    """An entry that names no repo we can track, and why."""

    where: str
    """Where it was read: `FILE:LINE`, or the listing and the item's place in it."""
    reason: str


@dataclass
class Tally:
    """What a bulk registration did so far."""

    read: int = 0
    """Entries read that name a repo (valid or not)."""
    added: int = 0
    already: int = 0
    """Already tracked (or named twice)."""
    invalid: int = 0

    def summary(self) -> str:
        """The last line: what was registered, and what polls the repos."""
        head = (
            f"{self.read:,} repo{'' if self.read == 1 else 's'}: {self.added:,} added, "
            f"{self.already:,} already tracked, {self.invalid:,} invalid"
        )
        if not self.added:
            return head
        return f"{head} — their first poll comes from `hubwatch serve` or `hubwatch worker`"


def parse_lines(
    lines: Iterable[str],
    name: str,
    source: SourceKind,
    branch: str | None,
    hosts: Container[str] = frozenset(),
) -> Iterator[RepoRef | Invalid]:
    """The repos a file names, one a line: `ORG/NAME` (with `--source git`, `ORG/NAME URL`).
    Blank lines and `#` comments (a line's rest from a `#` at its start or after a space) are
    skipped; a line that names no trackable repo is an `Invalid`, named `name:LINE`."""
    for number, raw in enumerate(lines, 1):
        fields = _uncommented(raw).split()
        if not fields:
            continue
        try:
            yield _ref(fields, source, branch, hosts)
        except HubwatchError as exc:
            yield Invalid(f"{name}:{number}", str(exc))


def _uncommented(line: str) -> str:
    if line.lstrip().startswith("#"):
        return ""
    cut = line.find(" #")
    return line if cut < 0 else line[:cut]


def _ref(
    fields: list[str], source: SourceKind, branch: str | None, hosts: Container[str]
) -> RepoRef:
    if source is SourceKind.HUB:
        if len(fields) != 1:
            raise InvalidRepoId(f"expected one repo id (ORG/NAME), got {len(fields)} fields")
        return repo_ref(fields[0], source, None, branch, hosts)
    if len(fields) != 2:
        raise InvalidRepoId("expected ORG/NAME and a git URL or path (with --source git)")
    return repo_ref(fields[0], source, fields[1], branch, hosts)


def repo_ref(
    repo_id: str, source: SourceKind, url: str | None, branch: str | None, hosts: Container[str]
) -> RepoRef:
    """A repo as `track` registers it: the Hub's `main` branch unless told, a git remote's
    HEAD; a git URL's credentials stripped (they live in the settings, for `hosts`)."""
    if source is not SourceKind.GIT:
        return RepoRef(repo_id, source, None, branch or "main")
    if not url:
        raise InvalidRepoId("--source git needs --url URL (a git URL or a local path)")
    return RepoRef(repo_id, source, strip_credentials(url, hosts), branch or FOLLOW_HEAD)


def listed(ids: Iterable[str], author: str, branch: str | None) -> Iterator[RepoRef | Invalid]:
    """The repos of an author's listing; an id we cannot track (the Hub has old ones that
    break its own rules) is an `Invalid`."""
    for number, repo_id in enumerate(ids, 1):
        try:
            yield repo_ref(repo_id, SourceKind.HUB, None, branch, ())
        except HubwatchError as exc:
            yield Invalid(f"the Hub's models of {author}, item {number}", str(exc))


def register(
    store: RepoStore,
    entries: Iterable[RepoRef | Invalid],
    said: Callable[[str], None],
    tally: Tally,
) -> Tally:
    """Add every valid entry to `store` in chunks, none polled, counted in `tally` as they
    are; invalid ones told to `said` (the first SHOWN_INVALID), progress too (a line each
    CHUNK entries). When reading the entries fails, those read before are added first."""
    it = iter(entries)
    try:
        while True:
            chunk, failure = _taken(it, CHUNK)
            _add(store, chunk, said, tally)
            if failure is not None:
                raise failure
            if len(chunk) < CHUNK:
                return tally
            said(f"{tally.read:,} read: {tally.added:,} added so far")
    finally:
        if tally.invalid > SHOWN_INVALID:
            said(f"... and {tally.invalid - SHOWN_INVALID:,} more invalid")


def _taken(
    it: Iterator[RepoRef | Invalid], most: int
) -> tuple[list[RepoRef | Invalid], HubwatchError | None]:
    """Up to `most` entries of `it`, and the error that stopped it early (a listing's page)."""
    chunk: list[RepoRef | Invalid] = []
    try:
        chunk.extend(islice(it, most))
    except HubwatchError as exc:
        return chunk, exc
    return chunk, None


def _add(
    store: RepoStore, chunk: list[RepoRef | Invalid], said: Callable[[str], None], tally: Tally
) -> None:
    refs = [entry for entry in chunk if isinstance(entry, RepoRef)]
    for entry in chunk:
        if isinstance(entry, Invalid):
            tally.invalid += 1
            if tally.invalid <= SHOWN_INVALID:
                said(f"{entry.where}: {entry.reason}")
    added = store.add_repos(refs) if refs else 0
    tally.read += len(chunk)
    tally.added += added
    tally.already += len(refs) - added


def decoded(stream: BinaryIO) -> Iterator[str]:
    """The lines of `stream` as text: UTF-8, an undecodable byte replaced (the line is then
    invalid, and said so), a leading byte order mark dropped."""
    for number, line in enumerate(stream):
        text = line.decode("utf-8", "replace")
        yield text.removeprefix("\ufeff") if number == 0 else text


def wants_many(
    repo_id: str | None,
    from_file: str | None,
    author: str | None,
    source: SourceKind,
    url: str | None,
    with_base: bool,
    refs: RefWatch | None,
) -> bool:
    """Whether `track` registers many repos (--from, --author); exit 2 on a mix it cannot do."""
    given = [
        name
        for name, value in (("ORG/NAME", repo_id), ("--from", from_file), ("--author", author))
        if value is not None
    ]
    problem = None
    if len(given) != 1:
        problem = "give one of ORG/NAME, --from FILE or --author NAME"
        if given:
            problem += f", not {' and '.join(given)}"
    elif given[0] != "ORG/NAME":
        if with_base or refs is not None or url is not None:
            problem = f"{given[0]} takes no --with-base, --refs or --url"
        elif author is not None and source is not SourceKind.HUB:
            problem = "--author lists the Hub's models: it takes no --source git"
    if problem is not None:
        err.print(f"error: {problem}", highlight=False)
        raise typer.Exit(EXIT_USAGE)
    return given[0] != "ORG/NAME"


def track_many(
    from_file: str | None,
    author: str | None,
    source: SourceKind,
    branch: str | None,
) -> None:
    """`track --from FILE` or `track --author NAME`: register, summarise, exit 2 when some
    entry was invalid."""
    if author is not None:
        validate_owner(author)  # before the database is opened
    cfg = settings()
    with stored() as store:
        if author is not None:
            tally = _register_author(store, cfg, author, branch)
        else:
            assert from_file is not None
            hosts = cfg.git_hosts()
            with _opened(from_file) as stream:
                name = "<stdin>" if from_file == "-" else from_file
                entries = parse_lines(decoded(stream), name, source, branch, hosts)
                tally = _registered(store, entries)
    err.print(shown(tally.summary()), highlight=False)
    if tally.invalid:
        raise typer.Exit(EXIT_USAGE)


def _register_author(store: RepoStore, cfg: Settings, author: str, branch: str | None) -> Tally:
    with loading():
        from hubwatch.runtime import hub_listing
    listing = hub_listing(cfg)
    try:
        tally = _registered(store, listed(listing.models_of(author), author, branch))
    finally:
        listing.close()
    if not tally.read:
        missing = RepoNotFound(f"the Hub lists no models by {author!r}")
        missing.next_step = "check the name (its private models also need HF_TOKEN)"
        raise missing
    return tally


def _registered(store: RepoStore, entries: Iterable[RepoRef | Invalid]) -> Tally:
    """`register`, its lines on stderr; what was added so far said too when it fails."""

    def said(line: str) -> None:
        err.print(shown(line), highlight=False)

    tally = Tally()
    try:
        return register(store, entries, said, tally)
    except HubwatchError:
        if tally.added:
            said(f"stopped early: the {tally.added:,} repos added so far stay tracked")
        raise


@contextmanager
def _opened(name: str) -> Iterator[BinaryIO]:
    """The file `track --from` reads, as bytes: `-` is stdin (left open)."""
    if name == "-":
        yield sys.stdin.buffer
        return
    try:
        stream = Path(name).open("rb")
    except OSError as exc:
        err.print(f"error: cannot read {shown(name)}: {shown(exc.strerror)}", highlight=False)
        raise typer.Exit(EXIT_USAGE) from None
    with stream:
        yield stream
