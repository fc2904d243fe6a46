"""The LineageStore contract on SQLite and PostgreSQL: one record per derivative, replaced."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from hubwatch.errors import NotTracked
from hubwatch.models import CommitSha, RepoRef
from hubwatch.models.lineage import Lineage, LineageStatus, Relation
from hubwatch.store.sql import SqlStore

T0 = datetime(2026, 3, 1, 12, tzinfo=UTC)
MISSED = {
    "sha": "b" * 40,
    "kind": "chat_template.changed",
    "severity": "breaking",
    "summary": "chat template changed",
    "path": "tokenizer_config.json",
}


def _stale(repo_id: str = "org/q-gguf", base: str = "org/base") -> Lineage:
    return Lineage(
        repo_id=repo_id,
        sha=CommitSha("1" * 40),
        base_repo_id=base,
        relation=Relation.QUANTIZED,
        status=LineageStatus.STALE,
        base_sha=CommitSha("a" * 40),
        missed=(MISSED,),
        aspects=("chat_template", "special_tokens"),
        checked_at=T0,
        detail="base changed chat_template since aaaaaaaaaaaa",
        extra={"declared": ["org/base"]},
    )


def test_a_lineage_record_reads_back_as_written(store: SqlStore) -> None:
    store.add_repo(RepoRef("org/q-gguf"))
    store.set_lineage(_stale())
    assert store.lineage_of("org/q-gguf") == _stale()


def test_a_second_record_replaces_the_first(store: SqlStore) -> None:
    store.add_repo(RepoRef("org/q-gguf"))
    store.set_lineage(_stale())
    current = Lineage(
        "org/q-gguf",
        CommitSha("2" * 40),
        "org/base",
        Relation.QUANTIZED,
        LineageStatus.CURRENT,
        base_sha=CommitSha("c" * 40),
    )
    store.set_lineage(current)
    assert store.lineage_of("org/q-gguf") == current
    assert store.derivatives_of("org/base") == [current]


def test_no_record_is_none_and_an_untracked_derivative_is_refused(store: SqlStore) -> None:
    store.add_repo(RepoRef("org/q-gguf"))
    assert store.lineage_of("org/q-gguf") is None
    with pytest.raises(NotTracked):
        store.set_lineage(_stale("org/other"))
    with pytest.raises(NotTracked):
        store.lineage_of("org/other")


def test_derivatives_of_a_base_are_listed_by_repo_id(store: SqlStore) -> None:
    for repo_id in ("org/z-ft", "org/a-gguf", "org/elsewhere"):
        store.add_repo(RepoRef(repo_id))
    store.set_lineage(_stale("org/z-ft"))
    store.set_lineage(_stale("org/a-gguf"))
    store.set_lineage(_stale("org/elsewhere", base="other/base"))
    assert [d.repo_id for d in store.derivatives_of("org/base")] == ["org/a-gguf", "org/z-ft"]
    assert store.derivatives_of("org/nobody") == []


def test_removing_the_derivative_removes_its_record(store: SqlStore) -> None:
    store.add_repo(RepoRef("org/q-gguf"))
    store.set_lineage(_stale())
    store.remove_repo("org/q-gguf")
    store.add_repo(RepoRef("org/q-gguf"))
    assert store.lineage_of("org/q-gguf") is None
    assert store.derivatives_of("org/base") == []
