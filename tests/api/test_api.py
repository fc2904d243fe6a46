"""The REST API in process against real SQLite and PostgreSQL stores."""

from __future__ import annotations

import pytest
from pydantic import SecretStr

from hubwatch.api import create_app
from hubwatch.models import CommitSha
from hubwatch.settings import Settings
from hubwatch.store.sql import SqlStore
from tests.support.asgi import InProcess
from tests.support.served import REPO, SCRIPT, fill

TOKEN = "s3cret-token"


def settings(**values: object) -> Settings:
    return Settings(api_token=SecretStr(TOKEN), **values)  # type: ignore[arg-type]


@pytest.fixture
def shas(store: SqlStore) -> list[CommitSha]:
    return fill(store)


@pytest.fixture
def api(store: SqlStore, shas: list[CommitSha]) -> InProcess:
    return InProcess(create_app(store, settings()))


@pytest.fixture
def writer(store: SqlStore, shas: list[CommitSha]) -> InProcess:
    return InProcess(create_app(store, settings()), token=TOKEN)


def test_repos_are_listed_with_their_state(api: InProcess) -> None:
    response = api.get("/api/v1/repos")
    assert response.status_code == 200
    assert [(r["repo_id"], r["revisions"]) for r in response.json()] == [
        ("org/model", 3),
        ("other/thing", 1),
    ]


def test_history_pages_newest_first_with_a_cursor(api: InProcess, shas: list[str]) -> None:
    first = api.get("/api/v1/repos/org/model/revisions", params={"limit": 2}).json()
    assert [r["sha"] for r in first["items"]] == [shas[2], shas[1]]
    rest = api.get(
        "/api/v1/repos/org/model/revisions", params={"limit": 2, "before": first["next_cursor"]}
    ).json()
    assert [r["sha"] for r in rest["items"]] == [shas[0]]
    assert rest["next_cursor"] is None


def test_one_revision_has_files_changes_estimate_and_advisories(
    api: InProcess, shas: list[str]
) -> None:
    body = api.get(f"/api/v1/repos/org/model/revisions/{shas[2]}").json()
    assert body["revision"]["sha"] == shas[2]
    assert body["base"] == shas[1]
    assert [f["path"] for f in body["files"]] == ["config.json", "tokenizer_config.json"]
    assert [c["kind"] for c in body["changes"]] == ["chat_template.rendered"]
    assert body["estimate"]["ok"] is True and body["estimate"]["params"]["total"] > 4e8
    [matched] = body["advisories"]["matches"]
    assert matched["advisory_id"] == "PYSEC-2024-227"
    raw = api.get(matched["url"])
    assert raw.status_code == 200 and raw.json()["id"] == "PYSEC-2024-227"


def test_changes_filter_by_kind_severity_and_since(api: InProcess, shas: list[str]) -> None:
    every = api.get("/api/v1/repos/org/model/changes").json()
    assert [[c["kind"] for c in r["changes"]] for r in every] == [
        ["generation.stop_tokens", "card.license"],
        ["chat_template.rendered"],
    ]
    breaking = api.get("/api/v1/repos/org/model/changes", params={"severity": "breaking"}).json()
    assert [[c["kind"] for c in r["changes"]] for r in breaking] == [["generation.stop_tokens"]]
    by_kind = api.get("/api/v1/repos/org/model/changes", params={"kind": "card."}).json()
    assert [[c["kind"] for c in r["changes"]] for r in by_kind] == [["card.license"]]
    since = api.get("/api/v1/repos/org/model/changes", params={"since": shas[1]}).json()
    assert [r["sha"] for r in since] == [shas[2]]


def test_diff_between_any_two_revisions(api: InProcess, shas: list[str]) -> None:
    response = api.get(f"/api/v1/repos/org/model/diff/{shas[0]}/{shas[2]}")
    assert response.status_code == 200
    body = response.json()
    assert (body["from_sha"], body["to_sha"]) == (shas[0], shas[2])
    assert any(c["path"] == "tokenizer_config.json" for c in body["changes"])


def test_estimate_and_advisories_have_their_own_urls(api: InProcess, shas: list[str]) -> None:
    estimate = api.get(f"/api/v1/repos/org/model/revisions/{shas[0]}/estimate").json()
    assert estimate["family"]
    advisories = api.get(f"/api/v1/repos/org/model/revisions/{shas[0]}/advisories").json()
    assert advisories["checked_at"] is None and advisories["matches"] == []


def test_own_osv_records_are_indexed_and_served_raw(api: InProcess) -> None:
    index = api.get("/api/v1/advisories").json()
    own = [e for e in index if e["source"] == "hubwatch"]
    assert own and all(e["id"].startswith("x_HUBWATCH-") for e in own)
    record = api.get(own[0]["url"]).json()
    assert record["id"] == own[0]["id"] and record["affected"][0]["ranges"][0]["type"] == "GIT"
    assert {e["id"] for e in index if e["source"] == "osv"} == {"PYSEC-2024-227"}
    assert api.get("/api/v1/advisories/NOPE-1.json").status_code == 404


def test_unknown_repo_revision_and_bad_ids_answer_4xx(api: InProcess) -> None:
    assert api.get("/api/v1/repos/org/nothing").status_code == 404
    assert api.get("/api/v1/repos/org/model/revisions/ffffff").status_code == 404
    assert api.get("/api/v1/repos/org/model/revisions/xyz").status_code == 404
    assert api.get("/api/v1/repos/or--g/model").status_code == 400


def test_every_get_has_an_etag_and_answers_304_when_it_matches(api: InProcess) -> None:
    first = api.get("/api/v1/repos/org/model")
    etag = first.headers["etag"]
    again = api.get("/api/v1/repos/org/model", headers={"if-none-match": etag})
    assert again.status_code == 304 and again.content == b""
    assert api.get("/api/v1/repos/org/model", headers={"if-none-match": '"x"'}).status_code == 200
    assert api.get("/feeds/all.atom").headers["etag"]
    assert api.get("/").headers["etag"]


def test_writes_need_the_bearer_token(api: InProcess) -> None:
    body = {"repo_id": "org/new"}
    assert api.post("/api/v1/repos", json=body).status_code == 401
    wrong = api.post("/api/v1/repos", json=body, headers={"authorization": "Bearer nope"})
    assert wrong.status_code == 401
    assert api.delete("/api/v1/repos/org/model").status_code == 401
    assert api.get("/api/v1/subscriptions").status_code == 401


def test_writes_are_refused_without_a_configured_token(store: SqlStore, shas: object) -> None:
    api = InProcess(create_app(store, Settings()), token="anything")
    assert api.post("/api/v1/repos", json={"repo_id": "org/new"}).status_code == 403


def test_track_and_untrack(writer: InProcess) -> None:
    created = writer.post("/api/v1/repos", json={"repo_id": "org/new"})
    assert created.status_code == 201 and created.json()["revisions"] == 0
    assert writer.post("/api/v1/repos", json={"repo_id": "org/new"}).status_code == 200
    assert writer.delete("/api/v1/repos/org/new").status_code == 204
    assert writer.get("/api/v1/repos/org/new").status_code == 404


def test_a_git_source_over_the_api_needs_an_https_url(writer: InProcess) -> None:
    local = {"repo_id": "org/git", "source": "git", "url": "/etc"}
    assert writer.post("/api/v1/repos", json=local).status_code == 422
    assert writer.post("/api/v1/repos", json={"repo_id": "../x"}).status_code == 422


def test_private_reads_need_the_token(store: SqlStore, shas: object) -> None:
    app = create_app(store, settings(api_public_reads=False))
    assert InProcess(app).get("/api/v1/repos").status_code == 401
    assert InProcess(app).get("/").status_code == 401
    assert InProcess(app, token=TOKEN).get("/api/v1/repos").status_code == 200


def test_healthz_and_metrics(api: InProcess) -> None:
    assert api.get("/healthz").json() == {"status": "ok"}
    metrics = api.get("/metrics")
    assert metrics.status_code == 200 and "python_info" in metrics.text


def test_the_token_never_appears_in_responses(writer: InProcess) -> None:
    for url in ("/api/v1/repos", "/openapi.json", "/"):
        assert TOKEN not in writer.get(url).text


def test_openapi_lists_the_api(api: InProcess) -> None:
    paths = api.get("/openapi.json").json()["paths"]
    assert "/api/v1/repos/{org}/{name}/revisions" in paths
    assert "/api/v1/badges/{org}/{name}/{kind}" in paths


def test_upstream_text_is_returned_verbatim_as_json(api: InProcess, shas: list[str]) -> None:
    body = api.get(f"/api/v1/repos/org/model/revisions/{shas[2]}").json()
    assert SCRIPT in body["revision"]["title"]
    assert REPO.repo_id == body["repo_id"]


def test_estimate_training_settings_in_the_query_re_estimate_training(
    api: InProcess, shas: list[str]
) -> None:
    url = f"/api/v1/repos/org/model/revisions/{shas[0]}/estimate"
    stored = api.get(url).json()
    tuned = api.get(
        url, params={"precision": "bf16", "lora_targets": "q,v", "double_quant": "false"}
    ).json()
    assert tuned["settings"] == {"precision": "bf16", "lora_targets": "q,v", "double_quant": False}
    full, was = tuned["training"]["full"]["parts"], stored["training"]["full"]["parts"]
    assert full["gradients_and_optimizer"] < was["gradients_and_optimizer"]
    assert (
        "without double quantisation" in tuned["training"]["qlora"]["assumptions"]["base weights"]
    )
    assert tuned["params"] == stored["params"]


def test_an_unknown_training_setting_value_is_refused(api: InProcess, shas: list[str]) -> None:
    url = f"/api/v1/repos/org/model/revisions/{shas[0]}/estimate"
    assert api.get(url, params={"precision": "fp64"}).status_code == 422
    assert api.get(url, params={"lora_targets": "all-linear,q"}).status_code == 422


def test_a_lora_target_the_model_lacks_is_refused_with_its_modules(
    api: InProcess, shas: list[str]
) -> None:
    url = f"/api/v1/repos/org/model/revisions/{shas[0]}/estimate"
    refused = api.get(url, params={"lora_targets": "q,foo"})
    assert refused.status_code == 422
    assert "'foo' is not a linear module" in refused.json()["detail"]
    assert "q_proj" in refused.json()["detail"]
