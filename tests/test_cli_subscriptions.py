"""`hubwatch subscriptions`: the secret is printed once, errors match the API, deliveries work."""

from __future__ import annotations

import json
import re
from pathlib import Path

import httpx2
import pytest
from pydantic import SecretStr
from standardwebhooks import Webhook
from typer.testing import CliRunner

from hubwatch.api import create_app
from hubwatch.api.schemas import SubscriptionPublic
from hubwatch.cli import EXIT_NOT_FOUND, EXIT_USAGE, app
from hubwatch.models import MessageState, Severity
from hubwatch.notify.delivery import WebhookDeliverer
from hubwatch.notify.outbox import WebhookNotifier
from hubwatch.notify.urls import UrlPolicy, parse_networks
from hubwatch.settings import Settings
from hubwatch.store.sql import SqlStore
from tests.support.asgi import InProcess
from tests.support.receiver import WebhookReceiver
from tests.support.served import REPO, fill

LOOPBACK = ["127.0.0.0/8"]
URL = "http://127.0.0.1:9/h"


@pytest.fixture
def env(db_url: str, tmp_path: Path) -> dict[str, str]:
    # DEBUG: every log line the commands write lands in stderr, where the secret must not be.
    return {
        "HUBWATCH_DATA_DIR": str(tmp_path / "data"),
        "HUBWATCH_DATABASE_URL": db_url,
        "HUBWATCH_LOG_LEVEL": "DEBUG",
        "HUBWATCH_WEBHOOK_ALLOW_HTTP": "true",
        "HUBWATCH_WEBHOOK_ALLOWED_NETWORKS": json.dumps(LOOPBACK),
        "COLUMNS": "200",
    }


def run(env: dict[str, str], *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["subscriptions", *args], env=env)
    return result.exit_code, result.stdout, result.stderr


def add(env: dict[str, str], *args: str) -> tuple[int, str]:
    """Add a subscription; its id and secret from the two lines `add` prints."""
    code, stdout, stderr = run(env, "add", *args)
    assert code == 0, stderr
    found = re.fullmatch(r"id: +(\d+)\nsecret: (whsec_\S+)\n", stdout)
    assert found, stdout
    return int(found[1]), found[2]


def test_add_prints_the_secret_once_and_stores_the_filters(
    env: dict[str, str], store: SqlStore
) -> None:
    fill(store)
    code, stdout, stderr = run(
        env, "add", REPO.repo_id, URL, "--kind", "card.", "--kind", "generation.stop_tokens",
        "--severity", "behavior",
    )  # fmt: skip
    assert code == 0, stderr
    sub_id, secret = int(stdout.split()[1]), stdout.split()[3]
    stored = store.subscription(sub_id)
    assert stored.secret == secret and secret.startswith("whsec_")
    assert (stored.repo_id, stored.org, stored.url) == (REPO.repo_id, None, URL)
    assert stored.kinds == ("card.", "generation.stop_tokens")
    assert stored.min_severity is Severity.BEHAVIOR
    assert "shown only this once" in stderr and secret not in stderr


def test_add_json_holds_the_secret(env: dict[str, str], store: SqlStore) -> None:
    fill(store)
    code, stdout, _ = run(env, "add", REPO.repo_id, URL, "--json")
    created = json.loads(stdout)
    assert code == 0 and created["secret"] == store.subscription(created["id"]).secret


def test_list_never_shows_the_secret(env: dict[str, str], store: SqlStore) -> None:
    fill(store)
    sub_id, secret = add(env, REPO.repo_id, URL, "--kind", "card.")
    code, table, stderr = run(env, "list")
    assert code == 0 and secret not in table + stderr and "whsec_" not in table
    assert re.search(rf"{sub_id} .*{REPO.repo_id} .*{URL} .*card\. .*all .*enabled", table)
    code, listed, _ = run(env, "list", "--json")
    [shown] = json.loads(listed)
    assert "whsec_" not in listed
    assert set(shown) == set(SubscriptionPublic.model_fields)  # what the API lists
    assert (shown["id"], shown["kinds"], shown["enabled"]) == (sub_id, ["card."], True)


LIST_HINT = "`hubwatch subscriptions list` shows them"


def test_remove_deletes_the_subscription(env: dict[str, str], store: SqlStore) -> None:
    fill(store)
    sub_id, _ = add(env, REPO.repo_id, URL)
    code, _, stderr = run(env, "remove", str(sub_id))
    assert (code, stderr) == (0, f"removed subscription {sub_id}\n")
    assert store.subscriptions() == []
    assert run(env, "remove", str(sub_id)) == (
        EXIT_NOT_FOUND,
        "",
        f"error: no subscription {sub_id}: {LIST_HINT}\n",
    )


def test_enable_delivers_to_a_disabled_subscription_again(
    env: dict[str, str], store: SqlStore
) -> None:
    fill(store)
    sub_id, _ = add(env, REPO.repo_id, URL)
    store.disable_subscription(sub_id, "undelivered for three days")
    assert "disabled: undelivered for three days" in run(env, "list")[1]
    code, _, stderr = run(env, "enable", str(sub_id))
    assert (code, stderr) == (0, f"subscription {sub_id} enabled\n")
    enabled = store.subscription(sub_id)
    assert (enabled.enabled, enabled.disabled_reason) == (True, None)


@pytest.mark.parametrize("command", ["remove", "deliveries", "enable"])
def test_unknown_id_is_exit_3(env: dict[str, str], store: SqlStore, command: str) -> None:
    expected = f"error: no subscription 42: {LIST_HINT}\n"
    assert run(env, command, "42") == (EXIT_NOT_FOUND, "", expected)


@pytest.mark.parametrize("sub_id", ["0", "-1", str(2**31), "x"])
def test_out_of_range_id_is_a_usage_error(env: dict[str, str], sub_id: str) -> None:
    assert run(env, "remove", sub_id)[0] == EXIT_USAGE


def test_untracked_repo_is_exit_3(env: dict[str, str], store: SqlStore) -> None:
    code, stdout, stderr = run(env, "add", "org/never", URL)
    hint = "run `hubwatch track org/never` first"
    assert (code, stdout, stderr) == (
        EXIT_NOT_FOUND,
        "",
        f"error: org/never is not tracked: {hint}\n",
    )
    assert store.subscriptions() == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["../x", URL], "error: repo id '../x'"),
        (["org/model", URL, "--kind", "Not A Kind"], "error: 'Not A Kind' is not a change kind"),
        (["org/model", "http://10.0.0.1/h"], "error: webhook host '10.0.0.1' resolves to private"),
    ],
)
def test_bad_subscriptions_are_exit_2(
    env: dict[str, str], store: SqlStore, args: list[str], message: str
) -> None:
    fill(store)
    code, _, stderr = run(env, "add", *args)
    assert code == EXIT_USAGE and stderr.startswith(message) and stderr.count("\n") == 1
    assert store.subscriptions() == []


@pytest.mark.parametrize(
    "url", ["file:///etc/passwd", "https://169.254.169.254/", "http://user:pw@127.0.0.1:9/"]
)
def test_refused_urls_say_what_the_api_says(env: dict[str, str], store: SqlStore, url: str) -> None:
    fill(store)
    settings = Settings(
        api_token=SecretStr("t"), webhook_allow_http=True, webhook_allowed_networks=LOOPBACK
    )
    api = InProcess(create_app(store, settings), token="t")
    answer = api.post("/api/v1/subscriptions", json={"url": url, "repo_id": REPO.repo_id})
    assert answer.status_code == 422
    assert run(env, "add", REPO.repo_id, url) == (
        EXIT_USAGE,
        "",
        f"error: {answer.json()['detail']}\n",
    )


def test_a_subscription_made_in_the_cli_gets_a_signed_delivery(
    env: dict[str, str], store: SqlStore
) -> None:
    shas = fill(store)
    with WebhookReceiver() as receiver:
        sub_id, secret = add(env, REPO.repo_id, receiver.url)
        WebhookNotifier(store).enqueue_revision(REPO.repo_id, shas[1])
        urls = UrlPolicy(allow_http=True, allowed_networks=parse_networks(LOOPBACK))
        with httpx2.Client(timeout=5) as client:
            WebhookDeliverer(store, client, urls=urls).deliver_due()
        [received] = receiver.accepted()
    payload = Webhook(secret).verify(received.body, received.headers)
    assert payload["data"]["sha"] == shas[1]
    code, table, _ = run(env, "deliveries", str(sub_id))
    assert code == 0 and re.search(r"revision\.changed .*msg_\w+ .*1 .*204 .*delivered", table)
    code, logged, _ = run(env, "deliveries", str(sub_id), "--json")
    [attempt] = json.loads(logged)
    assert (attempt["status_code"], attempt["state"]) == (204, MessageState.DELIVERED.value)
    assert attempt["message_id"] == received.headers["webhook-id"]
