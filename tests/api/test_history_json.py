"""A history page's JSON, written by orjson, says what pydantic's RevisionPage would."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from hubwatch.api.convert import history_json, history_text_json, revision_public
from hubwatch.api.schemas import RevisionPage
from hubwatch.models import CommitSha, HistoryPage, HistoryText, RevisionText, StoredRevision
from tests.test_store_json import VALUES

CARDS = st.none() | st.dictionaries(st.text(), VALUES, max_size=4)


def revision(n: int, date: datetime, card: dict[str, Any] | None, title: str) -> StoredRevision:
    return StoredRevision(
        repo_id="org/model",
        sha=CommitSha(f"{n:040x}"),
        parents=(CommitSha(f"{n - 1:040x}"),) if n else (),
        date=date,
        authors=("a <a@example.com>",),
        title=title,
        message=f"{title}\n\nbody",
        changed=("config.json", "README.md"),
        reachable=n % 2 == 0,
        card=card,
    )


@given(
    st.lists(st.tuples(st.datetimes(timezones=st.just(UTC)), CARDS, st.text()), max_size=4),
    st.none() | st.integers(min_value=1, max_value=2**31 - 1),
)
def test_history_json_says_what_pydantic_writes(
    revisions: list[tuple[datetime, dict[str, Any] | None, str]], cursor: int | None
) -> None:
    page = HistoryPage(
        tuple(revision(n, d, card, title) for n, (d, card, title) in enumerate(revisions)), cursor
    )
    expected = RevisionPage(
        items=[revision_public(r) for r in page.revisions], next_cursor=cursor
    ).model_dump_json()
    assert json.loads(history_json(page)) == json.loads(expected)


def as_text(r: StoredRevision, card_null: bool) -> RevisionText:
    """The revision as the store reads it as text: its JSON columns as json.dumps wrote them
    (SQLAlchemy's serializer), a card of None as SQL NULL or as the text `null`."""
    return RevisionText(
        r.sha,
        json.dumps(list(r.parents)),
        r.date,
        json.dumps(list(r.authors)),
        r.title,
        r.message,
        json.dumps(list(r.changed)),
        r.reachable,
        json.dumps(r.card) if r.card is not None or card_null else None,
    )


@given(
    st.lists(st.tuples(st.datetimes(timezones=st.just(UTC)), CARDS, st.text()), max_size=4),
    st.none() | st.integers(min_value=1, max_value=2**31 - 1),
    st.booleans(),
)
def test_history_text_json_says_what_pydantic_writes(
    revisions: list[tuple[datetime, dict[str, Any] | None, str]],
    cursor: int | None,
    card_null: bool,
) -> None:
    # cards hold NaN, infinities and integers beyond 64 bits: what json.dumps writes
    stored = [revision(n, d, card, title) for n, (d, card, title) in enumerate(revisions)]
    page = HistoryText(tuple(as_text(r, card_null) for r in stored), cursor)
    expected = RevisionPage(
        items=[revision_public(r) for r in stored], next_cursor=cursor
    ).model_dump_json()
    assert json.loads(history_text_json(page)) == json.loads(expected)


def test_history_text_json_splices_the_stored_text() -> None:
    r = RevisionText(
        "ab" * 20,
        '["cd"]',
        datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC),
        '["a <a@example.com>"]',
        "t",
        "m",
        '["config.json"]',
        True,
        '{"params": 123456789012345678901234567890}',
    )
    assert history_text_json(HistoryText((r,), 7)) == (
        b'{"items":[{"sha":"' + b"ab" * 20 + b'","parents":["cd"],"date":"2026-01-02T03:04:05Z",'
        b'"authors":["a <a@example.com>"],"title":"t","message":"m","changed":["config.json"],'
        b'"reachable":true,"card":{"params": 123456789012345678901234567890}}],"next_cursor":7}'
    )
