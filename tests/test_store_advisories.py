"""The AdvisoryStore contract, run against SQLite and PostgreSQL alike."""

from __future__ import annotations

import pytest

from hubwatch.errors import UnknownRevision
from hubwatch.models import (
    AdvisoryId,
    AdvisoryMatch,
    Dependency,
    MatchStatus,
    SeverityScore,
    publication_id,
)
from hubwatch.store.sql import SqlStore
from tests.test_store import REPO, sha, snapshot

DEP = Dependency(
    "PyPI", "transformers", "4.36.0", "==4.36.0", "config.json", "transformers_version"
)


def match(advisory_id: str, package: str = "transformers") -> AdvisoryMatch:
    return AdvisoryMatch(
        advisory_id=AdvisoryId(advisory_id),
        aliases=("CVE-2024-11392",),
        summary="Deserialization of untrusted data",
        severity=(SeverityScore("CVSS_V3", "CVSS:3.1/AV:N/AC:L/PR:N/UI:R/S:U/C:H/I:H/A:H", 8.8),),
        fixed=("4.48.0",),
        package=package,
        version="4.36.0",
        status=MatchStatus.AFFECTED,
        reason="transformers 4.36.0 is in [0, 4.48.0)",
        modified="2025-02-10T23:22:41.399021Z",
    )


@pytest.fixture
def stored(store: SqlStore) -> SqlStore:
    store.add_repo(REPO)
    store.add_revision(REPO.repo_id, snapshot(1, {"config.json": b"{}"}))
    return store


def test_advisories_round_trip(stored: SqlStore) -> None:
    new = stored.record_advisories(
        REPO.repo_id, sha(1), [DEP], [match("PYSEC-2024-227")], service="offline"
    )
    assert new == [match("PYSEC-2024-227")]
    report = stored.advisory_report(REPO.repo_id, sha(1))
    assert report.dependencies == (DEP,)
    assert report.matches == (match("PYSEC-2024-227"),)
    assert report.service == "offline" and report.error is None and report.checked_at is not None


def test_only_newly_attached_advisories_are_returned(stored: SqlStore) -> None:
    stored.record_advisories(
        REPO.repo_id, sha(1), [DEP], [match("PYSEC-2024-227")], service="offline"
    )
    new = stored.record_advisories(
        REPO.repo_id,
        sha(1),
        [DEP],
        [match("PYSEC-2024-227"), match("PYSEC-2024-228")],
        service="offline",
    )
    assert [m.advisory_id for m in new] == ["PYSEC-2024-228"]


def test_a_failed_check_keeps_the_previous_matches(stored: SqlStore) -> None:
    stored.record_advisories(REPO.repo_id, sha(1), [DEP], [match("PYSEC-2024-227")], service="osv")
    stored.record_advisories(REPO.repo_id, sha(1), [DEP], None, service="osv", error="OSV.dev: 500")
    report = stored.advisory_report(REPO.repo_id, sha(1))
    assert report.error == "OSV.dev: 500"
    assert [m.advisory_id for m in report.matches] == ["PYSEC-2024-227"]


def test_unchecked_revision_has_an_empty_report(stored: SqlStore) -> None:
    report = stored.advisory_report(REPO.repo_id, sha(1))
    assert (report.dependencies, report.matches, report.checked_at) == ((), (), None)
    with pytest.raises(UnknownRevision):
        stored.advisory_report(REPO.repo_id, sha(2))


def test_publication_ids_are_derived_from_the_change(stored: SqlStore) -> None:
    first = stored.publication(REPO.repo_id, sha(1), "weights.pickle_added", "x.bin", 2024)
    second = stored.publication(REPO.repo_id, sha(1), "code.custom_added", "m.py", 2024)
    other_year = stored.publication(REPO.repo_id, sha(2), "card.license", None, 2025)
    again = stored.publication(REPO.repo_id, sha(1), "weights.pickle_added", "x.bin", 2024)
    assert first.osv_id == publication_id(
        REPO.repo_id, sha(1), "weights.pickle_added", "x.bin", 2024
    )
    assert first.osv_id.startswith("x_HUBWATCH-2024-") and len(first.osv_id) == 32
    assert len({first.osv_id, second.osv_id, other_year.osv_id}) == 3
    assert other_year.osv_id.startswith("x_HUBWATCH-2025-")
    assert again == first


def test_removing_a_repo_removes_its_advisories(stored: SqlStore) -> None:
    stored.record_advisories(
        REPO.repo_id, sha(1), [DEP], [match("PYSEC-2024-227")], service="offline"
    )
    stored.remove_repo(REPO.repo_id)
    stored.add_repo(REPO)
    stored.add_revision(REPO.repo_id, snapshot(1, {"config.json": b"{}"}))
    assert stored.advisory_report(REPO.repo_id, sha(1)).matches == ()
