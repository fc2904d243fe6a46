"""The replay contract: every exchange recorded with the real Hub, answered to HubSource over
https, and what hubwatch makes of it.

Most recorded requests are ones HubSource makes itself (model_info, the tree, file reads), and
are checked to be the same request. The others (xet tokens, preupload, commit: calls hubwatch
never makes) stand in for the same answer on a route HubSource does call: the Hub's 401 to an
anonymous caller or a refused token is the same body on every /api/models/ path, which is the
point (ref-anonymous.json). Every exchange of both files is replayed at least once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest

from hubwatch.errors import (
    ContentUnavailable,
    RepoHidden,
    SourceError,
    TokenRefused,
    UnexpectedResponse,
)
from hubwatch.models import CommitSha, RepoIdentity, RepoRef, RepoStatus
from hubwatch.sources.hub import HubSource
from tests.support.hubreplay import HUB, ReplayTransport, load

REPO = RepoRef("wzshiming/test")
SHA = CommitSha("bcf51b2ec6fb5bc8215f4b365a0e48532e26abb8")
TOKEN = "hf_replayed_token"
REGULAR = (
    "xet private-repo regression fixture — ref-regular.txt\n"
    "Committed next to ref-lfs.bin by test/conformance/hub; the line below makes every commit"
    " distinct.\n"
)

Call = Callable[[HubSource], Any]


@dataclass(frozen=True)
class Case:
    """One recorded exchange replayed as the answer to one HubSource call."""

    trace: str
    seq: int
    call: str
    token: bool
    expect: Any
    """What the call returns, or the error type it raises (an exact type)."""
    exact: bool = False
    """Whether the call makes the very request recorded (method and path)."""


CALLS: dict[str, Call] = {
    "head": lambda s: s.head(REPO),
    "status": lambda s: s.status(REPO),
    "commits": lambda s: s.list_commits(REPO),
    "files": lambda s: [(f.path, f.size, f.lfs_sha256) for f in s.list_files(REPO, SHA)],
    "resolve": lambda s: s.resolve(REPO, "main"),
    "read regular": lambda s: s.read_file(REPO, SHA, "regression/ref-regular.txt", 4096)[:80],
    "read lfs": lambda s: s.read_range(REPO, SHA, "regression/ref-lfs.bin", 0, 8),
}
ANON, PLAIN = "ref-anonymous", "ref-download-plain"
CASES = [
    # huggingface_hub's own registry fetch: a 200 of another shape answered to model_info
    Case(ANON, 1, "status", False, UnexpectedResponse),
    Case(PLAIN, 1, "status", True, UnexpectedResponse),
    # anonymous: a private repo is hidden: not found, or private, nobody can tell (401)
    Case(ANON, 2, "head", False, RepoHidden),
    Case(ANON, 3, "head", False, RepoHidden),
    Case(ANON, 4, "status", False, RepoHidden),
    Case(ANON, 5, "commits", False, RepoHidden),
    Case(ANON, 6, "files", False, RepoHidden),
    Case(ANON, 7, "resolve", False, RepoHidden),
    # the same 401 to a token: the token is refused, the repo is not gone
    Case(ANON, 8, "head", True, TokenRefused),
    Case(ANON, 9, "status", True, TokenRefused),
    Case(ANON, 10, "commits", True, TokenRefused),
    Case(ANON, 11, "files", True, TokenRefused),
    Case(ANON, 12, "resolve", True, TokenRefused),
    # a missing file on the resolver still names the head
    Case(ANON, 13, "head", True, SHA),
    # a 400 (the commit refused) answered to a read: an error of its own, not "not found"
    Case(ANON, 14, "status", True, SourceError),
    Case(
        PLAIN,
        2,
        "status",
        True,
        RepoStatus(
            head=SHA,
            repo_id="wzshiming/test",
            private=True,
            # the recorded `_id` is "<redacted>": no object id; `createdAt` as recorded
            identity=RepoIdentity(None, datetime(2026, 1, 21, 3, 45, 36, tzinfo=UTC)),
        ),
        exact=True,
    ),
    Case(
        PLAIN,
        3,
        "files",
        True,
        [
            (
                "regression/ref-lfs.bin",
                1048576,
                "cd44947308b4b22228767cab8addd523d1de22abd9b23a10808e5fc295202e4f",
            ),
            ("regression/ref-regular.txt", 186, None),
        ],
        exact=True,
    ),
    Case(PLAIN, 4, "head", True, SHA),
    Case(PLAIN, 5, "head", True, SHA),  # the resolver's 302 to the CDN carries the head too
    Case(PLAIN, 6, "read regular", True, REGULAR.encode()[:80], exact=True),
    # the 302 to the CDN is followed; the CDN's refusal concerns that file only
    Case(PLAIN, 7, "read lfs", True, ContentUnavailable, exact=True),
]


@pytest.fixture
def replay() -> Iterator[Callable[[Case], tuple[Any, ReplayTransport]]]:
    sources: list[HubSource] = []

    def run(case: Case) -> tuple[Any, ReplayTransport]:
        transport = ReplayTransport(load(case.trace), whoami=9 if case.token else None)
        transport.answer(case.seq, exact=case.exact)
        source = HubSource(HUB, TOKEN if case.token else None, transport=transport)
        sources.append(source)
        try:
            return CALLS[case.call](source), transport
        except SourceError as exc:
            return exc, transport

    yield run
    for source in sources:
        source.close()


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.trace}#{c.seq}-{c.call}")
def test_a_recorded_answer_is_recorded_as_hubwatch_says(
    case: Case, replay: Callable[[Case], tuple[Any, ReplayTransport]]
) -> None:
    got, transport = replay(case)
    assert transport.mismatches == []
    assert transport.queue == []  # the recorded answer was asked for
    assert all(r.url.scheme == "https" for r in transport.seen)
    if isinstance(case.expect, type):
        assert type(got) is case.expect, got
    else:
        assert got == case.expect


def test_a_refused_token_is_asked_about_once() -> None:
    transport = ReplayTransport(load(ANON), whoami=9)
    source = HubSource(HUB, TOKEN, transport=transport)
    for seq in (9, 10):
        transport.answer(seq, exact=False)
        with pytest.raises(TokenRefused, match="refused HF_TOKEN"):
            source.status(REPO)
    assert [r.url.path for r in transport.seen].count("/api/whoami-v2") == 1
    source.close()


def test_every_recorded_exchange_is_replayed() -> None:
    for trace in (ANON, PLAIN):
        seqs = {e["seq"] for e in load(trace)["exchanges"]}
        assert seqs == {c.seq for c in CASES if c.trace == trace}, trace
