"""A history page's JSON, written by orjson, says what pydantic's RevisionPage would."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from hubwatch.api.convert import history_json, revision_public
from hubwatch.api.schemas import RevisionPage
from hubwatch.models import CommitSha, HistoryPage, StoredRevision
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
