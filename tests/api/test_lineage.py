"""Lineage over the API: a derivative's record, a base's derivatives, the `stale` badge, and the
pages that show them (SQLite and PostgreSQL)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from hubwatch.api import create_app
from hubwatch.models import CommitSha, RepoRef
from hubwatch.models.lineage import Lineage, LineageStatus, Relation
from hubwatch.settings import Settings
from hubwatch.store.sql import SqlStore
from tests.support.asgi import InProcess
from tests.support.served import SCRIPT, fill

T0 = datetime(2026, 11, 30, 8, tzinfo=UTC)
ESCAPED = "&lt;script&gt;document.title=&#39;pwned&#39;&lt;/script&gt;"
STALE_SHA = CommitSha("5" * 40)


def missed(sha: str, kind: str, severity: str, summary: str) -> dict[str, Any]:
    return {"sha": sha, "kind": kind, "severity": severity, "summary": summary, "path": None}


@pytest.fixture
def shas(store: SqlStore) -> list[CommitSha]:
    """org/model (the base, three revisions) and its derivatives, one of each status."""
    shas = fill(store)
    for repo_id in ("org/model-gguf", "org/model-gguf-fixed", "org/model-ft", "org/model-lora"):
        store.add_repo(RepoRef(repo_id))
    store.add_repo(RepoRef("org/model-unchecked"))
    store.set_lineage(
        Lineage(
            "org/model-gguf",
            STALE_SHA,
            "org/model",
            Relation.QUANTIZED,
            LineageStatus.STALE,
            base_sha=shas[0],
            missed=(
                missed(shas[1], "generation.stop_tokens", "breaking", f"eos fixed {SCRIPT}"),
                missed(shas[2], "chat_template.changed", "behavior", "template fixed"),
            ),
            aspects=("chat_template", "special_tokens"),
            checked_at=T0,
            detail="chat_template and special_tokens differ from the base's newest",
        )
    )
    fixed = Lineage(
        "org/model-gguf-fixed",
        CommitSha("6" * 40),
        "org/model",
        Relation.QUANTIZED,
        LineageStatus.CURRENT,
        base_sha=shas[2],
        checked_at=T0,
    )
    store.set_lineage(fixed)
    store.set_lineage(
        Lineage(
            "org/model-ft",
            CommitSha("7" * 40),
            "org/model",
            Relation.FINETUNE,
            LineageStatus.UNMATCHED,
        )
    )
    store.set_lineage(
        Lineage(
            "org/model-lora",
            CommitSha("8" * 40),
            "nobody/base",
            Relation.ADAPTER,
            LineageStatus.BASE_UNTRACKED,
        )
    )
    return shas


@pytest.fixture
def api(store: SqlStore, shas: list[CommitSha]) -> InProcess:
    return InProcess(create_app(store, Settings()))


def test_a_derivatives_lineage_names_its_base_revision_and_missed_changes(
    api: InProcess, shas: list[str]
) -> None:
    response = api.get("/api/v1/repos/org/model-gguf/lineage")

    assert response.status_code == 200
    body = response.json()
    assert (body["base_repo_id"], body["relation"], body["status"]) == (
        "org/model",
        "quantized",
        "stale",
    )
    assert body["base_sha"] == shas[0]
    assert [(m["sha"], m["severity"]) for m in body["missed"]] == [
        (shas[1], "breaking"),
        (shas[2], "behavior"),
    ]
    assert body["worst"] == "breaking"
    assert body["checked_at"] == "2026-11-30T08:00:00Z"


def test_lineage_of_a_repo_without_one_is_404(api: InProcess) -> None:
    assert api.get("/api/v1/repos/org/model-unchecked/lineage").status_code == 404
    assert api.get("/api/v1/repos/org/untracked/lineage").status_code == 404
    assert api.get("/api/v1/repos/org/bad..id/lineage").status_code == 400


def test_a_base_lists_its_tracked_derivatives_with_their_status(
    api: InProcess, shas: list[str]
) -> None:
    response = api.get("/api/v1/repos/org/model/derivatives")

    assert response.status_code == 200
    rows = [(d["repo_id"], d["status"], d["missed"], d["worst"]) for d in response.json()]
    assert rows == [
        ("org/model-ft", "unmatched", 0, None),
        ("org/model-gguf", "stale", 2, "breaking"),
        ("org/model-gguf-fixed", "current", 0, None),
    ]
    assert api.get("/api/v1/repos/nobody/base/derivatives").json()[0]["repo_id"] == (
        "org/model-lora"
    )


@pytest.mark.parametrize(
    ("repo_id", "label", "message", "color"),
    [
        ("org/model-gguf", "stale", "2 changes", "red"),
        ("org/model-gguf-fixed", "base", "current", "green"),
        ("org/model-ft", "base", "unmatched", "grey"),
        ("org/model-lora", "base", "base not tracked", "lightgrey"),
        ("org/model-unchecked", "base", "no base", "lightgrey"),
    ],
)
def test_stale_badge(api: InProcess, repo_id: str, label: str, message: str, color: str) -> None:
    response = api.get(f"/api/v1/badges/{repo_id}/stale")

    assert response.status_code == 200
    badge = response.json()
    assert badge["schemaVersion"] == 1 and badge["cacheSeconds"] >= 300
    assert (badge["label"], badge["message"], badge["color"]) == (label, message, color)
    assert "isError" not in badge


def test_stale_badge_of_an_untracked_repo_is_an_error_badge(api: InProcess) -> None:
    badge = api.get("/api/v1/badges/org/untracked/stale").json()
    assert (badge["message"], badge["isError"]) == ("not tracked", True)


def test_a_stale_badge_is_orange_when_the_worst_missed_change_is_behavior(
    api: InProcess, store: SqlStore, shas: list[str]
) -> None:
    store.set_lineage(
        Lineage(
            "org/model-gguf",
            STALE_SHA,
            "org/model",
            Relation.QUANTIZED,
            LineageStatus.STALE,
            base_sha=shas[1],
            missed=(missed(shas[2], "chat_template.changed", "behavior", "template fixed"),),
        )
    )
    badge = api.get("/api/v1/badges/org/model-gguf/stale").json()
    assert (badge["label"], badge["message"], badge["color"]) == ("stale", "1 change", "orange")


def test_a_derivatives_page_shows_its_base_revision_and_staleness(
    api: InProcess, shas: list[str]
) -> None:
    page = api.get("/repos/org/model-gguf").text

    assert 'id="lineage"' in page
    assert 'quantized of <a href="/repos/org/model">org/model</a>' in page
    assert f'href="/repos/org/model/revisions/{shas[0]}">{shas[0][:12]}</a>' in page
    assert '<span class="lineage-stale">stale</span>' in page
    assert "2 base changes since then not taken" in page
    assert "<code>generation.stop_tokens</code> eos fixed " + ESCAPED in page
    assert SCRIPT not in page


def test_a_bases_page_lists_its_tracked_derivatives(api: InProcess) -> None:
    page = api.get("/repos/org/model").text

    section = page[page.index('id="derivatives"') :]
    assert section.index("org/model-ft") < section.index("org/model-gguf")
    assert '<td class="lineage-stale">stale</td>' in section
    assert '<td class="lineage-current">current</td>' in section
    assert '2 <span class="sev sev-breaking">breaking</span>' in section


def test_a_repo_with_no_lineage_shows_no_lineage_sections(api: InProcess) -> None:
    page = api.get("/repos/other/thing").text
    assert 'id="lineage"' not in page and 'id="derivatives"' not in page
