"""Subscriptions over the API: the secret is shown once, URLs are checked, writes need the token."""

from __future__ import annotations

import pytest
from pydantic import SecretStr
from structlog.testing import capture_logs

from hubwatch.api import create_app
from hubwatch.settings import Settings
from hubwatch.store.sql import SqlStore
from tests.support.asgi import InProcess
from tests.support.served import fill

TOKEN = "t0ken"


@pytest.fixture
def api(store: SqlStore) -> InProcess:
    fill(store)
    settings = Settings(
        api_token=SecretStr(TOKEN),
        webhook_allow_http=True,
        webhook_allowed_networks=["127.0.0.0/8"],
    )
    return InProcess(create_app(store, settings), token=TOKEN)


def test_the_secret_is_returned_once_and_never_listed(api: InProcess) -> None:
    with capture_logs() as logs:
        created = api.post(
            "/api/v1/subscriptions",
            json={"url": "http://127.0.0.1:9/h", "org": "org", "kinds": ["card."]},
        )
    assert created.status_code == 201
    body = created.json()
    secret = body["secret"]
    assert secret.startswith("whsec_")
    listed = api.get("/api/v1/subscriptions")
    assert [s["id"] for s in listed.json()] == [body["id"]]
    assert secret not in listed.text
    assert secret not in api.get(f"/api/v1/subscriptions/{body['id']}").text
    assert secret not in str(logs)
    assert api.get(f"/api/v1/subscriptions/{body['id']}/deliveries").json() == []


def test_subscription_delete(api: InProcess) -> None:
    sub = api.post("/api/v1/subscriptions", json={"url": "http://127.0.0.1:9/h"}).json()
    assert api.delete(f"/api/v1/subscriptions/{sub['id']}").status_code == 204
    assert api.get(f"/api/v1/subscriptions/{sub['id']}").status_code == 404
    assert api.delete(f"/api/v1/subscriptions/{sub['id']}").status_code == 404


@pytest.mark.parametrize(
    ("body", "status"),
    [
        ({"url": "http://10.0.0.1/h"}, 422),  # private, not allowed
        ({"url": "https://169.254.169.254/"}, 422),  # link-local (cloud metadata)
        ({"url": "file:///etc/passwd"}, 422),
        ({"url": "http://127.0.0.1:9/h", "kinds": ["Not A Kind"]}, 422),
        ({"url": "http://127.0.0.1:9/h", "repo_id": "../x"}, 422),
        ({"url": "http://127.0.0.1:9/h", "min_severity": "dire"}, 422),
    ],
)
def test_bad_subscriptions_are_refused(
    api: InProcess, body: dict[str, object], status: int
) -> None:
    assert api.post("/api/v1/subscriptions", json=body).status_code == status


def test_subscriptions_need_the_token(api: InProcess) -> None:
    anonymous = InProcess(api.app)
    assert anonymous.post("/api/v1/subscriptions", json={"url": "https://x.y/"}).status_code == 401
    assert anonymous.get("/api/v1/subscriptions").status_code == 401


def test_a_disabled_subscription_can_be_enabled_again(api: InProcess, store: SqlStore) -> None:
    sub = api.post("/api/v1/subscriptions", json={"url": "http://127.0.0.1:9/h"}).json()
    store.disable_subscription(sub["id"], "undelivered for three days")
    disabled = api.get(f"/api/v1/subscriptions/{sub['id']}").json()
    assert (disabled["enabled"], disabled["disabled_reason"]) == (
        False,
        "undelivered for three days",
    )
    enabled = api.post(f"/api/v1/subscriptions/{sub['id']}/enable")
    assert enabled.status_code == 200
    assert (enabled.json()["enabled"], enabled.json()["disabled_reason"]) == (True, None)
