"""The ChangeStore contract on SQLite and PostgreSQL: changes stored with their revision."""

from __future__ import annotations

from dataclasses import replace

import pytest

from hubwatch.errors import UnknownRevision
from hubwatch.models import Change, Severity
from hubwatch.store.sql import SqlStore
from tests.test_store import REPO, sha, snapshot

STOP = Change(
    "generation.stop_tokens",
    Severity.BREAKING,
    "Stop tokens changed: eos_token_id 1 → [1, 2].",
    "generation_config.json",
    {"eos_token_id": 1},
    {"eos_token_id": [1, 2]},
)
CARD = Change("card.base_model", Severity.INFO, "base_model changed.", "README.md", None, "x/y")
TEMPLATE = Change(
    "chat_template.rendered",
    Severity.BEHAVIOR,
    "renders differently",
    "tokenizer_config.json",
    {"user only": "a"},
    {"user only": "a<think>\n"},
    "detail ✓",
)


@pytest.fixture
def filled(store: SqlStore) -> SqlStore:
    store.add_repo(REPO)
    store.add_revision(REPO.repo_id, snapshot(1, {"a": b"1"}))
    store.add_revision(
        REPO.repo_id,
        replace(snapshot(2, {"a": b"2"}, parent=1), changes=(STOP, CARD), base=sha(1)),
    )
    store.add_revision(
        REPO.repo_id, replace(snapshot(3, {"a": b"3"}, parent=2), changes=(TEMPLATE,), base=sha(2))
    )
    return store


def test_changes_round_trip_in_order(filled: SqlStore) -> None:
    recorded = filled.changes(REPO.repo_id)
    assert [(r.revision.sha, r.base, r.changes) for r in recorded] == [
        (sha(2), sha(1), (STOP, CARD)),
        (sha(3), sha(2), (TEMPLATE,)),
    ]


def test_since_keeps_later_revisions(filled: SqlStore) -> None:
    assert [r.revision.sha for r in filled.changes(REPO.repo_id, since=sha(2))] == [sha(3)]


def test_min_severity_filters_changes_and_drops_empty_revisions(filled: SqlStore) -> None:
    recorded = filled.changes(REPO.repo_id, min_severity=Severity.BREAKING)
    assert [(r.revision.sha, r.changes) for r in recorded] == [(sha(2), (STOP,))]


def test_unknown_since_is_unknown_revision(filled: SqlStore) -> None:
    with pytest.raises(UnknownRevision):
        filled.changes(REPO.repo_id, since="abcdef")


def test_untrack_deletes_changes(filled: SqlStore) -> None:
    filled.remove_repo(REPO.repo_id)
    filled.add_repo(REPO)
    assert filled.changes(REPO.repo_id) == []


def test_a_revision_stored_twice_keeps_one_set_of_changes(filled: SqlStore) -> None:
    again = replace(snapshot(3, {"a": b"3"}, parent=2), changes=(TEMPLATE,), base=sha(2))
    assert filled.add_revision(REPO.repo_id, again) is False
    assert filled.changes(REPO.repo_id, since=sha(2))[0].changes == (TEMPLATE,)


def test_replace_changes_sets_one_kind_and_keeps_the_others(filled: SqlStore) -> None:
    advisory = Change("advisories.changed", Severity.SECURITY, "2 advisories now apply.")
    filled.replace_changes(REPO.repo_id, sha(2), "advisories.changed", [advisory])
    filled.replace_changes(REPO.repo_id, sha(2), "advisories.changed", [advisory])  # idempotent
    (second,) = [rc for rc in filled.changes(REPO.repo_id) if rc.revision.sha == sha(2)]
    assert second.changes == (STOP, CARD, advisory)
    filled.replace_changes(REPO.repo_id, sha(2), "advisories.changed", [])
    (second,) = [rc for rc in filled.changes(REPO.repo_id) if rc.revision.sha == sha(2)]
    assert second.changes == (STOP, CARD)
    with pytest.raises(UnknownRevision):
        filled.replace_changes(REPO.repo_id, sha(99), "advisories.changed", [advisory])


def test_nul_characters_from_upstream_are_stored_as_replacement(store: SqlStore) -> None:
    store.add_repo(REPO)
    nul = Change("config.other", Severity.INFO, "name changed to 'a\x00b'.", detail="x\x00y")
    store.add_revision(REPO.repo_id, replace(snapshot(1, {"a": b"1"}), changes=(nul,)))
    (recorded,) = store.changes(REPO.repo_id)
    assert recorded.changes[0].summary == "name changed to 'a\ufffdb'."
    assert recorded.changes[0].detail == "x\ufffdy"
