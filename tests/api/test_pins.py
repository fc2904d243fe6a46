"""`POST /api/v1/pins/check` against real SQLite and PostgreSQL stores."""

from __future__ import annotations

import pytest

from hubwatch.api import create_app
from hubwatch.models import CommitSha
from hubwatch.settings import Settings
from hubwatch.store.sql import SqlStore
from tests.support.asgi import InProcess
from tests.support.served import fill


@pytest.fixture
def shas(store: SqlStore) -> list[CommitSha]:
    return fill(store)


@pytest.fixture
def api(store: SqlStore, shas: list[CommitSha]) -> InProcess:
    return InProcess(create_app(store, Settings()))


def test_a_pin_behind_lists_the_changes_since_it(api: InProcess, shas: list[str]) -> None:
    body = {"pins": [{"repo": "org/model", "revision": shas[0], "path": "app.py", "line": 3}]}
    response = api.post("/api/v1/pins/check", json={**body, "fail_on": "breaking"})
    assert response.status_code == 200
    report = response.json()
    (pin,) = report["pins"]
    assert (pin["status"], pin["sha"], pin["bump_to"]) == ("behind", shas[0], shas[2])
    assert [r["sha"] for r in pin["changes"]] == shas[1:]
    assert (pin["severity"], report["failed"]) == ("breaking", True)
    assert (pin["path"], pin["line"]) == ("app.py", 3)


def test_advisories_of_the_pinned_revision_count_as_security(
    api: InProcess, shas: list[str]
) -> None:
    pins = [{"repo": "org/model", "revision": shas[2]}]
    report = api.post("/api/v1/pins/check", json={"pins": pins}).json()
    (pin,) = report["pins"]
    assert pin["status"] == "current" and pin["advisories"]["ids"] == ["PYSEC-2024-227"]
    assert (pin["severity"], report["failed"]) == ("security", True)


def test_untracked_repos_and_unknown_shas_fail_floating_pins_do_not_at_security(
    api: InProcess,
) -> None:
    pins = [
        {"repo": "org/never-tracked", "revision": "abcdef0"},
        {"repo": "other/thing", "revision": "abcdef0"},
        {"repo": "other/thing"},
    ]
    report = api.post("/api/v1/pins/check", json={"pins": pins}).json()
    assert [p["status"] for p in report["pins"]] == ["failed", "unknown", "floating"]
    only_floating = api.post("/api/v1/pins/check", json={"pins": pins[2:]}).json()
    assert only_floating["failed"] is False


@pytest.mark.parametrize("repo", ["../x", "org/<b>", "no-slash", "a/b/c"])
def test_a_bad_repo_id_is_422(api: InProcess, repo: str) -> None:
    response = api.post("/api/v1/pins/check", json={"pins": [{"repo": repo}]})
    assert response.status_code == 422
